package emu

// Lazy FP state preservation (B1.5.7). Exception entry with an active FP
// context and FPCCR.LSPEN reserves the room for s0-s15 and FPSCR in the
// frame and sets FPCCR.LSPACT and FPCAR (enterException); the first FP
// instruction executed while LSPACT is set writes the registers there and
// clears it. Unicorn has no FPCCR, so C code hooks on the firmware's FP
// instructions do the write (uc/lazyfp.c). That matters to an RTOS: its
// context switch saves s16-s31 with VSTMDB while LSPACT is set, which
// stores the interrupted task's s0-s15 into its frame; without it the task
// would later be resumed with another task's registers, and the dump's
// saved contexts would hold stale stack bytes.
//
// While the guest runs, the hooks own LSPACT: lazyFPPull brings it back
// into the SCS model before the harness reads FPCCR, lazyFPPush hands the
// model's value to the hooks after the harness or the guest changed it.

// lazyFPPull clears FPCCR.LSPACT in the model when an FP instruction has
// preserved the registers since it was set.
func (m *machine) lazyFPPull() {
	if m.cpu.fp && m.tr != nil && m.scs.FPCCR&fpccrLSPACT != 0 && !m.tr.LazyFP() {
		m.scs.FPCCR &^= fpccrLSPACT
	}
}

// lazyFPPush arms (or disarms) the hooks from the model's LSPACT and FPCAR.
func (m *machine) lazyFPPush() {
	if m.cpu.fp && m.tr != nil {
		m.tr.SetLazyFP(m.scs.FPCCR&fpccrLSPACT != 0, m.scs.FPCAR)
	}
}

// watchFP installs the preservation hook on every FP instruction of the
// firmware (on cores with an FPU).
func (m *machine) watchFP() error {
	if !m.cpu.fp {
		return nil
	}
	for _, a := range m.img.fpInsns() {
		if err := m.tr.WatchFP(a); err != nil {
			return err
		}
	}
	return nil
}

// fpInsns returns the address of every halfword-aligned FP instruction
// encoding in executable flash: a coprocessor instruction (first halfword
// 111x 11xx xxxx xxxx) for coprocessor 10 or 11 (second halfword bits
// 11:9 = 101), which is every FP instruction of ARMv7-M and ARMv8-M
// (A6.4, A7.3). A halfword starting with those bits always begins a 32-bit
// instruction; a false match inside another instruction or in literal
// data never executes, so its hook never runs.
func (img *image) fpInsns() []uint32 {
	return img.scanFlash(func(hw1, hw2 uint16) bool {
		return hw1&0xEC00 == 0xEC00 && hw2&0x0E00 == 0x0A00
	})
}
