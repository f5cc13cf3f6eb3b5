package emu

import (
	"fmt"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// impreciseStore turns a store to unmapped memory at pc into an imprecise
// bus fault (Config.ImpreciseStores; ARMv7-M ARM B3.2.15 IMPRECISERR): the
// store is buffered and its bus error arrives after the core has run on.
// The harness lets the store complete into a scratch page mapped over the
// address (the data goes nowhere), runs ImpreciseDelay more instructions,
// and takes the BusFault before the next one: the stacked PC is past the
// store and BFAR is not valid. If those instructions end early (another
// fault, an exception, the end of the run), the fault is taken right after
// the store instead.
func (m *machine) impreciseStore(pc uint32, inv invalidAccess, left time.Duration) (fault, error) {
	page, err := m.eng.PageSize()
	if err != nil {
		return fault{}, err
	}
	lo := alignDown(uint64(inv.addr), page)
	hi := alignUp(uint64(inv.addr)+uint64(max(inv.size, 1)), page)
	if err := m.eng.MemMap(lo, hi-lo, uc.PermRead|uc.PermWrite); err != nil {
		return fault{}, fmt.Errorf("imprecise store: mapping a scratch page at %#x: %w", lo, err)
	}
	defer m.eng.MemUnmap(lo, hi-lo)
	// The exact-PC hook over all executable memory counts the
	// instructions and stops before the (ImpreciseDelay+2)-th.
	var begin, end uint64 = 1 << 32, 0
	for _, r := range m.regions {
		if r.Perm&uc.PermExec != 0 && !r.Zero {
			begin, end = min(begin, uint64(r.Addr)), max(end, r.End())
		}
	}
	if begin >= end {
		begin, end = uint64(pc), uint64(pc)+2
	}
	if err := m.saveCheckpoint(uint64(pc) | 1); err != nil {
		return fault{}, err
	}
	about := func(at uint32) string {
		return fmt.Sprintf("imprecise data bus error: %d-byte write to %#08x by the store at %#08x (buffered; the stacked PC %#08x is after it, BFAR not valid)",
			inv.size, inv.addr, pc, at)
	}
	for _, steps := range []uint64{ImpreciseDelay + 1, 1} {
		if err := m.tr.SetExactPC(true, uint32(begin), uint32(end-1)); err != nil {
			return fault{}, err
		}
		m.tr.SetExactStop(steps + 1)
		m.tr.ClearCheckFault()
		m.invalid, m.intrValid = invalidAccess{}, false
		err := m.start(uint64(pc)|1, returnAddr, left)
		cf, ok := m.tr.CheckFault()
		m.tr.SetExactStop(0)
		m.tr.SetExactPC(false, 0, 0)
		m.tr.ClearCheckFault()
		if m.hookErr != nil {
			return fault{}, m.hookErr
		}
		if ok && cf.Kind == uc.CheckStopped && err == nil && !m.intrValid && m.entryFault == nil {
			if err := m.eng.RegWrite(uc.RegPC, uint64(cf.PC)|1); err != nil {
				return fault{}, err
			}
			return fault{exc: excBusFault, cfsr: cfsrIMPRECISERR, pc: cf.PC, about: about(cf.PC)}, nil
		}
		m.entryFault = nil
		if err := m.restoreCheckpoint(); err != nil {
			return fault{}, err
		}
	}
	return fault{}, fmt.Errorf("imprecise store at %#08x: could not run past the store", pc)
}
