// Package crashdump reads and writes Cortex-M crash dumps: the registers,
// the fault status registers and the memory of a crashed device, plus,
// for dumps made by the emulator, the true call stack.
//
// The native format is faultline.dump/1, a JSON manifest with memory in
// region files next to it or inline as hex (design.md, "Native dump format").
// Load and Parse detect the format from the content; importers for field
// formats (CrashCatcher, Zephyr coredump, Memfault, cortex-m.md section 7)
// join the ordered list that Formats returns.
//
// A dump is untrusted input. Parsing never panics, every size is bounded
// (MaxManifestSize, MaxRegionSize, MaxTotalSize), region files must lie
// inside the manifest's directory, and every error is a *FormatError naming
// the file, the field or byte offset, and what was expected.
package crashdump

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// Size limits that keep the memory a dump can make faultline allocate
// bounded.
const (
	MaxManifestSize = 64 << 20  // the dump file itself (JSON manifest, or a whole binary dump)
	MaxRegionSize   = 512 << 20 // one memory region
	MaxTotalSize    = 1 << 30   // memory read for one dump (region files read, not mapped); LoadOptions.MaxMemory lowers it
)

// FormatNative is the Format name of the native JSON dump.
const FormatNative = "faultline.dump/1"

// Dump is a crash dump: what the device (or the emulator) recorded at the
// fault.
type Dump struct {
	Path   string // the file it was read from, for messages
	Format string // FormatNative, FormatCrashCatcher, FormatZephyr, FormatMemfault, FormatRaw, ...
	CPU    string // "cortex-m4", ...; "" if the dump does not say
	// FPU says whether the core has a floating-point unit, when the dump
	// records it apart from the CPU's name (a probe-rs coredump's
	// fpu_support); nil otherwise.
	FPU *bool
	// BuildID is the GNU build ID of the firmware that crashed, as
	// lower-case hex, when the dump records it (the native "build_id",
	// a Memfault build-id block, an ELF core's note); "" otherwise.
	BuildID string
	Regs    unwinders.Registers // registers the dump does not hold are unknown
	// Fault holds the SCB fault registers: those the memory regions hold at
	// their architectural addresses, overridden by the values the dump
	// states explicitly (the native "fault" object).
	Fault fault.SCB
	// Memory holds the regions in the order the dump lists them. Each Name
	// says where the bytes came from: the region file's name as the
	// manifest gives it, or "hex@0x20000000" for inline hex.
	Memory []unwinders.Region
	// SymbolRegions are memory whose address is a firmware symbol's (a
	// Zephyr coredump's threads block); PlaceSymbolRegions moves them into
	// Memory once the ELF is known.
	SymbolRegions []SymbolRegion
	Truth         *Truth // the true call stack, nil if the dump has none
	// Lockup is set when the dump records that the core locked up (the
	// native "lockup"): Regs are then the state at the faulting
	// instruction, no handler ran.
	Lockup *fault.LockupInfo
	// FatalReason is the reason a Zephyr coredump's header gives
	// (k_fatal_error_reason: K_ERR_CPU_EXCEPTION 0 .. K_ERR_KERNEL_PANIC
	// 4, larger values architecture specific); nil for other formats.
	FatalReason *uint32
	// Threads are the threads the dump itself lists (an ELF core's
	// NT_PRSTATUS notes), the crashing one first with Regs as its
	// registers; nil when the dump lists one thread or none. An RTOS's
	// threads are found in memory instead (package rtos).
	Threads []Thread
	// Warnings say what an importer noticed that does not stop the dump
	// from being used: a CrashCatcher stack-overflow trailer, registers a
	// Zephyr dump did not collect, bytes after a Memfault dump's end.
	// The native format does not store them.
	Warnings []string
	// Capture says how `faultline capture` took the dump from a live
	// target (written to the native manifest's "capture" object; readers
	// ignore it). Nil for other dumps.
	Capture *CaptureInfo

	unmap []func() error // Close: the mapped region files
}

// CaptureInfo is the native manifest's "capture" object: where and when
// `faultline capture` read the dump, and what it could not read.
type CaptureInfo struct {
	Remote   string        `json:"remote"`             // --remote as given
	Server   string        `json:"server,omitempty"`   // the server's identity, as far as it says
	Time     string        `json:"time"`               // RFC 3339, UTC
	Stop     string        `json:"stop,omitempty"`     // the stop reply the registers were read at
	Holes    []CaptureHole `json:"holes,omitempty"`    // memory the server would not read
	Warnings []string      `json:"warnings,omitempty"` // what the capture noticed
}

// CaptureHole is memory a capture asked for and the server refused.
type CaptureHole struct {
	Address string `json:"address"`
	Size    int    `json:"size"`
	Reply   string `json:"reply"`
}

// Truth is the ground-truth call stack of an emulated crash (the emulator's
// shadow call stack), used to score unwinders.
type Truth struct {
	Source string       // what produced it: "emulator-shadow-stack", "qemu-gdb", ...
	Frames []TruthFrame // faulting frame first
	Stop   string       // why the true stack ends there, "" if not said
	// Threads are the true stacks of the other threads of an RTOS (those
	// switched out when the crash happened); the current thread's is
	// Frames. Nil when the producer gives none.
	Threads []ThreadTruth
}

// ThreadTruth is the true call stack of one switched-out thread. A thread
// found in the dump (package rtos) is matched to it by its saved context:
// the SP that context restores, which is the hardware exception frame's
// address plus the frame.
type ThreadTruth struct {
	Frame  uint32       // address of the hardware exception frame the thread was switched out with
	SP     uint32       // the thread's SP once that frame is unstacked
	HasSP  bool         // SP is known
	Frames []TruthFrame // innermost first, ending at the thread's entry function
}

// Thread is a thread a dump lists with its registers.
type Thread struct {
	ID   uint32 // the dump's thread id (pr_pid); 0 when it gives none
	Name string // "" when the dump names none
	Regs unwinders.Registers
}

// TruthFrame is one frame of a Truth.
type TruthFrame struct {
	PC       uint32
	HasPC    bool
	Function string
	Kind     string // "" for a normal frame, or "exception"
	File     string
	Line     int
}

// Profile returns the architecture profile of the dump's CPU.
func (d *Dump) Profile() unwinders.Profile { return unwinders.ProfileOf(d.CPU) }

// Image returns the dump's memory regions as one layer of a memory image.
// It fails when regions overlap or run past 4 GiB (Parse already rejects
// such dumps; a Dump built by hand may have them).
func (d *Dump) Image() (*unwinders.Image, error) {
	im := new(unwinders.Image)
	if err := im.AddLayer(d.Memory...); err != nil {
		return nil, fmt.Errorf("%s: %w", d.Path, err)
	}
	return im, nil
}

// Format is one dump format that Load and Parse can read.
type Format struct {
	Name string // "faultline.dump/1"
	// Match reports whether data looks like this format. It must be cheap
	// and must accept broken instances of the format too, so that Parse
	// can say what is wrong with them.
	Match func(data []byte) bool
	// Parse decodes a dump. name is used in messages; readFile reads a
	// file relative to the dump's directory (nil when there is none).
	Parse func(data []byte, name string, readFile func(rel string) ([]byte, error)) (*Dump, error)
}

// Formats returns the formats Detect tries, in order: more specific
// formats come first. It returns a new slice on each call.
//
// Binary formats with a magic number come first, then the native JSON
// manifest (it starts with '{'), then the text forms, which are found
// inside arbitrary console logs.
func Formats() []Format {
	return []Format{
		{Name: FormatCrashCatcher, Match: matchCrashCatcher, Parse: parseCrashCatcher},
		{Name: FormatZephyr, Match: matchZephyr, Parse: parseZephyr},
		{Name: FormatMemfault, Match: matchMemfault, Parse: parseMemfault},
		{Name: FormatELFCore, Match: matchELFCore, Parse: parseELFCore},
		{Name: FormatProbeRS, Match: matchProbeRS, Parse: parseProbeRS},
		{Name: FormatNative, Match: matchNative, Parse: parseNative},
		{Name: FormatCrashCatcherHex, Match: matchCrashCatcherHex, Parse: parseCrashCatcherHex},
		{Name: FormatZephyrLog, Match: matchZephyrLog, Parse: parseZephyrLog},
	}
}

// Detect returns the first format in Formats whose Match accepts data.
func Detect(data []byte) (Format, bool) {
	for _, f := range Formats() {
		if f.Match(data) {
			return f, true
		}
	}
	return Format{}, false
}

// Parse decodes a dump held in data, detecting its format from the content.
// name names the dump in messages and in Dump.Path. readFile reads a region
// file given its path relative to the dump's directory, as written in the
// manifest (slash-separated, already checked to stay inside the directory);
// it may be nil when the dump has no region files. Errors are *FormatError.
func Parse(data []byte, name string, readFile func(rel string) ([]byte, error)) (*Dump, error) {
	if len(data) == 0 {
		return nil, &FormatError{File: name, Offset: -1, Msg: "empty file", Err: ErrUnknownFormat}
	}
	if len(data) > MaxManifestSize {
		return nil, &FormatError{File: name, Offset: -1, Err: ErrTooLarge,
			Msg: fmt.Sprintf("%d bytes: larger than the %d byte limit", len(data), MaxManifestSize)}
	}
	f, ok := Detect(data)
	if !ok {
		n := min(len(data), 8)
		return nil, &FormatError{File: name, Offset: -1, Err: ErrUnknownFormat,
			Msg: fmt.Sprintf("unknown dump format (starts with % x): want a %s JSON manifest, a CrashCatcher dump (binary or hex), a Zephyr coredump (binary or #CD: log), a Memfault CORE dump, an ARM ELF core file or a probe-rs coredump", data[:n], FormatNative)}
	}
	return f.Parse(data, name, readFile)
}

// Load reads the dump at path and detects its format from the content,
// with the default LoadOptions. See LoadWith.
func Load(path string) (*Dump, error) { return LoadWith(path, LoadOptions{}) }

// LoadOptions bound the memory Load may take for one dump.
type LoadOptions struct {
	// MaxMemory bounds the memory one dump may take while it is decoded:
	// the dump file counted DecodeFactor times (it is read whole, then
	// parsed), plus the region files that are read rather than mapped.
	// Region files of MapThreshold bytes or more are mapped (on Unix):
	// they cost only the pages the analysis touches and do not count.
	// 0 means MaxTotalSize.
	MaxMemory int64
	// Data, when not nil, is the content of the dump file as the caller
	// has just read it (a batch reads every manifest to list the dumps):
	// LoadWith decodes it instead of reading the file again, with the
	// same limits. Region files are read relative to the path as always.
	Data []byte
	// Buffers, when not nil, are where region files are read: the dump
	// gives them back when it is closed (see Buffers).
	Buffers *Buffers
}

const (
	// DecodeFactor is how many times its size decoding a dump file is
	// counted against LoadOptions.MaxMemory: the bytes read, the values
	// decoded from them (hex regions) and the parser's own state.
	DecodeFactor = 3
	// MapThreshold is the size from which region files are mapped
	// instead of read.
	MapThreshold = 256 << 10
)

// LoadWith reads the dump at path and detects its format from the content.
// Region files are opened relative to the manifest's directory (the
// directory of its target when path is a symbolic link) through an os.Root,
// so neither the manifest nor a symbolic link can reach outside it; they
// must be regular files. Large region files are mapped read-only rather
// than read, so that only the pages the analysis reads are ever loaded;
// call Dump.Close to unmap them when done. (A region file truncated by
// another process while it is mapped makes reads of the lost pages fault:
// dump directories are not expected to change under the reader.)
//
// Errors are *FormatError; errors.Is works for fs.ErrNotExist,
// ErrTooLarge and ErrUnknownFormat.
func LoadWith(path string, opt LoadOptions) (*Dump, error) {
	limit := opt.MaxMemory
	if limit <= 0 {
		limit = MaxTotalSize
	}
	tooLarge := func(size int64) error {
		return &FormatError{File: path, Offset: -1, Err: ErrTooLarge,
			Msg: fmt.Sprintf("%d bytes: decoding it needs about %d bytes of memory, more than the per-dump limit of %s", size, size*DecodeFactor, FormatBytes(limit))}
	}
	data := opt.Data
	if data != nil && int64(len(data)) > MaxManifestSize {
		data = nil // what reading it says
	}
	if data != nil {
		if int64(len(data))*DecodeFactor > limit {
			return nil, tooLarge(int64(len(data)))
		}
	} else {
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size()*DecodeFactor > limit {
			return nil, tooLarge(st.Size())
		}
		var err error
		data, err = readLimited(path, MaxManifestSize,
			func() (fs.FileInfo, error) { return os.Stat(path) },
			func() (*os.File, error) { return os.OpenFile(path, openRead, 0) })
		if err != nil {
			return nil, &FormatError{File: path, Offset: -1, Msg: "cannot read: " + fsReason(err), Err: err}
		}
	}
	// Region files lie beside the manifest itself: through a symbolic
	// link to it, beside the link's target.
	dir := filepath.Dir(path)
	if st, err := os.Lstat(path); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			dir = filepath.Dir(real)
		}
	}
	var (
		root    *os.Root
		rootErr error
		used    = int64(len(data)) * DecodeFactor
		unmaps  []func() error
	)
	defer func() {
		if root != nil {
			root.Close()
		}
	}()
	manifest, _ := os.Stat(path)
	readFile := func(rel string) ([]byte, error) {
		if manifest != nil {
			// A manifest that names itself (or a link to itself) as a
			// region file: its JSON is no memory.
			if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel))); err == nil && os.SameFile(st, manifest) {
				return nil, &fs.PathError{Op: "read", Path: rel, Err: errRegionIsManifest}
			}
		}
		if b, unmap, ok := readRegionFast(dir, rel, limit-used, opt.Buffers); ok {
			switch {
			case unmap != nil:
				unmaps = append(unmaps, unmap)
			case opt.Buffers != nil:
				unmaps = append(unmaps, func() error { opt.Buffers.put(b); return nil })
				fallthrough
			default:
				used += int64(len(b))
			}
			return b, nil
		}
		if root == nil && rootErr == nil {
			root, rootErr = os.OpenRoot(dir)
		}
		if rootErr != nil {
			return nil, rootErr
		}
		b, unmap, err := readRegion(root, filepath.FromSlash(rel), rel, limit-used, limit)
		if unmap != nil {
			unmaps = append(unmaps, unmap)
		} else {
			used += int64(len(b))
		}
		return b, err
	}
	d, err := Parse(data, path, readFile)
	if err != nil {
		for _, u := range unmaps {
			u()
		}
		return nil, err
	}
	d.unmap = unmaps
	return d, nil
}

// errRegionIsManifest: a region file that is the manifest itself.
var errRegionIsManifest = errors.New("it is the manifest itself, not a memory image")

// Close releases the region files Load mapped, and gives the buffers it
// read region files into back to LoadOptions.Buffers; the dump's Memory
// must not be used afterwards (it is set to nil). A dump that maps nothing
// and was loaded without Buffers has nothing to release. Close is not safe for concurrent use with readers
// of the dump's memory.
func (d *Dump) Close() error {
	if d == nil || len(d.unmap) == 0 {
		return nil
	}
	var first error
	for _, u := range d.unmap {
		if err := u(); err != nil && first == nil {
			first = err
		}
	}
	d.unmap = nil
	d.Memory = nil
	return first
}

// readRegion reads or maps a region file: a regular file of at most
// MaxRegionSize bytes. Files of MapThreshold bytes or more are mapped
// when the platform allows it (unmap is then non-nil); a file that is read
// may hold at most left bytes, the rest of the per-dump limit.
func readRegion(root *os.Root, name, rel string, left, limit int64) (data []byte, unmap func() error, err error) {
	check := func(st fs.FileInfo) error {
		if !st.Mode().IsRegular() {
			return &fs.PathError{Op: "read", Path: rel, Err: errNotRegular}
		}
		if st.Size() > MaxRegionSize {
			return &fs.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: %d bytes, more than the %d byte region limit", ErrTooLarge, st.Size(), MaxRegionSize)}
		}
		return nil
	}
	st, err := root.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := check(st); err != nil {
		return nil, nil, err
	}
	f, err := root.OpenFile(name, openRead, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, nil, err
	}
	if err := check(st); err != nil {
		return nil, nil, err
	}
	if st.Size() >= MapThreshold {
		if b, unmap, ok := mapFile(f, st.Size()); ok {
			return b, unmap, nil
		}
	}
	if st.Size() > left {
		return nil, nil, &fs.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: %d bytes, more than the %s left of the per-dump limit of %s", ErrTooLarge, st.Size(), FormatBytes(max(left, 0)), FormatBytes(limit))}
	}
	b, err := readSized(f, st.Size(), min(left, MaxRegionSize))
	if err != nil {
		return nil, nil, err
	}
	if int64(len(b)) > min(left, MaxRegionSize) {
		return nil, nil, &fs.PathError{Op: "read", Path: rel, Err: fmt.Errorf("%w: grew to more than %d bytes while read", ErrTooLarge, len(b)-1)}
	}
	return b, nil, nil
}

// FormatBytes writes a byte count for people: "512 MiB", "1.5 GiB",
// "4096 bytes" (exact below 1 MiB; with one decimal where needed above).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return trimUnit(float64(n)/(1<<30), "GiB")
	case n >= 1<<20:
		return trimUnit(float64(n)/(1<<20), "MiB")
	}
	return fmt.Sprintf("%d bytes", n)
}

func trimUnit(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + " " + unit
}

// readLimited reads a regular file of at most limit bytes. It checks the
// file with stat before opening it, so that a FIFO or device cannot block
// or feed the reader forever, and again after. The error says what is
// wrong; callers strip the path with fsReason and name the file themselves.
func readLimited(name string, limit int64, stat func() (fs.FileInfo, error), open func() (*os.File, error)) ([]byte, error) {
	check := func(st fs.FileInfo) error {
		if !st.Mode().IsRegular() {
			return &fs.PathError{Op: "read", Path: name, Err: errNotRegular}
		}
		if st.Size() > limit {
			return &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, st.Size(), limit)}
		}
		return nil
	}
	st, err := stat()
	if err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	f, err := open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := check(st); err != nil {
		return nil, err
	}
	b, err := readSized(f, st.Size(), limit)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)}
	}
	return b, nil
}

// readSized reads r to its end, but no more than limit+1 bytes, like
// io.ReadAll(io.LimitReader(r, limit+1)), into one buffer of size bytes
// (what stat said, at most limit) that grows only if r holds more.
func readSized(r io.Reader, size, limit int64) ([]byte, error) {
	b := make([]byte, 0, max(min(size, limit), 0))
	left := limit + 1
	for {
		if len(b) == cap(b) {
			// Full: the file has grown since stat, or this is the read
			// that sees the end. Probe before growing.
			var probe [512]byte
			n, err := r.Read(probe[:min(int64(len(probe)), left)])
			b = append(b, probe[:n]...)
			left -= int64(n)
			if err == io.EOF || left <= 0 {
				return b, nil
			}
			if err != nil {
				return b, err
			}
			continue
		}
		n, err := r.Read(b[len(b):min(int64(cap(b)), int64(len(b))+left)])
		b = b[:len(b)+n]
		left -= int64(n)
		if err == io.EOF || left <= 0 {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

var errNotRegular = errors.New("not a regular file")

// fsReason is the reason of a file system error without the path, which
// the caller's message names already.
func fsReason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// NormalizeBuildID checks that s is a build ID written as hex digits (an
// even number, 2 to 128, any case, optionally with a "0x" prefix) and
// returns it in lower case.
func NormalizeBuildID(s string) (string, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if len(s) < 2 || len(s) > 128 || len(s)%2 != 0 {
		return "", false
	}
	if _, err := hex.DecodeString(s); err != nil {
		return "", false
	}
	return strings.ToLower(s), true
}
