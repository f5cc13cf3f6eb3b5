package crashdump

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	if base == "" || base == "." || base == string(filepath.Separator) {
		base = "dump"
	}
	manifest, files, err := d.encode(base)
	if err != nil {
		return fmt.Errorf("crashdump: write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	for _, f := range files {
		if err := writeAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return fmt.Errorf("crashdump: write %s: %w", path, err)
		}
	}
	if err := writeAtomic(path, manifest); err != nil {
		return fmt.Errorf("crashdump: write %s: %w", path, err)
	}
	return nil
}

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
		Registers hexObject    `json:"registers"`
		Fault     hexObject    `json:"fault,omitempty"`
		Memory    []memoryJSON `json:"memory"`
		Truth     *truthJSON   `json:"truth,omitempty"`
	}
	memoryJSON struct {
		Address string `json:"address"`
		File    string `json:"file,omitempty"`
		Size    int    `json:"size,omitempty"`
		Hex     string `json:"hex,omitempty"`
	}
	truthJSON struct {
		Source string           `json:"source"`
		Frames []truthFrameJSON `json:"frames"`
		Stop   string           `json:"stop,omitempty"`
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
func (d *Dump) encode(base string) ([]byte, []outFile, error) {
	m := manifestJSON{Schema: FormatNative, CPU: d.CPU, Registers: hexObject{}, Memory: []memoryJSON{}}
	d.Regs.Each(func(r unwinders.Reg, v uint32) {
		m.Registers = append(m.Registers, hexPair{r.String(), v})
	})
	d.Fault.Each(func(name string, v uint32) {
		m.Fault = append(m.Fault, hexPair{strings.ToLower(name), v})
	})
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
		case n <= MaxHexRegion:
			m.Memory = append(m.Memory, memoryJSON{Address: hex32(r.Addr), Hex: hex.EncodeToString(r.Data)})
		default:
			name := fmt.Sprintf("%s.%08x.bin", base, r.Addr)
			files = append(files, outFile{name, r.Data})
			m.Memory = append(m.Memory, memoryJSON{Address: hex32(r.Addr), File: name, Size: n})
		}
	}
	if t := d.Truth; t != nil {
		tj := &truthJSON{Source: t.Source, Stop: t.Stop, Frames: []truthFrameJSON{}}
		for i, f := range t.Frames {
			if f.Kind != "" && f.Kind != "exception" {
				return nil, nil, fmt.Errorf("truth frame %d: kind %q: want \"\" or \"exception\"", i, f.Kind)
			}
			if f.Line < 0 || f.Line > 1<<31-1 {
				return nil, nil, fmt.Errorf("truth frame %d: line %d out of range", i, f.Line)
			}
			fj := truthFrameJSON{Function: f.Function, Kind: f.Kind, File: f.File, Line: f.Line}
			if f.HasPC {
				fj.PC = hex32(f.PC)
			}
			tj.Frames = append(tj.Frames, fj)
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

// writeAtomic writes data to a temporary file in path's directory and
// renames it to path.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
