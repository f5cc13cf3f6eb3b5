// Package gdbtest drives the real gdb-multiarch against faultline's
// gdbserver and checks what GDB shows against the QEMU+GDB oracle fixtures
// (fixtures/qemu, cortex-m.md section 8). It is shared by the tests of
// package gdbserver (server in the test process, GDB over TCP) and of the
// CLI (GDB running `faultline gdbserver --stdio` through a pipe).
//
// How the oracle truth was made matters for the comparison (see
// fixtures/qemu/README.md and fixtures/oracle/capture.py):
//
//   - The truth ends at the outermost function (Reset_Handler, or the PSP
//     thread's entry function): capture.py cut GDB's walk at the first
//     "exception frame" whose value is not an ARMv7-M EXC_RETURN, because
//     GDB 13 takes the reset value of LR, 0xFFFFFFFF, for an exception
//     return. GDB talking to faultline does the same, so its backtrace has
//     one more frame, "<signal handler called>". On QEMU GDB then went on
//     with garbage read from above the stack; through faultline it stops
//     there for every fixture (the "frame" above the initial stack pointer
//     is outside the dump's memory, or unwinds to nothing). Compare checks
//     the truth as a prefix and allows exactly that one extra frame.
//   - For psp_thread, QEMU's gdbstub gave GDB no PSP, so capture.py
//     stitched the frames after the exception from the registers stacked
//     at PSP. faultline serves msp and psp in org.gnu.gdb.arm.m-system and
//     GDB 13 unwinds the PSP frame itself: the frames must match without
//     any stitching.
//   - For null_fnptr the faulting frame's PC is 0, which GDB names after
//     the data object at 0 (vector_table); the truth keeps function "" and
//     GDB's name in gdb_name. Either name, or "??", is accepted.
//   - capture.py ran GDB with "backtrace past-main on" and "past-entry on";
//     so does Run.
package gdbtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// GDB is the debugger the tests drive.
const GDB = "gdb-multiarch"

// Fixture is one oracle fixture.
type Fixture struct {
	Name  string // "gcc-m3-O2-udf"
	Dump  string // path of the JSON dump
	ELF   string // firmware-samples/build/<build>.elf
	Truth []TruthFrame
	Regs  map[string]uint32 // the dump's registers by name
}

// TruthFrame is one frame of the oracle's backtrace.
type TruthFrame struct {
	PC       string `json:"pc"`
	Function string `json:"function"`
	Kind     string `json:"kind"`
	GDBName  string `json:"gdb_name"`
}

// Fixtures loads every fixtures/qemu/*.json under root (the repository).
// The build is the file name up to its last '-'.
func Fixtures(root string) ([]Fixture, error) {
	paths, err := filepath.Glob(filepath.Join(root, "fixtures", "qemu", "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []Fixture
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		i := strings.LastIndex(name, "-")
		if i < 0 {
			return nil, fmt.Errorf("%s: want <build>-<scenario>.json", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Registers map[string]string `json:"registers"`
			Truth     struct {
				Frames []TruthFrame `json:"frames"`
			} `json:"truth"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		f := Fixture{Name: name, Dump: p, ELF: filepath.Join(root, "firmware-samples", "build", name[:i]+".elf"),
			Truth: doc.Truth.Frames, Regs: map[string]uint32{}}
		for k, v := range doc.Registers {
			n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("%s: register %s: %w", p, k, err)
			}
			f.Regs[k] = uint32(n)
		}
		out = append(out, f)
	}
	return out, nil
}

// Output is what one GDB session printed, split by command.
type Output struct {
	Backtrace string // bt
	Registers string // info registers
	All       string // info all-registers
	Raw       string // everything, for failure messages
}

// separator marks the end of one command's output.
const separator = "@@faultline-gdbtest@@"

// Run runs GDB in batch mode on elf, connects with "target remote
// <target>" (a host:port or "| command") and runs bt, info registers and
// info all-registers.
func Run(ctx context.Context, elf, target string) (Output, error) {
	cmd := exec.CommandContext(ctx, GDB, "-batch", "-nx",
		"-ex", "set osabi none",
		"-ex", "set width 0",
		"-ex", "set pagination off",
		"-ex", "set backtrace past-main on",
		"-ex", "set backtrace past-entry on",
		"-ex", "target remote "+target,
		"-ex", "echo "+separator+"\\n",
		"-ex", "bt",
		"-ex", "echo "+separator+"\\n",
		"-ex", "info registers",
		"-ex", "echo "+separator+"\\n",
		"-ex", "info all-registers",
		"-ex", "echo "+separator+"\\n",
		elf)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	out := Output{Raw: buf.String()}
	parts := strings.Split(out.Raw, separator+"\n")
	if len(parts) < 5 {
		if err == nil {
			err = fmt.Errorf("GDB printed %d of the 4 command separators", len(parts)-1)
		}
		return out, fmt.Errorf("%s: %w\n%s", GDB, err, out.Raw)
	}
	out.Backtrace, out.Registers, out.All = parts[1], parts[2], parts[3]
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", GDB, err, out.Raw)
	}
	return out, nil
}

// Frame is one line of GDB's backtrace.
type Frame struct {
	Function  string // "" for a frame GDB has no name for ("??")
	Exception bool   // "<signal handler called>"
	Line      string
}

var frameLine = regexp.MustCompile(`^#(\d+)\s+(?:0x[0-9a-fA-F]+ in )?(.*)$`)

// ParseBacktrace parses the frame lines of GDB's bt output.
func ParseBacktrace(bt string) []Frame {
	var out []Frame
	for _, line := range strings.Split(bt, "\n") {
		m := frameLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rest := m[2]
		f := Frame{Line: line}
		switch {
		case strings.HasPrefix(rest, "<signal handler called>"):
			f.Exception = true
		default:
			name, _, _ := strings.Cut(rest, " (")
			if name != "??" {
				f.Function = name
			}
		}
		out = append(out, f)
	}
	return out
}

// Compare checks GDB's backtrace against the truth: the truth must be a
// prefix of it, and GDB may show one more frame only: the pseudo
// exception frame it makes of the reset LR (see the package comment). It
// returns nil or an error saying where they differ.
func Compare(truth []TruthFrame, got []Frame) error {
	for i, tf := range truth {
		if i >= len(got) {
			return fmt.Errorf("GDB's backtrace has %d frames, the truth %d: frame #%d (%s) is missing", len(got), len(truth), i, describe(tf))
		}
		g := got[i]
		switch {
		case tf.Kind == "exception":
			if !g.Exception {
				return fmt.Errorf("frame #%d: want <signal handler called>, GDB shows %q", i, g.Line)
			}
		case g.Exception:
			return fmt.Errorf("frame #%d: want %s, GDB shows %q", i, describe(tf), g.Line)
		case tf.Function == "":
			if g.Function != "" && g.Function != tf.GDBName {
				return fmt.Errorf("frame #%d: want a frame without a function (GDB named it %q), GDB shows %q", i, tf.GDBName, g.Line)
			}
		case g.Function != tf.Function:
			return fmt.Errorf("frame #%d: want %s, GDB shows %q", i, describe(tf), g.Line)
		}
	}
	if len(got) > len(truth) && !got[len(truth)].Exception {
		return fmt.Errorf("frame #%d after the truth's end: want the <signal handler called> GDB makes of the reset LR 0xffffffff, GDB shows %q", len(truth), got[len(truth)].Line)
	}
	if len(got) > len(truth)+1 {
		return fmt.Errorf("GDB's backtrace goes on for %d frames past the truth's end and its reset-LR pseudo exception frame, from %q", len(got)-len(truth)-1, got[len(truth)+1].Line)
	}
	return nil
}

func describe(tf TruthFrame) string {
	if tf.Kind == "exception" {
		return "<signal handler called>"
	}
	if tf.Function == "" {
		return "?? at " + tf.PC
	}
	return tf.Function
}

var regLine = regexp.MustCompile(`^(\w+)\s+(0x[0-9a-f]+|<unavailable>)(?:\s|$)`)
var rawValue = regexp.MustCompile(`\(raw (0x[0-9a-f]+|<unavailable>)\)`)

// Registers parses "info registers" output: integer registers by their
// hex column, FP registers by their "(raw 0x...)" value. An unavailable
// register maps to -1.
func Registers(out string) map[string]int64 {
	regs := map[string]int64{}
	for _, line := range strings.Split(out, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		name, val := fields[0], ""
		if m := rawValue.FindStringSubmatch(line); m != nil {
			val = m[1]
		} else if m := regLine.FindStringSubmatch(line); m != nil {
			val = m[2]
		} else {
			continue
		}
		if val == "<unavailable>" {
			regs[name] = -1
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(val, "0x"), 16, 64)
		if err == nil {
			regs[name] = int64(v)
		}
	}
	return regs
}

// CheckRegisters compares GDB's registers with the dump's: every register
// in want must show the dump's value or <unavailable>; when want holds s0
// (GDB's pseudo registers over d0-d15), d0-d15 must show the pairs of s
// registers too. want lists the registers that must appear.
func CheckRegisters(dump map[string]uint32, got map[string]int64, want []string) error {
	var errs []string
	for _, name := range want {
		v, ok := dump[name]
		g, present := got[name]
		switch {
		case !present:
			errs = append(errs, name+": not shown")
		case !ok && g != -1:
			errs = append(errs, fmt.Sprintf("%s: the dump lacks it, GDB shows %#x instead of <unavailable>", name, g))
		case ok && g != int64(v):
			errs = append(errs, fmt.Sprintf("%s: GDB shows %#x, the dump has %#x", name, g, v))
		}
	}
	for i := 0; i < 16 && slices.Contains(want, "s0"); i++ {
		lo, ok1 := dump[fmt.Sprintf("s%d", 2*i)]
		hi, ok2 := dump[fmt.Sprintf("s%d", 2*i+1)]
		if !ok1 || !ok2 {
			continue
		}
		name := fmt.Sprintf("d%d", i)
		if g, ok := got[name]; !ok || uint64(g) != uint64(hi)<<32|uint64(lo) {
			errs = append(errs, fmt.Sprintf("%s: GDB shows %#x, the dump's s%d:s%d are %#x:%#x", name, g, 2*i+1, 2*i, hi, lo))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("registers differ: %s", strings.Join(errs, "; "))
	}
	return nil
}

// CoreRegisters are the registers "info registers" must show for every
// dump.
func CoreRegisters() []string {
	return []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12",
		"sp", "lr", "pc", "xpsr", "msp", "psp", "primask", "basepri", "faultmask", "control"}
}

// FPRegisters are the registers "info all-registers" must show when the
// dump has FP registers.
func FPRegisters() []string {
	out := []string{"fpscr"}
	for i := 0; i < 32; i++ {
		out = append(out, fmt.Sprintf("s%d", i))
	}
	return out
}

// Available reports whether GDB is installed.
func Available() bool {
	_, err := exec.LookPath(GDB)
	return err == nil
}

// Check runs the whole comparison for one fixture; target is what follows
// "target remote".
func Check(ctx context.Context, f Fixture, target string) error {
	out, err := Run(ctx, f.ELF, target)
	if err != nil {
		return err
	}
	frames := ParseBacktrace(out.Backtrace)
	if err := Compare(f.Truth, frames); err != nil {
		return fmt.Errorf("%w\nGDB's backtrace:\n%s", err, out.Backtrace)
	}
	if err := CheckRegisters(f.Regs, Registers(out.Registers), CoreRegisters()); err != nil {
		return fmt.Errorf("info registers: %w\n%s", err, out.Registers)
	}
	if _, fp := f.Regs["s0"]; fp {
		if err := CheckRegisters(f.Regs, Registers(out.All), FPRegisters()); err != nil {
			return fmt.Errorf("info all-registers: %w\n%s", err, out.All)
		}
	}
	return nil
}
