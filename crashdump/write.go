package crashdump

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

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
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory: give the manifest's file name, such as %s", path, filepath.Join(path, "crash.json"))
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "dump"
	}
	manifest, files, err := d.encode(base, MaxHexRegion)
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	outs := make([]outFile, 0, len(files)+1)
	for _, f := range files {
		outs = append(outs, outFile{filepath.Join(dir, f.name), f.data})
	}
	outs = append(outs, outFile{path, manifest}) // last: a reader never sees a manifest without its regions
	return writeAllAtomic(outs)
}

// WriteSelfContained writes d as one faultline.dump/1 manifest that holds
// every region inline as hex (no region files), for `-o -`. It fails like
// Write for a dump that Load would reject.
func (d *Dump) WriteSelfContained(w io.Writer) error {
	manifest, _, err := d.encode("", math.MaxInt)
	if err != nil {
		return err
	}
	_, err = w.Write(manifest)
	return err
}

// OutputFiles returns the files Write(path) would create or replace: the
// manifest and its region files, so that a caller can refuse to overwrite
// its own input.
func (d *Dump) OutputFiles(path string) []string {
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "dump"
	}
	out := []string{path}
	for _, r := range d.Memory {
		if len(r.Data) > MaxHexRegion {
			out = append(out, filepath.Join(filepath.Dir(path), regionFileName(base, r.Addr)))
		}
	}
	return out
}

// InputFiles returns the files d was read from: the dump and, for a
// manifest Load read, its region files.
func (d *Dump) InputFiles() []string {
	out := []string{d.Path}
	if d.Format == FormatNative {
		for _, r := range d.Memory {
			if !strings.HasPrefix(r.Name, "hex@") {
				out = append(out, filepath.Join(filepath.Dir(d.Path), filepath.FromSlash(r.Name)))
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
func (d *Dump) encode(base string, maxHex int) ([]byte, []outFile, error) {
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
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), files, nil
}

// writeAllAtomic writes each file to a temporary file in its directory,
// then renames them into place in order. On an error nothing is renamed
// that was not already, the temporary files are removed, and the error
// names the file that failed and why (never the temporary name).
func writeAllAtomic(files []outFile) error {
	tmps := make([]string, 0, len(files))
	defer func() {
		for _, t := range tmps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	for _, f := range files {
		tmp, err := writeTemp(f.name, f.data)
		if err != nil {
			return fmt.Errorf("cannot write %s: %s", f.name, fsReason(err))
		}
		tmps = append(tmps, tmp)
	}
	for i, f := range files {
		if st, err := os.Stat(f.name); err == nil && st.IsDir() {
			return fmt.Errorf("cannot write %s: it is a directory", f.name)
		}
		if err := os.Rename(tmps[i], f.name); err != nil {
			var le *os.LinkError
			if errors.As(err, &le) {
				err = le.Err
			}
			return fmt.Errorf("cannot write %s: %s", f.name, fsReason(err))
		}
		tmps[i] = ""
	}
	return nil
}

// WriteFile writes data to path atomically: through a temporary file in
// the same directory, renamed into place. The error names path, never the
// temporary file.
func WriteFile(path string, data []byte) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("cannot write %s: it is a directory: give a file name", path)
	}
	return writeAllAtomic([]outFile{{path, data}})
}

// writeTemp writes data to a new temporary file next to path and returns
// its name.
func writeTemp(path string, data []byte) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

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
