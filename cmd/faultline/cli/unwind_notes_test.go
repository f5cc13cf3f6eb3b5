package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// emulateAnalyze runs `faultline emulate` with args on elf, then `analyze
// --format json` on the dump, and returns the report.
func emulateAnalyze(t *testing.T, elf string, args ...string) report.Report {
	t.Helper()
	skipWithoutEmulator(t)
	dump := filepath.Join(t.TempDir(), "dump.json")
	a := append([]string{"emulate", "--elf", elf, "-o", dump}, args...)
	if _, stderr, code := run(t, "", a...); code != 0 {
		t.Fatalf("emulate: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := run(t, "", "analyze", "--elf", elf, "--format", "json", dump)
	if code != 0 {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSVCFrameLookedUpAtSVC (issue 13, defect 6): the frame an SVCall
// interrupted is looked up at its svc instruction (PC-2), like a return
// address: SVC is synchronous and complete. The FreeRTOS-style sample
// starts its first task with `svc 0` followed by `b .`; run from
// rtk_port_start_first, its SVC handler faults restoring a task that was
// never set up, so the walk crosses the SVCall frame.
func TestSVCFrameLookedUpAtSVC(t *testing.T) {
	elfPath := filepath.Join(repo, "firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	r := emulateAnalyze(t, elfPath, "--call", "rtk_port_start_first")
	elf, err := elfsym.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	var found bool
	for i, f := range r.Frames {
		if f.Function != "rtk_port_start_first" || i == 0 || r.Frames[i-1].Kind != "exception" {
			continue
		}
		found = true
		v, err := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
		if err != nil {
			t.Fatal(err)
		}
		pc := uint32(v)
		atSVC, _ := elf.Symbolize(pc - 2)
		atPC, _ := elf.Symbolize(pc)
		if len(atSVC) == 0 || len(atPC) == 0 || atSVC[len(atSVC)-1].Line == atPC[len(atPC)-1].Line {
			t.Fatalf("the svc at 0x%08x and the next instruction are on one line: the test shows nothing", pc-2)
		}
		if want := atSVC[len(atSVC)-1].Line; f.Line != want {
			t.Errorf("frame %d at %s: line %d, want %d (the svc's line, PC-2)", i, f.PC, f.Line, want)
		}
		if !strings.Contains(f.Note, "svc #0") {
			t.Errorf("frame %d: note %q does not say it is looked up at the svc", i, f.Note)
		}
	}
	if !found {
		t.Fatalf("no frame of rtk_port_start_first after an exception frame: %+v", r.Frames)
	}
}

// TestNotesWithoutFaultRegisters (issue 13, defect 6): a dump without the
// fault status registers, taken in Thread mode or inside the SVCall
// handler, must not contradict itself ("record no fault" and "are not in
// the dump") nor call the SVC a fault of unknown cause. Built from an
// emulator run of the FreeRTOS-style sample (rtk_port_start_first's `svc
// 0`): the registers are those the SVCall handler had (frame 2 of the
// walk, rtk_restore_cm3), as a crash handler that saves no SCB registers
// would capture them; then the registers of the code the svc interrupted
// (Thread mode).
func TestNotesWithoutFaultRegisters(t *testing.T) {
	skipWithoutEmulator(t)
	elfPath := filepath.Join(repo, "firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	dumpPath := filepath.Join(t.TempDir(), "dump.json")
	if _, stderr, code := run(t, "", "emulate", "--elf", elfPath, "-o", dumpPath, "--call", "rtk_port_start_first"); code != 0 {
		t.Fatalf("emulate: exit %d: %s", code, stderr)
	}
	elf, err := elfsym.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(dumpPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Analyze(elf, d, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var handler, thread *unwinders.Registers
	for i, f := range r.Walk.Frames {
		if f.Kind != unwinders.KindException || i+1 >= len(r.Walk.Frames) {
			continue
		}
		if handler == nil {
			handler = &r.Walk.Frames[i+1].Regs
		} else {
			thread = &r.Walk.Frames[i+1].Regs
		}
	}
	if handler == nil || thread == nil {
		t.Fatalf("the walk did not cross two exception frames: %v", r.Stop)
	}
	if ipsr, _ := handler.IPSR(); ipsr != 11 {
		t.Fatalf("the handler's IPSR is %d, want 11 (SVCall)", ipsr)
	}
	var mem []unwinders.Region
	for _, m := range d.Memory {
		if m.Addr < 0xE0000000 {
			mem = append(mem, m)
		}
	}
	for _, c := range []struct {
		name        string
		regs        unwinders.Registers
		exception   string
		want, avoid []string
	}{
		{"SVCall handler", *handler, "SVCall",
			[]string{"SVCall (exception 11) is a supervisor call made by an svc instruction, not a fault", "The fault status registers (CFSR, HFSR) are not in the dump."},
			[]string{"cause of the fault is unknown", "record no fault"}},
		{"Thread mode", *thread, "Thread mode",
			[]string{"IPSR is 0 (Thread mode): no exception was active", "The fault status registers (CFSR, HFSR) are not in the dump."},
			[]string{"record no fault", "cause of the fault is unknown"}},
	} {
		d2 := *d
		d2.Regs, d2.Fault, d2.Memory, d2.Truth = c.regs, fault.SCB{}, mem, nil
		r, err := analysis.Analyze(elf, &d2, analysis.Options{})
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(r.Fault.Notes, "\n")
		if r.Fault.Exception != c.exception {
			t.Errorf("%s: exception %q, want %q", c.name, r.Fault.Exception, c.exception)
		}
		for _, w := range c.want {
			if !strings.Contains(notes, w) {
				t.Errorf("%s: notes lack %q:\n%s", c.name, w, notes)
			}
		}
		for _, a := range c.avoid {
			if strings.Contains(notes, a) {
				t.Errorf("%s: notes say %q:\n%s", c.name, a, notes)
			}
		}
	}
}

// TestTerminateGap (issue 13, defect 4): std::terminate reached from
// inside the EH runtime (matrix scenario 20, cxx_terminate). The return
// addresses between the runtime and the noexcept function are gone from
// memory; auto used to go on from _Unwind_Resume to cxx_nothrow marked
// [prologue, high] although the call at that return address targets
// cxx_middle. Now a gap frame stands there, names both functions, and
// every frame after it is at most medium. Stop reasons and notes name
// C++ functions demangled.
func TestTerminateGap(t *testing.T) {
	for _, c := range []struct{ build, before, after string }{
		{"gcc-m3-O2-cxx", "_Unwind_Resume", "cxx_nothrow"},
		{"clang-m3-O2-cxx", "__clang_call_terminate", "scenario_cxx_terminate"},
	} {
		elf := filepath.Join(repo, "firmware-samples/matrix/build", c.build+".elf")
		r := emulateAnalyze(t, elf, "--set", "crash_scenario=20")
		gap := -1
		for i, f := range r.Frames {
			if f.Kind == "gap" {
				gap = i
				break
			}
		}
		if gap < 1 || gap+1 >= len(r.Frames) {
			t.Errorf("%s: no gap frame inside the backtrace: %+v", c.build, r.Frames)
			continue
		}
		if g := r.Frames[gap]; g.Method != "call-check" || g.Confidence != "low" || !strings.Contains(g.Note, "frames are missing") {
			t.Errorf("%s: gap frame %+v", c.build, g)
		}
		if b := r.Frames[gap-1]; b.Symbol != c.before && b.Function != c.before {
			t.Errorf("%s: frame before the gap is %s, want %s", c.build, b.Function, c.before)
		}
		if a := r.Frames[gap+1]; a.Function != c.after {
			t.Errorf("%s: frame after the gap is %s, want %s", c.build, a.Function, c.after)
		}
		for _, f := range r.Frames[gap+1:] {
			if f.Confidence == "high" {
				t.Errorf("%s: frame %d (%s) after the gap is high", c.build, f.Index, f.Function)
			}
		}
		for _, f := range r.Frames[:gap] {
			if f.Kind != "exception" && f.Confidence != "high" {
				t.Errorf("%s: frame %d (%s) before the gap is %s, want high", c.build, f.Index, f.Function, f.Confidence)
			}
		}
	}

	// The frame-pointer strategy stops in libsupc++'s __terminate: its
	// stop reason names it demangled.
	elf := filepath.Join(repo, "firmware-samples/matrix/build/gcc-m3-O2-cxx.elf")
	dump := filepath.Join(t.TempDir(), "dump.json")
	if _, stderr, code := run(t, "", "emulate", "--elf", elf, "-o", dump, "--set", "crash_scenario=20"); code != 0 {
		t.Fatalf("emulate: %s", stderr)
	}
	stdout, _, _ := run(t, "", "analyze", "--elf", elf, "--unwinder", "framepointer", dump)
	if !strings.Contains(stdout, "no frame pointer: __cxxabiv1::__terminate(void (*)()) does not set up r7") || strings.Contains(stdout, "_ZN10__cxxabiv1") {
		t.Errorf("stop reason not demangled:\n%s", stdout)
	}
}

// TestStackscanMinusOneLocal (issue 13, defect 6): a 0xFFFFFFFF data word
// in the middle of a frame (a local holding -1) is not the end of the
// stack: only near the main stack's top is it the reset value of LR saved
// by the outermost function. Matrix scenario deep_chain (gcc-m3-O2): the
// word is planted in the middle of deep3_wide_frame's 2 KiB of locals.
func TestStackscanMinusOneLocal(t *testing.T) {
	skipWithoutEmulator(t)
	elfPath := filepath.Join(repo, "firmware-samples/matrix/build/gcc-m3-O2.elf")
	dumpPath := filepath.Join(t.TempDir(), "dump.json")
	if _, stderr, code := run(t, "", "emulate", "--elf", elfPath, "-o", dumpPath, "--set", "crash_scenario=1"); code != 0 {
		t.Fatalf("emulate: %s", stderr)
	}
	elf, err := elfsym.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(dumpPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: "stackscan"})
	if err != nil {
		t.Fatal(err)
	}
	if !score.ScoreReport(r, d.Truth).Exact {
		t.Fatalf("stackscan is not exact on the clean stack: %v", r.Stop)
	}
	var slot uint32
	for i := 0; i+1 < len(r.Walk.Frames); i++ {
		f, next := r.Walk.Frames[i], r.Walk.Frames[i+1]
		if fn, ok := elf.FuncAt(f.LookupPC()); ok && fn.Name == "deep3_wide_frame" {
			slot = (f.SP + (next.SP-f.SP)/2) &^ 3
		}
	}
	if slot == 0 {
		t.Fatal("no deep3_wide_frame frame")
	}
	planted := false
	for _, m := range d.Memory {
		if m.Contains(slot) && uint64(slot)+4 <= m.End() {
			o := slot - m.Addr
			m.Data[o], m.Data[o+1], m.Data[o+2], m.Data[o+3] = 0xff, 0xff, 0xff, 0xff
			planted = true
		}
	}
	if !planted {
		t.Fatalf("0x%08x is not in the dump", slot)
	}
	r, err = analysis.Analyze(elf, d, analysis.Options{Unwinder: "stackscan"})
	if err != nil {
		t.Fatal(err)
	}
	if s := score.ScoreReport(r, d.Truth); !s.Exact || !strings.HasPrefix(r.Stop, "reached the reset handler") {
		t.Errorf("with 0xFFFFFFFF at 0x%08x: exact %v, stop %q", slot, s.Exact, r.Stop)
	}
}

// TestCompareRowsStartTogether (issue 13, defect 6): every compare row
// starts at the same frame. The dump is the SVCall handler's state of the
// FreeRTOS-style sample (rtk_restore_cm3 past its entry, LR an EXC_RETURN
// that the handler may have moved past; no fault registers): some
// strategies cross the SVCall frame to rtk_port_start_first, others stop
// inside the handler. The rows of those that stopped used to start at
// rtk_restore_cm3, inside the handler, next to rows starting at the
// interrupted frame.
func TestCompareRowsStartTogether(t *testing.T) {
	skipWithoutEmulator(t)
	elfPath := filepath.Join(repo, "firmware-samples/rtos-freertos/build/gcc-m3-O2.elf")
	dir := t.TempDir()
	dumpPath := filepath.Join(dir, "dump.json")
	if _, stderr, code := run(t, "", "emulate", "--elf", elfPath, "-o", dumpPath, "--call", "rtk_port_start_first"); code != 0 {
		t.Fatalf("emulate: exit %d: %s", code, stderr)
	}
	elf, err := elfsym.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(dumpPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analysis.Analyze(elf, d, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var handler *unwinders.Registers
	for i, f := range r.Walk.Frames {
		if f.Kind == unwinders.KindException && i+1 < len(r.Walk.Frames) {
			handler = &r.Walk.Frames[i+1].Regs
			break
		}
	}
	if handler == nil {
		t.Fatal("no exception frame")
	}
	var mem []unwinders.Region
	for _, m := range d.Memory {
		if m.Addr < 0xE0000000 {
			mem = append(mem, m)
		}
	}
	d.Regs, d.Fault, d.Memory, d.Truth = *handler, fault.SCB{}, mem, nil
	svcPath := filepath.Join(dir, "svc.json")
	if err := d.Write(svcPath); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "", "compare", "--elf", elfPath, svcPath)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, stderr)
	}
	stopped, crossed := 0, 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] == "strategy" || f[0] == "Crash" {
			continue
		}
		row := strings.Join(f[2:], " ")
		switch {
		case strings.HasPrefix(row, "rtk_port_start_first"):
			crossed++
		case strings.HasPrefix(row, "(never left the fault handler)"):
			stopped++
		default:
			t.Errorf("row does not start at the interrupted frame: %s", line)
		}
	}
	if stopped == 0 || crossed == 0 {
		t.Errorf("%d rows crossed the SVCall frame, %d stopped in the handler: the test needs both\n%s", crossed, stopped, stdout)
	}
}

// TestStepNoteNamesItsFrame (issue 13, defect 6): a strategy's note on a
// frame explains the step from the frame below, and may name an address in
// that function: the note says which frame it comes from. QEMU oracle
// fixture clang-m3-O0-irq_crash, prologue strategy: irq_raise was
// interrupted in its return sequence (ending at an address in irq_raise),
// and the note sits under irq_worker.
func TestStepNoteNamesItsFrame(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/clang-m3-O0.elf")
	stdout, stderr, code := run(t, "", "analyze", "--elf", elf, "--unwinder", "prologue", "--format", "json",
		filepath.Join(repo, "fixtures/qemu/clang-m3-O0-irq_crash.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range r.Frames {
		if strings.Contains(f.Note, "return sequence ending at") {
			found = true
			if f.Function != "irq_worker" || !strings.HasPrefix(f.Note, "unwound from irq_raise at 0x") {
				t.Errorf("frame %d (%s): note %q does not name the frame it explains", f.Index, f.Function, f.Note)
			}
		}
	}
	if !found {
		t.Fatalf("no return-sequence note: %+v", r.Frames)
	}
}
