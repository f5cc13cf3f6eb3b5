// Package cfi is faultline's DWARF call frame information strategy: it
// unwinds a Cortex-M frame with the .debug_frame (and .eh_frame) tables
// that GCC and clang emit whenever they compile with -g, as GDB and
// probe-rs do.
//
// The decoding of the sections, the FDE index and the evaluation of the
// call frame instructions into rule rows live in the sub-package frame
// (one package per DWARF concern, like delve's pkg/dwarf/frame). This
// package adds what is specific to unwinding a crashed Cortex-M:
//
//   - Table loads both sections of a Program once and indexes their FDEs,
//     leaving out those of code that --gc-sections removed (relocated to
//     address 0, cortex-m.md 6.4) unless a function really starts at 0.
//   - Unwind applies a row to a frame: the CFA from its register rule, the
//     caller's registers from theirs (AAPCS defaults for registers without
//     a rule: r4-r11 and s16-s31 keep their value, r0-r3, r12, s0-s15 and
//     FPSCR become unknown), the return address from the CIE's return
//     address column.
//   - Unwinder implements unwinders.Unwinder ("cfi").
//
// The row is looked up at the frame's exact PC for frame 0 and for the
// frame right after an exception frame (those PCs were interrupted, and
// the instruction at PC has not run), and inside the call instruction for
// every other frame (the PC is a return address; see Step).
//
// Where the program has no FDE for a PC (hand-written assembly, libraries
// built without -g, a stripped ELF) the strategy declines with
// unwinders.ErrNotApplicable and the walk lets the next strategy try.
//
// References: DWARF 5 section 6.4 (call frame information); "DWARF for
// the Arm Architecture" (IHI 0040) for register numbers; AAPCS (IHI 0042)
// section 6.1.1 for the callee-saved registers.
package cfi
