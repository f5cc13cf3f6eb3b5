package crashdump

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/internal/outfile"
	"github.com/faultline-dev/faultline/unwinders"
)

// MaxHexRegion is the largest region Write stores inline as hex in the
// manifest; larger regions go to files of their own.
const MaxHexRegion = 1024

// Write stores d as a faultline.dump/1 manifest at path. Regions of up to
// MaxHexRegion bytes (the SCB block, say) are written inline as hex; each
// larger region goes to a file next to the manifest named
// <base>.<address as 8 hex digits>.bin, where <base> is the manifest's
// name without its extension ("crash.json" -> "crash.20000000.bin"), and
// its "size" is recorded. The output is deterministic: registers in
// register order, fault registers in fault.Names order, regions in d's
// order, every number a "0x%08x" string. Each file is written to a
// temporary file and renamed into place.
//
// Loading the result gives back d, except that Path is the new path,
// Format is faultline.dump/1 and region names follow the scheme above.
// Write fails, without writing anything, for a dump that Load would
// reject: empty, overlapping or oversized regions, a truth frame kind other
// than "" or "exception", or a negative line.
func (d *Dump) Write(path string) error {
	t, err := outfile.Resolve(path)
	if err != nil {
		if errors.Is(err, outfile.ErrRefused) && strings.Contains(err.Error(), "is a directory") {
			return outfile.Refusef("cannot write %s: it is a directory: give the manifest's file name, such as %s", path, filepath.Join(path, "crash.json"))
		}
		return err
	}
	if !t.SideFiles() {
		// A FIFO or a device: no region files beside it, one
		// self-contained manifest through it.
		return outfile.WriteAll([]outfile.File{{Target: t, Write: d.WriteSelfContained}})
	}
	manifest, files, err := d.encode(manifestBase(t.Path), MaxHexRegion, nil)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	outs := make([]outfile.File, 0, len(files)+1)
	for _, f := range files {
		rt, err := outfile.Resolve(filepath.Join(t.Dir(), f.name))
		if err != nil {
			return err
		}
		outs = append(outs, outfile.File{Target: rt, Write: writeBytes(f.data)})
	}
	outs = append(outs, outfile.File{Target: t, Write: writeBytes(manifest)}) // last: a reader never sees a manifest without its regions
	return outfile.WriteAll(outs)
}

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	}
}

// manifestBase is the base of a manifest's region file names: its file
// name without the extension.
func manifestBase(path string) string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "dump"
	}
	return base
}

// MaxSelfContained is the largest self-contained manifest
// WriteSelfContained writes: the largest manifest Load reads back.
const MaxSelfContained = MaxManifestSize

// WriteSelfContained writes d as one faultline.dump/1 manifest that holds
// every region inline as hex (no region files), for `-o -`. It fails like
// Write for a dump that Load would reject, and refuses (before writing
// anything) a manifest larger than MaxSelfContained, which Load would not
// read back. The regions' hex is streamed to w, never held in memory.
func (d *Dump) WriteSelfContained(w io.Writer) error {
	var nonce [8]byte
	rand.Read(nonce[:])
	ph := func(i int) string { return fmt.Sprintf("\ue000%x:%d\ue000", nonce, i) }
	skel, _, err := d.encode("", math.MaxInt, ph)
	if err != nil {
		return err
	}
	size := int64(len(skel))
	for i, r := range d.Memory {
		size += 2*int64(len(r.Data)) - int64(len(ph(i)))
	}
	if size > MaxSelfContained {
		return outfile.Refusef("a self-contained manifest of this dump (every region inline as hex) would be %d bytes, more than the %d bytes faultline reads back: write it to a file instead (its regions then go to files beside it) or as --to elfcore", size, int64(MaxSelfContained))
	}
	pos := 0
	buf := make([]byte, 64<<10)
	for i, r := range d.Memory {
		p := ph(i)
		k := bytes.Index(skel[pos:], []byte(p))
		if k < 0 {
			return fmt.Errorf("internal error: region %d missing from the manifest", i)
		}
		if _, err := w.Write(skel[pos : pos+k]); err != nil {
			return err
		}
		for data := r.Data; len(data) > 0; {
			n := min(len(data), len(buf)/2)
			hex.Encode(buf, data[:n])
			if _, err := w.Write(buf[:2*n]); err != nil {
				return err
			}
			data = data[n:]
		}
		pos += k + len(p)
	}
	_, err = w.Write(skel[pos:])
	return err
}

// OutputFiles returns the files Write(path) would create or replace: the
// manifest and its region files (beside the target of a symbolic link),
// so that a caller can refuse to overwrite its own input.
func (d *Dump) OutputFiles(path string) []string {
	out := []string{path}
	t, err := outfile.Resolve(path)
	if err != nil || !t.SideFiles() {
		return out
	}
	base := manifestBase(t.Path)
	for _, r := range d.Memory {
		if len(r.Data) > MaxHexRegion {
			out = append(out, filepath.Join(t.Dir(), regionFileName(base, r.Addr)))
		}
	}
	return out
}

// InputFiles returns the files d was read from: the dump and, for a
// manifest Load read, its region files.
func (d *Dump) InputFiles() []string {
	out := []string{d.Path}
	if d.Format == FormatNative {
		dir := filepath.Dir(d.Path)
		if real, err := filepath.EvalSymlinks(d.Path); err == nil {
			dir = filepath.Dir(real) // as Load resolves them
		}
		for _, r := range d.Memory {
			if !strings.HasPrefix(r.Name, "hex@") {
				out = append(out, filepath.Join(dir, filepath.FromSlash(r.Name)))
			}
		}
	}
	return out
}

func regionFileName(base string, addr uint32) string { return fmt.Sprintf("%s.%08x.bin", base, addr) }

// outFile is a region file that Write creates.
type outFile struct {
	name string
	data []byte
}

// Wire types of the manifest, in the order Write emits the keys.
type (
	manifestJSON struct {
		Schema    string       `json:"schema"`
		CPU       string       `json:"cpu,omitempty"`
		BuildID   string       `json:"build_id,omitempty"`
		Registers hexObject    `json:"registers"`
		Fault     hexObject    `json:"fault,omitempty"`
		Lockup    *lockupJSON  `json:"lockup,omitempty"`
		Memory    []memoryJSON `json:"memory"`
		Truth     *truthJSON   `json:"truth,omitempty"`
		Capture   *CaptureInfo `json:"capture,omitempty"`
	}
	lockupJSON struct {
		Fault  string `json:"fault,omitempty"`
		PC     string `json:"pc,omitempty"`
		Detail string `json:"detail,omitempty"`
	}
	memoryJSON struct {
		Address string `json:"address"`
		File    string `json:"file,omitempty"`
		Size    int    `json:"size,omitempty"`
		Hex     string `json:"hex,omitempty"`
	}
	truthJSON struct {
		Source  string            `json:"source"`
		Frames  []truthFrameJSON  `json:"frames"`
		Stop    string            `json:"stop,omitempty"`
		Threads []threadTruthJSON `json:"threads,omitempty"`
	}
	threadTruthJSON struct {
		Frame  string           `json:"frame"`
		SP     string           `json:"sp,omitempty"`
		Frames []truthFrameJSON `json:"frames"`
	}
	truthFrameJSON struct {
		PC       string `json:"pc,omitempty"`
		Function string `json:"function,omitempty"`
		Kind     string `json:"kind,omitempty"`
		File     string `json:"file,omitempty"`
		Line     int    `json:"line,omitempty"`
	}
)

// hexObject is a JSON object of "0x%08x" values with its keys in order.
type hexObject []hexPair

type hexPair struct {
	key string
	val uint32
}

// MarshalJSON writes the pairs in order.
func (h hexObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range h {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:\"0x%08x\"", p.key, p.val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func hex32(v uint32) string { return fmt.Sprintf("0x%08x", v) }

// encode builds the manifest and the region files.
// Regions of up to maxHex bytes are inline hex.
// With ph, each region's hex is ph(index) instead (WriteSelfContained
// streams the hex in its place).
func (d *Dump) encode(base string, maxHex int, ph func(int) string) ([]byte, []outFile, error) {
	m := manifestJSON{Schema: FormatNative, CPU: d.CPU, BuildID: d.BuildID, Registers: hexObject{}, Memory: []memoryJSON{}}
	d.Regs.Each(func(r unwinders.Reg, v uint32) {
		m.Registers = append(m.Registers, hexPair{r.String(), v})
	})
	d.Fault.Each(func(name string, v uint32) {
		m.Fault = append(m.Fault, hexPair{strings.ToLower(name), v})
	})
	if l := d.Lockup; l != nil {
		m.Lockup = &lockupJSON{Fault: l.Fault, Detail: l.Detail}
		if l.HasPC {
			m.Lockup.PC = hex32(l.PC)
		}
	}
	if _, err := d.Image(); err != nil {
		return nil, nil, err
	}
	var (
		files []outFile
		total int64
	)
	for i, r := range d.Memory {
		n := len(r.Data)
		total += int64(n)
		switch {
		case n == 0:
			return nil, nil, fmt.Errorf("memory[%d] (%s at 0x%08x) is empty", i, r.Name, r.Addr)
		case n > MaxRegionSize:
			return nil, nil, fmt.Errorf("memory[%d] (%s at 0x%08x) is %d bytes: %w, the limit is %d", i, r.Name, r.Addr, n, ErrTooLarge, MaxRegionSize)
		case total > MaxTotalSize:
			return nil, nil, fmt.Errorf("memory is more than %d bytes: %w", MaxTotalSize, ErrTooLarge)
		case ph != nil:
			m.Memory = append(m.Memory, memoryJSON{Address: hex32(r.Addr), Hex: ph(i)})
		case n <= maxHex:
			m.Memory = append(m.Memory, memoryJSON{Address: hex32(r.Addr), Hex: hex.EncodeToString(r.Data)})
		default:
			name := regionFileName(base, r.Addr)
			files = append(files, outFile{name, r.Data})
			m.Memory = append(m.Memory, memoryJSON{Address: hex32(r.Addr), File: name, Size: n})
		}
	}
	if t := d.Truth; t != nil {
		tj := &truthJSON{Source: t.Source, Stop: t.Stop}
		var err error
		if tj.Frames, err = truthFramesJSON("truth frame", t.Frames); err != nil {
			return nil, nil, err
		}
		for i, th := range t.Threads {
			thj := threadTruthJSON{Frame: hex32(th.Frame)}
			if th.HasSP {
				thj.SP = hex32(th.SP)
			}
			if thj.Frames, err = truthFramesJSON(fmt.Sprintf("truth thread %d: frame", i), th.Frames); err != nil {
				return nil, nil, err
			}
			tj.Threads = append(tj.Threads, thj)
		}
		m.Truth = tj
	}
	m.Capture = d.Capture
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), files, nil
}

// WriteFile writes data to path with the shared output rules
// (internal/outfile): atomically for a file, through for a FIFO or a
// device.
func WriteFile(path string, data []byte) error { return outfile.WriteFile(path, data) }

// truthFramesJSON converts truth frames for the manifest; what names the
// list in errors ("truth frame").
func truthFramesJSON(what string, frames []TruthFrame) ([]truthFrameJSON, error) {
	out := []truthFrameJSON{}
	for i, f := range frames {
		if f.Kind != "" && f.Kind != "exception" {
			return nil, fmt.Errorf("%s %d: kind %q: want \"\" or \"exception\"", what, i, f.Kind)
		}
		if f.Line < 0 || f.Line > 1<<31-1 {
			return nil, fmt.Errorf("%s %d: line %d out of range", what, i, f.Line)
		}
		fj := truthFrameJSON{Function: f.Function, Kind: f.Kind, File: f.File, Line: f.Line}
		if f.HasPC {
			fj.PC = hex32(f.PC)
		}
		out = append(out, fj)
	}
	return out, nil
}
