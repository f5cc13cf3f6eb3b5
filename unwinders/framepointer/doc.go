// Package framepointer is faultline's frame-pointer strategy
// ("framepointer"): it unwinds a Cortex-M frame by following the frame
// pointer (r7 in Thumb code, fp = r11 in ARM-state APCS code) to the record
// of the saved frame pointer and return address that the function's
// prologue stored.
//
// Compilers disagree on where r7 points (cortex-m.md section 4):
//
//   - clang: push {r4-r7, lr}; add r7, sp, #12 (or push {r7, lr}; mov r7,
//     sp): r7 points at the {saved r7, lr} record.
//   - GCC 12: push {r7, lr}; sub sp, #N; add r7, sp, #0: r7 points at the
//     bottom of the locals and the record is at r7+N (GCC bug 92172).
//   - ARM-state APCS (-mapcs-frame): mov ip, sp; push {fp, ip, lr, pc}; sub
//     fp, ip, #4: fp points at the saved pc; [fp-4] lr, [fp-8] the caller's
//     sp, [fp-12] the caller's fp.
//
// So the strategy never assumes a layout: it decodes the function's code
// (package thumb) and runs a small data-flow analysis over it (Analyze)
// that tracks, at every instruction, SP and r7 relative to the SP at entry
// and where the entry values of r7, LR and the other callee-saved registers
// were pushed. Where r7 holds "entry SP + k" and the caller's r7 is saved,
// the record's position relative to r7 follows, whatever the compiler; the
// caller's SP is r7 - k. The analysis follows branches (conditional
// branches, CBZ/CBNZ, TBB/TBH tables, loops to a fixed point), so
// shrink-wrapped prologues and epilogues in the middle of a function are
// handled, and a PC before the set-up (mid-prologue) or after the tear-down
// (epilogue) is refused with unwinders.ErrNotApplicable, leaving the frame
// to prologue analysis. A function that never sets up a frame pointer is
// refused too. Results are cached per function.
//
// A function whose prologue cannot be decoded (no symbols, code not in the
// image) is unwound by assuming clang's layout, checked against the stack
// and reported with medium confidence; Options.Strict refuses those
// instead.
//
// Every record read is checked: inside the stack (Target.InStack),
// 4-aligned, at or above the current SP, a caller SP strictly above the
// current one, and an r7 that no earlier frame of the walk used. So cyclic
// chains, r7 = 0 and r7 outside RAM end the walk with a clear error after a
// bounded amount of work.
//
// References: cortex-m.md sections 3 (encodings), 4 (frame pointers) and 6
// (the checklist); ARMv7-M Architecture Reference Manual (DDI 0403E) A5.2,
// A5.3, A7.7; the ARM Procedure Call Standard (APCS-R, "the frame pointer
// and the stack backtrace structure") for ARM-state frames; ARM ARM (DDI
// 0406C) A5 for the few A32 encodings matched.
package framepointer
