package emu

import (
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Access checks Unicorn does not make (the C side is emu/uc/check.c):
//
//   - MPU for accesses Unicorn allows. Data accesses: a C memory hook
//     (UC_HOOK_MEM_READ|WRITE) that evaluates the MPU (regions, subregions,
//     AP for the current privilege, HFNMIENA/FAULTMASK) on every load and
//     store. Unicorn 2.0.1 decides at translation time whether loads and
//     stores take the inline TLB fast path, and the mere existence of a
//     memory hook, whatever its address range, sends every load/store of
//     every block translated meanwhile through the helper. A hook "bounded
//     to the regions' pages" is therefore not possible; instead the hook is
//     installed on ARMv7-M/ARMv8-M cores before the first block is
//     translated and stays for the whole run (it returns at once while
//     neither the MPU nor UNALIGN_TRP is on), so turning a check on never
//     needs a translation-cache flush. Fetches: C code hooks
//     bounded to the executable address ranges where the MPU denies a fetch
//     for some privilege (XN regions, no-access regions, the background
//     region without PRIVDEFENA), so only code in those ranges is slowed.
//   - CCR.UNALIGN_TRP (B3.2.8): the same data hook faults halfword and word
//     accesses that are not aligned.
//   - ARMv7-M instructions that always need aligned addresses (A3.2.1):
//     LDM/STM, LDRD/STRD, LDREX/STREX(H), VLDR/VSTR/VLDM/VSTM with a base
//     other than SP or PC get a C code hook each at their address (found by
//     scanning the executable image, like SDIV/UDIV), which checks the base
//     register before the instruction runs. ARMv6-M needs nothing: Unicorn's
//     Cortex-M0 already faults every unaligned access.
//
// When the firmware writes CCR or an MPU register, the SCS model marks the
// checks dirty; at the next block boundary the event handler stops the
// emulation (the block has not run) and start() applies the new checks
// outside the emulation (installing hooks and flushing translated blocks is
// not safe from inside a hook), then resumes at the same PC.
//
// A check made by a code hook stops before its instruction runs, so the
// state is exact. The data hook runs inside the access: Unicorn then exits
// the block with a stale PC, and the destination of a load may already be
// written. exactCheckPC restores the last checkpoint and replays twice with
// the exact-PC hook on the faulting block: once to learn which execution of
// which instruction faulted, once more to stop just before it.

// checksState is what the C checks depend on.
type checksState struct {
	alignTrap bool
	ctrl      uint32
	rbar      [16]uint32
	rlim      [16]uint32
}

func (m *machine) wantChecks() checksState {
	s := &m.scs
	if m.cpu.v6m {
		return checksState{}
	}
	st := checksState{alignTrap: s.CCR&ccrUNALIGNTRP != 0, ctrl: s.MPUCtrl}
	if st.ctrl&mpuEnable != 0 {
		st.rbar, st.rlim = s.MPURBAR, s.MPURASR
	}
	return st
}

// checksChanged is called after every SCS write.
func (m *machine) checksChanged() bool {
	return m.checksOn && m.wantChecks() != m.checks
}

// syncChecks makes the C checks match the SCS model. It runs outside the
// emulation.
func (m *machine) syncChecks() error {
	if !m.checksOn {
		return nil
	}
	want := m.wantChecks()
	if want == m.checks && m.checksApplied {
		return nil
	}
	t := m.tr
	mpuOn := want.ctrl&mpuEnable != 0
	t.SetChecks(want.alignTrap, mpuOn, m.cpu.v8m, want.ctrl, &want.rbar, &want.rlim)
	// The data hook costs every load and store of the blocks translated
	// while it exists a trip through Unicorn's helper (about 1.5-2x on
	// load/store-heavy code), so it is installed only once a check needs
	// it, and then for good. The blocks translated before are dropped one
	// by one (Tracker.DropSeen: the block hook records each block that
	// ran meanwhile), not with a full flush of the translation cache,
	// which in Unicorn 2.0.1 costs 0.2-0.4 s and touches 1 GiB per run.
	if want.alignTrap || mpuOn {
		// The allocator's blocks translated without the hook
		// (pretranslate.go) must check these accesses too.
		if err := m.dropAllocatorBlocks(); err != nil {
			return err
		}
		m.entryArmed = false
		t.SetEntryStop(false)
	}
	if (want.alignTrap || mpuOn) && !t.MemHook() {
		if err := t.SetMemHook(true); err != nil {
			return err
		}
		start := time.Now()
		if _, err := t.DropSeen(); err != nil {
			return err
		}
		m.flushTime += time.Since(start)
		m.flushes++
	}
	if err := t.ClearWatches(m.alignWatches); err != nil {
		return err
	}
	if mpuOn {
		for _, r := range m.fetchDenyRanges() {
			// From the halfword below: a 32-bit instruction there is
			// half fetched from the range (the hook checks both
			// halves).
			lo := r[0]
			if lo >= 2 {
				lo -= 2
			}
			if err := t.WatchXN(lo, r[1]); err != nil {
				return err
			}
		}
	}
	m.checks, m.checksApplied = want, true
	return nil
}

// fetchDenyRanges returns the inclusive address ranges of executable memory
// where the MPU, as programmed, denies an instruction fetch for privileged
// code, or for unprivileged code inside an enabled region. Not watched: an
// unprivileged fetch from the background region (no region, PRIVDEFENA):
// watching it would put a code hook on every instruction of firmware that
// relies on PRIVDEFENA for its privileged code.
func (m *machine) fetchDenyRanges() [][2]uint32 {
	s := &m.scs
	var out [][2]uint32
	for _, r := range m.regions {
		if r.Perm&uc.PermExec == 0 || r.Zero {
			continue
		}
		lo, hi := uint64(r.Addr), r.End()
		// Cut points: every region and subregion boundary inside [lo, hi).
		cuts := []uint64{lo, hi}
		for n := range s.MPURASR {
			b, e, sub, ok := s.mpuRegionBounds(n)
			if !ok {
				continue
			}
			step := e - b
			if sub {
				step /= 8
			}
			for a := b; a <= e; a += step {
				if a > lo && a < hi {
					cuts = append(cuts, a)
				}
			}
		}
		sort.Slice(cuts, func(i, j int) bool { return cuts[i] < cuts[j] })
		for i := 0; i+1 < len(cuts); i++ {
			a, b := cuts[i], cuts[i+1]
			if a == b {
				continue
			}
			if s.mpuDeniedPriv(uint32(a), mpuFetch, true) || (s.mpuCovered(uint32(a)) && s.mpuDeniedPriv(uint32(a), mpuFetch, false)) {
				if n := len(out); n > 0 && uint64(out[n-1][1])+1 == a {
					out[n-1][1] = uint32(b - 1)
				} else {
					out = append(out, [2]uint32{uint32(a), uint32(b - 1)})
				}
			}
		}
	}
	return out
}

// mpuCovered reports whether an enabled region (and subregion) contains a.
func (s *SCS) mpuCovered(a uint32) bool {
	if s.v8m {
		_, _, hit, _ := s.mpuLookupV8(a)
		return hit
	}
	_, _, hit := s.mpuLookupV7(a)
	return hit
}

// mpuRegionBounds returns region n's [base, end) and whether it has
// subregions, if it is enabled.
func (s *SCS) mpuRegionBounds(n int) (base, end uint64, sub, ok bool) {
	if s.v8m {
		rlar := s.MPURASR[n]
		if rlar&1 == 0 {
			return 0, 0, false, false
		}
		return uint64(s.MPURBAR[n] &^ 0x1f), uint64(rlar|0x1f) + 1, false, true
	}
	rasr := s.MPURASR[n]
	sf := (rasr >> 1) & 0x1f
	if rasr&1 == 0 || sf < 4 {
		return 0, 0, false, false
	}
	size := uint64(1) << (sf + 1)
	b := uint64(s.MPURBAR[n]) &^ (size - 1)
	return b, b + size, size >= 256, true
}

// watchAligned installs the alignment check on every always-aligned
// instruction in executable memory (ARMv7-M and ARMv8-M Mainline).
func (m *machine) watchAligned() error {
	if m.cpu.v6m {
		return nil
	}
	for _, c := range m.img.chunks {
		exec := false
		for _, r := range m.img.regions {
			if r.contains(c.addr) && r.Perm&uc.PermExec != 0 {
				exec = true
			}
		}
		if !exec {
			continue
		}
		d := c.data
		for i := 0; i+4 <= len(d); i += 2 {
			hw1 := binary.LittleEndian.Uint16(d[i:])
			hw2 := binary.LittleEndian.Uint16(d[i+2:])
			if uc.AlignedInsn(hw1, hw2) {
				if err := m.tr.WatchAligned(c.addr + uint32(i)); err != nil {
					return err
				}
			}
		}
	}
	m.alignWatches = m.tr.Watches()
	return nil
}

// start runs the guest like Engine.Start, applying check changes the
// firmware made (see syncChecks) and resuming until the run ends for
// another reason.
func (m *machine) start(pc, until uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		m.resyncStop = false
		left := time.Until(deadline)
		if left <= 0 {
			left = time.Microsecond
		}
		err := m.eng.Start(pc, until, left, 0)
		if !m.resyncStop || m.hookErr != nil {
			return err
		}
		m.resyncStop = false
		if err := m.syncChecks(); err != nil {
			return err
		}
		cur, err := m.eng.RegRead(uc.RegPC)
		if err != nil {
			return err
		}
		pc = cur | 1
		if m.chunk != 0 && !m.replaying {
			// A checkpoint here lets a replay start with these checks
			// already applied (no second flush).
			if err := m.saveCheckpoint(pc); err != nil {
				return err
			}
			m.nextCheckpoint = m.tr.Insns() + m.chunk
		}
		m.updateEvents()
		if time.Now().After(deadline) {
			return nil
		}
	}
}

// exactCheckPC finds the instruction whose data access failed a C check
// (see the package comment above) and leaves the core just before it. It
// returns the instruction's address and IT state.
func (m *machine) exactCheckPC(cf uc.CheckFault, timeout time.Duration) (uint32, uint8, error) {
	// The block that was running when the check failed: after the data
	// hook stops the emulation the rest of that block still runs, and the
	// next block's hook may run too (issue 13, defect 7c: a conditional
	// store in an IT block followed by a return was then looked for in
	// the caller's block).
	blk, size := cf.Block, cf.BlockSize
	if size == 0 {
		blk, size = m.tr.Block()
	}
	if size == 0 {
		size = 2
	}
	replay := func(stopAt uint64) (uc.CheckFault, error) {
		if err := m.restoreCheckpoint(); err != nil {
			return uc.CheckFault{}, err
		}
		if err := m.tr.SetExactPC(true, blk, blk+size-1); err != nil {
			return uc.CheckFault{}, err
		}
		m.tr.SetExactStop(stopAt)
		m.tr.ClearCheckFault()
		m.tr.SetBudget(0)
		m.replaying = true
		m.updateEvents()
		m.invalid, m.intrValid = invalidAccess{}, false
		until := uint64(returnAddr)
		if m.mainAddr != 0 && !m.setsDone {
			until = uint64(m.mainAddr)
		}
		err := m.start(m.cp.pc, until, timeout)
		m.replaying = false
		if m.hookErr != nil {
			return uc.CheckFault{}, m.hookErr
		}
		got, ok := m.tr.CheckFault()
		if !ok {
			return uc.CheckFault{}, fmt.Errorf("replaying the last chunk to find the instruction that failed the %s check did not repeat it (%v)", checkName(cf.Kind), err)
		}
		return got, nil
	}
	defer func() {
		m.tr.SetExactStop(0)
		m.tr.SetExactPC(false, 0, 0)
	}()
	got, err := replay(0)
	if err != nil {
		return 0, 0, err
	}
	if got.Kind != cf.Kind || got.Addr != cf.Addr {
		return 0, 0, fmt.Errorf("the replay failed a different check (%s at %#08x, want %s at %#08x)", checkName(got.Kind), got.Addr, checkName(cf.Kind), cf.Addr)
	}
	// The count and PC when the check failed, not after the block ran on.
	k, pc := got.Exact, got.ExactPC
	if k == 0 {
		return 0, 0, fmt.Errorf("the failed %s check at %#08x is outside the block %#08x+%d", checkName(cf.Kind), cf.Addr, blk, size)
	}
	got, err = replay(k)
	if err != nil {
		return 0, 0, err
	}
	if got.Kind != uc.CheckStopped || got.PC != pc {
		return 0, 0, fmt.Errorf("the second replay stopped at %#08x (%s), want before %#08x", got.PC, checkName(got.Kind), pc)
	}
	it := m.tr.LastIT()
	m.tr.ClearCheckFault()
	if err := m.eng.RegWrite(uc.RegPC, uint64(pc)|1); err != nil {
		return 0, 0, err
	}
	return pc, it, nil
}

func checkName(kind int) string {
	switch kind {
	case uc.CheckUnaligned:
		return "alignment"
	case uc.CheckMPUData:
		return "MPU data access"
	case uc.CheckMPUFetch:
		return "MPU fetch"
	case uc.CheckStopped:
		return "replay stop"
	}
	return fmt.Sprintf("check %d", kind)
}

// checkFault turns a failed C check into the fault the core takes.
func (m *machine) checkFault(cf uc.CheckFault, left time.Duration) (fault, error) {
	pc := cf.PC
	var it uint8
	if cf.Kind == uc.CheckMPUData || (cf.Kind == uc.CheckUnaligned && cf.PC == 0) {
		var err error
		if pc, it, err = m.exactCheckPC(cf, left); err != nil {
			return fault{}, err
		}
	} else {
		m.tr.ClearCheckFault()
	}
	what := "read from"
	if cf.Write {
		what = "write to"
	}
	switch cf.Kind {
	case uc.CheckMPUFetch:
		return fault{exc: excMemManage, cfsr: cfsrIACCVIOL, pc: pc,
			about: fmt.Sprintf("instruction fetch from %#08x denied by the MPU (execute-never or no access)", pc)}, nil
	case uc.CheckMPUData:
		return fault{exc: excMemManage, cfsr: cfsrDACCVIOL | cfsrMMARVALID, addr: cf.Addr, pc: pc, it: it,
			about: fmt.Sprintf("MPU access violation: %d-byte %s %#08x", cf.Size, what, cf.Addr)}, nil
	}
	about := fmt.Sprintf("unaligned %d-byte access at %#08x with CCR.UNALIGN_TRP set", cf.Size, cf.Addr)
	if cf.PC != 0 {
		about = fmt.Sprintf("unaligned address %#08x for an instruction that needs %d-byte alignment (LDM/STM/LDRD/STRD/LDREX/STREX/VLDR/VSTR)", cf.Addr, cf.Size)
	}
	return fault{exc: excUsageFault, cfsr: cfsrUNALIGNED, pc: pc, it: it, about: about}, nil
}
