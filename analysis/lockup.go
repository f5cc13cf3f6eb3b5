package analysis

import (
	"debug/elf"
	"fmt"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// spBelowRAM explains a locked-up core's SP that lies below the RAM it
// runs its stack in: the stack overflowed, and the exception entry that
// would have taken the fault could not push its frame there either. The
// evidence is positive only: the SP is in no memory the dump holds and
// lies below the start of the firmware's lowest writable segment (the
// ELF), or, without the ELF, just below the lowest memory the dump holds
// above it. "" when there is no such evidence.
func spBelowRAM(e *elfsym.File, d *crashdump.Dump) string {
	sp, ok := d.Regs.Get(unwinders.SP)
	if !ok {
		return ""
	}
	for _, m := range d.Memory {
		if sp >= m.Addr && uint64(sp) < m.End() {
			return ""
		}
	}
	const near = 64 << 10 // a stack overflow overshoots by a frame or a few, not more
	if e != nil {
		ram, found := uint32(0), false
		for _, p := range e.Progs() {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 && p.Memsz > 0 && (!found || p.Vaddr < ram) {
				ram, found = p.Vaddr, true
			}
		}
		if found && sp < ram && ram-sp <= near {
			return fmt.Sprintf("SP is 0x%08x, %d bytes below 0x%08x, where the firmware's RAM starts (its lowest writable segment): the stack overflowed past the bottom of RAM, and the exception entry that would have taken the fault could not push its frame there, hence the lockup.", sp, ram-sp, ram)
		}
	}
	above, found := uint32(0), false
	for _, m := range d.Memory {
		if m.Addr > sp && m.Addr < 0xE0000000 && (!found || m.Addr < above) {
			above, found = m.Addr, true
		}
	}
	if found && above-sp <= 4096 {
		return fmt.Sprintf("SP is 0x%08x, in no memory the dump holds, %d bytes below the lowest memory it holds above it (0x%08x): the stack probably ran past the bottom of its RAM.", sp, above-sp, above)
	}
	return ""
}
