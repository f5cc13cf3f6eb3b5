package uc

// ShadowFrame is one entry of the shadow call stack, oldest first.
type ShadowFrame struct {
	// Return is the return address of a call (bit 0 clear), or for an
	// exception marker the PC that was interrupted.
	Return uint32
	// SP is the stack pointer at the call, or for a marker the address of
	// the exception frame.
	SP uint32
	// Exception is the exception number for a marker, 0 for a call.
	Exception int
	// PSP is set for a call made in Thread mode on the process stack, and
	// for a marker whose interrupted code ran on the process stack.
	PSP bool
	// Target is the called address of a call.
	Target uint32
	// InterruptedSP is, for a marker, the interrupted code's SP before the
	// exception frame was pushed.
	InterruptedSP uint32
	prevBase      uint32
}

// TrackerState is a copy of the tracker's run state for checkpoints.
type TrackerState struct {
	Insns    uint64
	Frames   []ShadowFrame
	base     uint32
	prevEnd  uint32
	prevCall int32
	curAddr  uint32
	curSize  uint32
}
