package emu

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// Calls abandoned without a return (testdata/abandon.c, built as
// abandon-m0.elf and abandon-m3.elf; uc/tracker.c, fl_prune): the truth
// must hold only the live calls.
//
// Oracle: both ELFs run unchanged on QEMU 7.2's mps2-an385 (Cortex-M3;
// ARMv6-M code runs there too) under GDB (testdata/abandon-qemu.sh). For
// scenarios 1-6 GDB's backtrace from HardFault_Handler has the functions
// and return addresses below, down to main (GDB stops there; the truth
// goes on to Reset_Handler). Only the PC at which IRQ 0 interrupts
// lj_then_irq differs: QEMU takes it right after the store to NVIC_ISPR,
// the emulator at the next block (after "dsb; isb"), both within what
// ARMv7-M allows, so that PC is not checked. GDB cannot unwind the naked
// assembly functions of scenarios 7 and 8 (no CFI): those follow from the
// disassembly.
//
// Before the shadow stack dropped abandoned calls, abandon-m0.elf's truths
// kept the switch helper's call (a second switch_then_call frame, and a
// second main: main's if-chain became a switch as well), the throw path of
// every longjmp (lj_bottom lj_mid lj_top and the setjmp caller's call to
// lj_top), and in scenario 6 all 25 lj_recurse activations.
func TestAbandonedCalls(t *testing.T) {
	for _, c := range []struct {
		elf      string
		scenario uint64
		want     string // the truth after HardFault_Handler: function@return (no @: not checked)
	}{
		// 1: __gnu_thumb1_case_uqi "returns" into the case code, which
		// calls crash_leaf at the SP the helper was called with.
		{"abandon-m0.elf", 1, "crash_leaf@0x4c switch_then_call@0xfa main@0x30a Reset_Handler"},
		// 2: the case code itself faults (pruned when the truth is built).
		{"abandon-m0.elf", 2, "switch_then_crash@0x154 main@0x328 Reset_Handler"},
		// 3-4: longjmp back into the setjmp caller, which calls a function
		// that faults (3) or faults itself (4).
		{"abandon-m0.elf", 3, "crash_leaf@0x4c lj_then_call@0x1d0 main@0x330 Reset_Handler"},
		{"abandon-m0.elf", 4, "lj_then_crash@0x1f4 main@0x338 Reset_Handler"},
		// 5: after the longjmp IRQ 0 interrupts the setjmp caller: the
		// interrupted level is pruned with its interrupted PC and SP.
		{"abandon-m0.elf", 5, "crash_leaf@0x4c IRQ0_Handler@0x58 <exception> lj_then_irq main@0x340 Reset_Handler"},
		// 6: longjmp out of 25 activations; lj_deep returns (its return
		// address is not among the 16 newest entries) and its caller faults.
		{"abandon-m0.elf", 6, "lj_deep_caller@0x296 main@0x348 Reset_Handler"},
		// 7: nr_mid pushes nothing: its call to nr_last is made at the SP
		// nr_first called it with, and stays.
		{"abandon-m0.elf", 7, "nr_last@0x29e nr_mid@0x2a8 nr_first@0x2b0 main@0x350 Reset_Handler"},
		// 8: self_calls calls itself at one SP: every activation stays.
		{"abandon-m0.elf", 8, "crash_leaf@0x4c self_calls@0x2ba self_calls@0x2c0 self_calls@0x2c0 self_calls@0x2c0 main@0x356 Reset_Handler"},

		{"abandon-m3.elf", 1, "crash_leaf@0x4c switch_then_call@0xf4 main@0x316 Reset_Handler"},
		{"abandon-m3.elf", 2, "switch_then_crash@0x14e main@0x334 Reset_Handler"},
		{"abandon-m3.elf", 3, "crash_leaf@0x4c lj_then_call@0x1d2 main@0x33c Reset_Handler"},
		{"abandon-m3.elf", 4, "lj_then_crash@0x1f6 main@0x344 Reset_Handler"},
		// IRQ0_Handler tail-calls crash_leaf (b.w) on ARMv7-M.
		{"abandon-m3.elf", 5, "crash_leaf@0x4c <exception> lj_then_irq main@0x34c Reset_Handler"},
		{"abandon-m3.elf", 6, "lj_deep_caller@0x29a main@0x354 Reset_Handler"},
		{"abandon-m3.elf", 7, "nr_last@0x2a2 nr_mid@0x2ac nr_first@0x2b4 main@0x35c Reset_Handler"},
		{"abandon-m3.elf", 8, "crash_leaf@0x4c self_calls@0x2be self_calls@0x2c4 self_calls@0x2c4 self_calls@0x2c4 main@0x362 Reset_Handler"},
	} {
		t.Run(fmt.Sprintf("%s/%d", c.elf, c.scenario), func(t *testing.T) {
			res := run(t, c.elf, c.scenario)
			if res.Exception != 3 || len(res.Truth) < 2 || res.Truth[0].Function != "HardFault_Handler" || res.Truth[1].Kind != FrameException {
				t.Fatalf("exception %d, truth %v: want a HardFault", res.Exception, functions(res))
			}
			want := strings.Fields(c.want)
			got := res.Truth[2:]
			ok := len(got) == len(want)
			var gs []string
			for i, f := range got {
				s := f.Function
				if f.Kind == FrameException {
					s = "<exception>"
				}
				if i < len(want) && strings.Contains(want[i], "@") {
					s += fmt.Sprintf("@%#x", f.PC)
				}
				gs = append(gs, s)
				if i < len(want) && s != want[i] {
					ok = false
				}
			}
			if !ok {
				t.Errorf("truth after the HardFault\n got  %s\n want %s", strings.Join(gs, " "), c.want)
			}
		})
	}
}

// TestFuncRanges checks that the function ranges the shadow stack looks
// addresses up in (image.funcRanges) partition the code as funcAt does, on
// a C++ image with aliases (the D1/D2 destructors) and libgcc's assembly.
func TestFuncRanges(t *testing.T) {
	const elf = "../firmware-samples/matrix/build/gcc-m3-O2-cxx.elf"
	f, err := os.Open(elf)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	img, err := loadImage(elf, f)
	if err != nil {
		t.Fatal(err)
	}
	starts, ends := img.funcRanges()
	if len(starts) == 0 {
		t.Fatal("no ranges")
	}
	for i := range starts {
		if ends[i] <= starts[i] || i > 0 && starts[i] < ends[i-1] {
			t.Fatalf("range %d [%#x, %#x) after [%#x, %#x)", i, starts[i], ends[i], starts[i-1], ends[i-1])
		}
	}
	index := func(a uint32) int {
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > a }) - 1
		if i < 0 || a >= ends[i] {
			return -1
		}
		return i
	}
	names := map[int]string{}
	last := ends[len(ends)-1]
	for a := uint32(0); a < last; a += 2 {
		name, i := img.funcAt(a), index(a)
		if (name == "") != (i < 0) {
			t.Fatalf("%#x: funcAt %q, range %d", a, name, i)
		}
		if i < 0 {
			continue
		}
		if n, ok := names[i]; ok && n != name {
			t.Fatalf("%#x: funcAt %q, but range %d [%#x, %#x) is %q", a, name, i, starts[i], ends[i], n)
		}
		names[i] = name
	}
}
