package analysis

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// Checks of the pairing that compare what the ELF was built for with the
// core the dump came from, and the one register that names a caller
// whatever the walk did (see checkPairing).

// coreCaps is what a core named in a dump can run: the Tag_CPU_arch
// values of code it executes, and whether it can have an FPU.
type coreCaps struct {
	archs  []string // Tag_CPU_arch names (elfsym's spelling)
	mayFPU bool
}

// capsOf maps a dump's cpu to its capabilities; ok is false for a cpu it
// does not know (nothing is then checked). Architecture names (a probe-rs
// coredump's) stand for every core of that architecture.
func capsOf(cpu string) (coreCaps, bool) {
	v6 := []string{"v6-M", "v6S-M"}
	v7 := append(v6, "v7")
	v7e := append(v7, "v7E-M")
	main := append(v7e, "v8-M.baseline", "v8-M.mainline")
	c := strings.ToLower(strings.TrimPrefix(strings.ToLower(cpu), "cortex-"))
	switch c {
	case "m0", "m0plus", "m0+", "m1", "armv6-m", "armv6s-m":
		return coreCaps{archs: v6}, true
	case "m3":
		return coreCaps{archs: v7}, true
	case "armv7-m":
		// The architecture name stands for every core of it, and
		// ARMv7E-M is ARMv7-M with the DSP extension: dump writers that
		// name no core (probe-rs's core_type armv7m, written for the
		// Cortex-M3, M4 and M7 alike) say armv7-m for all of them. Only
		// the dump's own FPU flag tells whether an FPU is there.
		return coreCaps{archs: v7e, mayFPU: true}, true
	case "m4", "m7", "armv7e-m":
		return coreCaps{archs: v7e, mayFPU: true}, true
	case "m23", "armv8-m.base":
		return coreCaps{archs: append(v6, "v8-M.baseline")}, true
	case "m33", "m35p", "armv8-m.main":
		return coreCaps{archs: main, mayFPU: true}, true
	case "m55", "m85", "armv8-m", "armv8.1-m.main":
		return coreCaps{archs: append(main, "v8.1-M.mainline"), mayFPU: true}, true
	}
	return coreCaps{}, false
}

// hasFP reports whether the ELF was built to use FP instructions:
// Tag_FP_arch names an FPU, or the VFP argument-passing ABI.
func hasFP(a *elfsym.Attributes) bool {
	return a.FPHardABI || a.FPArch != "" && a.FPArch != "none"
}

// coreCheck compares the dump's cpu with the ELF's build attributes: an
// ELF built for an architecture the core cannot execute (Tag_CPU_arch
// v7E-M on a Cortex-M3), or for an FPU the core does not have, is not the
// firmware that ran there. fpu is the dump's own statement of whether
// the core has an FPU (nil when it makes none), which narrows what the
// CPU's name allows. It returns the difference, "" when there is none or
// either side says nothing.
func coreCheck(a *elfsym.Attributes, cpu string, fpu *bool) string {
	if a == nil || a.CPUArch == "" || cpu == "" {
		return ""
	}
	caps, ok := capsOf(cpu)
	if !ok {
		return ""
	}
	if fpu != nil {
		caps.mayFPU = caps.mayFPU && *fpu
	}
	runs := false
	for _, x := range caps.archs {
		runs = runs || x == a.CPUArch
	}
	if !runs {
		return fmt.Sprintf("the ELF is built for %s (Tag_CPU_arch), which the dump's %s cannot execute", archName(a.CPUArch), cpu)
	}
	if hasFP(a) && !caps.mayFPU {
		if fpu != nil && !*fpu {
			return fmt.Sprintf("the ELF is built for an FPU (Tag_FP_arch %s), which the dump says its %s core does not have", orNone(a.FPArch), cpu)
		}
		return fmt.Sprintf("the ELF is built for an FPU (Tag_FP_arch %s), which the dump's %s does not have", orNone(a.FPArch), cpu)
	}
	return ""
}

func archName(tag string) string {
	if tag == "v7" {
		return "ARMv7-M"
	}
	return "ARM" + tag
}

func orNone(s string) string {
	if s == "" {
		return "none, hard-float ABI"
	}
	return s
}

// fpFrameCheck: an extended (FP) exception frame is stacked only when the
// interrupted code had executed an FP instruction (CONTROL.FPCA), which
// an ELF built without FP (no Tag_FP_arch, soft-float ABI) never does.
func fpFrameCheck(a *elfsym.Attributes, frames []unwinders.Frame) string {
	if a == nil || a.CPUArch == "" || hasFP(a) {
		return ""
	}
	for _, f := range frames {
		if f.Kind == unwinders.KindException && f.Exception != nil && f.Exception.Extended {
			return fmt.Sprintf("the dump has an FP exception frame (EXC_RETURN 0x%08x, FP state stacked), but the ELF is built without FP instructions (no Tag_FP_arch, soft-float ABI)", uint32(f.Exception.ExcReturn))
		}
	}
	return ""
}

// lrCheck looks at the LR of the interrupted code (the faulting frame's
// registers): when it is an odd address inside the ELF's code, and not a
// function's first instruction (an RTOS task's exit hook, a function
// pointer), it is a return address, which must follow a call (BL, BLX) in
// that code; in the firmware that crashed it does, whatever the walk
// found. It returns the difference, or "".
func lrCheck(elf *elfsym.File, code unwinders.Memory, regs *unwinders.Registers) string {
	lr, ok := regs.Get(unwinders.LR)
	if !ok || lr&1 == 0 || !isCodeWord(elf, lr) {
		return ""
	}
	if fn, ok := elf.FuncAt(lr &^ 1); ok && fn.Start == lr&^1 {
		return ""
	}
	if _, ok := unwinders.CallBefore(code, lr); ok {
		return ""
	}
	where := fmt.Sprintf("0x%08x", lr&^1)
	if fn, ok := elf.FuncAt(lr &^ 1); ok && fn.Name != "" {
		where += fmt.Sprintf(" (%s+0x%x)", fn.Name, lr&^1-fn.Start)
	}
	return fmt.Sprintf("the interrupted code's LR %s is not after a call in the ELF's code", where)
}
