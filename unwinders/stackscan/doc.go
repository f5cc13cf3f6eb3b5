// Package stackscan is faultline's last-resort unwinding strategy
// ("stackscan"): it finds a frame's caller by scanning the stack above the
// frame's SP for a word that looks like a return address, and it checks what
// it finds against the code.
//
// It needs no unwind tables, no frame pointer and no prologue analysis, so
// it works on any firmware whose stack survived the crash; in exchange it
// never knows a frame's size, so the caller's SP it reports is an
// approximation and the callee-saved registers of the caller stay unknown.
// Strategies with exact data (exidx, cfi, prologue) run before it in the
// auto chain; unwinders.LinkRegister runs after it.
//
// # Candidates
//
// A stack word is a candidate when it is one of:
//
//   - a Thumb return address: an odd value whose call site lies in a Thumb
//     function of the Program (looked up at value-3, inside the call, so a
//     call to a noreturn function at a function's very end still counts)
//     and whose preceding instruction is a call (unwinders.CallBefore: BL T1
//     over its full J1/J2 range, or BLX Rm; never BX, never a BLX to ARM
//     state, which M-profile cores cannot execute) lying in that function
//     (ARMv7-M ARM A7.7.18, A7.7.19; cortex-m.md 3);
//   - a valid EXC_RETURN value for the Target's profile (ARMv7-M ARM B1.5.8,
//     ARMv8-M ARM D1.2.95) above a plausible hardware-stacked frame: the
//     value an exception handler pushed as its LR;
//   - 0xFFFFFFFF, the reset value of LR that the outermost function of a
//     thread (Reset_Handler, an RTOS thread's entry) saved, unless a
//     neighbouring word holds it too (erased or painted memory). Within 64
//     bytes below a known top of its stack it is verified and the walk
//     ends there (unwinders.StopEndOfStack); deeper below the main stack's
//     known top it is a local holding -1; where the top is unknown it is
//     unverified, weighed like an unverified return address, and a walk
//     that takes it stops with unwinders.StopEndUnverified.
//
// # Verification (the seed technique)
//
// A BL names its target. When that target is the start of the function
// holding the callee frame's PC, or a linker veneer that branches there, the
// candidate is verified: the word is a return address into a call of
// exactly the function being unwound. Verified frames get KindNormal and
// ConfidenceMedium (high is reserved for exact unwind data). A BLX Rm call
// (through a function pointer), a BL to another function (a tail call
// through an intermediate function breaks the match, and so does a stale
// return address) is unverified: KindGuessed, ConfidenceLow. An EXC_RETURN
// candidate is verified when the callee is an exception handler named by
// the vector table (read at VTOR when the dump holds the SCB, else at
// .isr_vector); otherwise it is low.
//
// A frame whose PC was interrupted (frame 0, the frame after an exception
// frame) may still have its return address in LR. Where that is certain
// the step declines and leaves the frame to unwinders.LinkRegister, which
// every chain ends with; where LR verifies as a return from a call of the
// frame's function it is used; see Unwinder.Step.
//
// See Unwinder.Step for how one candidate is chosen among several and for
// the exact frame it returns.
//
// Every scan is bounded (Options.MaxBytes, 64 KiB by default) by the stack's
// top: the range of Target.Stack or Target.ProcessStack that holds SP, else
// a symbol such as _estack, else the end of the mapped memory. Hostile
// memory cannot make a step loop or read more than that budget.
package stackscan
