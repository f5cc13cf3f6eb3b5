package analysis

import (
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// dispatchFixture is one QEMU + GDB crash of firmware-samples/dispatch.
type dispatchFixture struct {
	path, build, scenario string
}

func dispatchFixtures(t *testing.T) []dispatchFixture {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-dispatch/*.json"))
	if len(paths) < 30 {
		t.Fatalf("%d fixtures in fixtures/qemu-dispatch, want 30 (6 builds x 5 scenarios)", len(paths))
	}
	var out []dispatchFixture
	for _, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".json")
		parts := strings.SplitN(base, "-", 4) // compiler-core-opt-scenario
		if len(parts) != 4 {
			t.Fatalf("%s: not <build>-<scenario>", p)
		}
		out = append(out, dispatchFixture{p, strings.Join(parts[:3], "-"), parts[3]})
	}
	return out
}

func openDispatch(t *testing.T, build string) *elfsym.File {
	t.Helper()
	f, err := elfsym.Open(filepath.Join(repo, "firmware-samples/dispatch/build", build+".elf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// The crash path of firmware-samples/dispatch goes through an
// interpreter's indirect-tail-call dispatcher (bx rN through a constant
// table, and a tail call through a function pointer in RAM), through
// tail-call chains 3 and 4 functions deep, and holds pointers to constant
// objects linked inside .text on the stack. On every crash, QEMU + GDB's
// fixture with its own ELF: the pairing is not a mismatch and no
// heuristic doubts it, and the backtrace is GDB's, frame for frame.
func TestPairingDispatchSample(t *testing.T) {
	for _, fx := range dispatchFixtures(t) {
		t.Run(fx.build+"-"+fx.scenario, func(t *testing.T) {
			elf := openDispatch(t, fx.build)
			d, err := crashdump.Load(fx.path)
			if err != nil {
				t.Fatal(err)
			}
			if d.Truth == nil {
				t.Fatal("no truth")
			}
			r, err := Analyze(elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pairing.Verdict == report.PairMismatch || len(r.Pairing.Doubts) > 0 {
				t.Errorf("own ELF: %s: %q", r.Pairing.Verdict, r.Pairing.Evidence)
			}
			var got, want []string
			for _, f := range r.Frames {
				if f.Kind != "exception" {
					got = append(got, f.Function+"@"+f.PC)
				}
			}
			truth, tails := stackTruth(elf, d.Truth.Frames)
			for _, f := range truth {
				want = append(want, f.Function+"@"+report.Hex(f.PC))
			}
			if !slices.Equal(got, want) {
				t.Errorf("backtrace\n%q\nGDB\n%q", got, want)
			}
			// The class is really on the crash path: GDB's frames after
			// the exception start with the crashing function and the
			// caller the tail calls return to.
			fns := []string{}
			for _, f := range truth[1:] {
				fns = append(fns, f.Function)
			}
			path := strings.Join(fns, ">")
			wantPath := map[string]string{
				"dispatch_bx":     "op_store>vm_run>",
				"dispatch_native": "native_poke>vm_run>",
				"chain3":          "chain_crash>chain3_entry>",
				"chain4":          "chain_crash>chain4_entry>",
				"rodata_ptrs":     "report_crash>collect_messages>",
			}[fx.scenario]
			if wantPath == "" || !strings.HasPrefix(path, wantPath) {
				t.Errorf("GDB's path %s, want it to start %s", path, wantPath)
			}
			if fx.scenario == "rodata_ptrs" {
				if n := constPointers(t, elf, d); n < 5 {
					t.Errorf("%d pointers into messages[] on the stack, want at least 5", n)
				}
			}
			// gcc's DW_TAG_call_site lets GDB show the functions a chain
			// tail-called through (frames that are not on the stack); the
			// 3- and 4-deep chains must be there for gcc.
			if wantTails := map[string]int{"chain3": 3, "chain4": 4}[fx.scenario]; wantTails > 0 && strings.HasPrefix(fx.build, "gcc-") && tails != wantTails {
				t.Errorf("GDB shows %d tail-call frames, want %d", tails, wantTails)
			}
		})
	}
}

// stackTruth is GDB's backtrace without its exception markers and without
// the tail-call frames GDB adds from the DWARF call-site information (gcc's
// DW_TAG_call_site): a frame whose PC follows a B (not a BL) to the
// function of the frame inside it was never on the stack; the dump holds
// the frames that were. It returns the frames kept and how many tail-call
// frames it dropped.
func stackTruth(elf *elfsym.File, frames []crashdump.TruthFrame) ([]crashdump.TruthFrame, int) {
	img := elfImage(elf)
	var out []crashdump.TruthFrame
	dropped := 0
	inner := ""
	for _, f := range frames {
		if f.Kind == "exception" {
			inner = ""
			continue
		}
		if inner != "" && isTailBranchTo(elf, img, f.PC, inner) {
			dropped++
			inner = f.Function
			continue
		}
		out = append(out, f)
		inner = f.Function
	}
	return out, dropped
}

// isTailBranchTo reports whether the instruction that ends right before pc
// is a B (16- or 32-bit) to the start of the function named callee.
func isTailBranchTo(elf *elfsym.File, img unwinders.Memory, pc uint32, callee string) bool {
	start, ok := elf.Symbol(callee)
	if !ok {
		return false
	}
	for _, back := range []uint32{4, 2} {
		if pc < back {
			continue
		}
		in, err := thumb.DecodeAt(img, pc-back)
		if err == nil && in.Len == int(back) && in.Op == thumb.OpB && in.Target&^1 == start&^1 {
			return true
		}
	}
	return false
}

// constPointers counts the odd words on the dump's main stack that point
// into the constant messages[] (inside .text).
func constPointers(t *testing.T, elf *elfsym.File, d *crashdump.Dump) int {
	lo, ok := elf.Symbol("messages")
	if !ok {
		t.Fatal("no messages symbol")
	}
	sp, _ := d.Regs.Get(unwinders.SP)
	n := 0
	for _, r := range d.Memory {
		for a := uint64(max(sp, r.Addr)) &^ 3; a+4 <= r.End(); a += 4 {
			v := binary.LittleEndian.Uint32(r.Data[a-uint64(r.Addr):])
			if v&1 == 1 && v > lo && v < lo+300 && elf.IsCode(v) {
				n++
			}
		}
	}
	return n
}

// Another build's ELF is still a mismatch where there is positive
// evidence: the dump's flash (as a capture that saved it would hold it)
// differs where the walk read it, or the dump's build ID is the other
// build's. With its own flash or ID the same dump is verified.
func TestPairingDispatchWrongBuild(t *testing.T) {
	own, other := openDispatch(t, "gcc-m3-O2"), openDispatch(t, "gcc-m3-Os")
	for _, sc := range []string{"dispatch_bx", "chain3", "rodata_ptrs"} {
		load := func() *crashdump.Dump {
			d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu-dispatch", "gcc-m3-O2-"+sc+".json"))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		addr, text, ok := own.Section(".text")
		if !ok {
			t.Fatal("no .text")
		}
		for _, c := range []struct {
			elf  *elfsym.File
			want string
			says string
		}{{own, report.PairVerified, "code bytes"}, {other, report.PairMismatch, "code bytes differ where the walk read them"}} {
			d := load()
			d.Memory = append(d.Memory, unwinders.Region{Addr: addr, Data: text, Name: "flash.bin"})
			r, err := Analyze(c.elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pairing.Verdict != c.want || !strings.Contains(strings.Join(r.Pairing.Evidence, "\n"), c.says) {
				t.Errorf("%s with the O2 flash, ELF %s: %s, want %s saying %q: %q", sc, filepath.Base(c.elf.Name()), r.Pairing.Verdict, c.want, c.says, r.Pairing.Evidence)
			}
			if c.want == report.PairMismatch && !strings.Contains(strings.Join(r.Warnings, "\n"), "is not the firmware that crashed") {
				t.Errorf("%s: no mismatch warning: %q", sc, r.Warnings)
			}
		}
		for _, c := range []struct {
			elf  *elfsym.File
			want string
		}{{own, report.PairVerified}, {other, report.PairMismatch}} {
			d := load()
			d.BuildID = own.BuildID()
			if d.BuildID == "" || d.BuildID == other.BuildID() {
				t.Fatalf("build IDs %q %q", d.BuildID, other.BuildID())
			}
			r, err := Analyze(c.elf, d, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Pairing.Verdict != c.want {
				t.Errorf("%s with the O2 build ID, ELF %s: %s, want %s: %q", sc, filepath.Base(c.elf.Name()), r.Pairing.Verdict, c.want, r.Pairing.Evidence)
			}
		}
	}
}
