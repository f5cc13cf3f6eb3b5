package analysis

import (
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/verdict"
)

// mainStackStarts are linker symbols that mark the lowest address of the
// main stack (CMSIS's __StackLimit, common vendor spellings, a guard
// placed right below the stack): the first one the ELF has is used.
var mainStackStarts = []string{"__StackLimit", "_sstack", "__stack_start__", "_stack_start", "__stack_start", "_stack_guard"}

// stackVerdict judges whether a stack overflowed (stack_verdict): from the
// fault state, the walk's first exception frame, the RTOS threads and the
// dump's own memory (its MPU registers, a Zephyr sentinel).
func stackVerdict(elf *elfsym.File, d *crashdump.Dump, t *unwinders.Target, frames []unwinders.Frame, kernel *rtos.Kernel, lockupNote string) *verdict.Stack {
	in := verdict.Input{Profile: t.Profile, SCB: d.Fault, Regs: d.Regs, Lockup: d.Lockup != nil, BelowRAM: lockupNote}
	for _, f := range frames {
		if f.Kind == unwinders.KindException && f.Exception != nil {
			in.ExcStack = f.Exception.Stack
			break
		}
	}
	if elf != nil {
		for _, s := range mainStackStarts {
			if v, ok := elf.Symbol(s); ok && v != 0 {
				in.MainStart, in.MainStartHow = v, s
				break
			}
		}
		_, in.ZephyrSentinel = elf.Symbol("z_check_stack_sentinel")
	}
	if kernel != nil {
		in.Threads, in.Kernel = kernel.Threads, kernel.Kind
	}
	in.Mem = func(addr uint32, n int) ([]byte, bool) {
		for _, r := range d.Memory {
			if addr >= r.Addr && uint64(addr)+uint64(n) <= r.End() {
				o := addr - r.Addr
				return r.Data[o : o+uint32(n)], true
			}
		}
		return nil, false
	}
	return verdict.Judge(in)
}
