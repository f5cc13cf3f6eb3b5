// Package prologue is faultline's prologue-analysis unwinding strategy
// ("prologue"): it finds a frame's caller by decoding the function's own
// code, with no unwind tables and no frame-pointer chain.
//
// # What it does
//
// For a frame whose PC lies in a known Thumb function (Program.FuncAt of
// the frame's LookupPC), the strategy decodes the function from its first
// instruction up to the frame's PC with the Thumb decoder
// (unwinders/thumb), simulating what the code did to the stack:
//
//   - SP adjustments: PUSH T1/T2/T3 (STMDB SP!, STR Rt,[SP,#-4]!), STR and
//     STRD pre-indexed with writeback, VPUSH of D and S registers, SUB SP
//     (imm7, SUB.W with a ThumbExpandImm constant, SUBW imm12), ADD SP with a
//     negative immediate, and ADD/SUB SP, Rm where Rm holds a constant
//     tracked from MOVW/MOVT, MOV and MVN immediates, ADR and literal loads
//     (cortex-m.md section 3);
//   - where LR and the callee-saved registers r4-r11 and s16-s31 (d8-d15)
//     were stored, relative to the SP at function entry (the CFA);
//   - registers that hold SP-relative values: the frame pointer set-up
//     (MOV r7, SP; ADD r7, SP, #N, both GCC's and clang's forms,
//     cortex-m.md section 4), and any other copy of SP. When SP later moves
//     by an amount the code does not reveal (alloca, a VLA: SUB SP, Rn with
//     Rn unknown), the CFA is recovered as (value of that register in the
//     frame) - offset, provided the frame knows the register's value and it
//     was not overwritten since; MOV SP, r7 and SUB.W SP, r7, #N restore a
//     known depth.
//
// The caller's SP is the CFA; its PC is the raw word in LR's slot (or LR
// itself for a leaf that never saved it); its callee-saved registers are read
// from their slots. Registers the function neither saved nor wrote keep the
// frame's values; r0-r3, r12, s0-s15 and LR are unknown in the caller.
//
// # Which instructions count
//
// For an interrupted PC (frame 0, or the frame right after an exception
// frame; Frame.ReturnAddress false) every instruction before the PC has run,
// the one at the PC has not: a PC in the middle of a prologue sees a
// partially built frame. For a return address the PC follows a call, so
// every instruction up to and including the call counts; the decoder must
// land exactly on the return address after a call, or the scan is out of
// step (literal data decoded as code) and the strategy declines.
//
// # Branches: the path from the entry to the PC
//
// The scan is a linear sweep, not a path search. It relies on the invariant
// every compiler's call-frame information also relies on: at any given
// instruction the stack depth is the same on every path that reaches it
// (except after alloca, where only a frame register pins the CFA). So:
//
//   - a conditional branch (B<c>, CBZ, CBNZ, an IT block) is stepped over:
//     the fall-through path is real, and the state at the branch is recorded
//     for its target;
//   - after an unconditional transfer (B, a return, BX, TBB/TBH, POP {PC},
//     LDR PC) the following code is reached only by branches. The sweep
//     skips words it knows to be literal-pool data (targets of earlier LDR
//     literal instructions) and the byte or halfword tables of TBB/TBH, and
//     resumes with the state recorded by an earlier branch to that address
//     when there is one (a real path). Otherwise it resumes with the state of
//     the most recent call or branch site it saw (the "body" level the
//     function ran at after its prologue) and marks the result assumed; an
//     assumed result is accepted only when every SP change seen after
//     resuming is balanced (the depth at the PC equals the body level) or a
//     frame register confirms the CFA. This is the brief's rule "refuse a
//     non-straight path unless the prologue had ended and later SP changes
//     balance", generalised so that the common shapes need no refusal:
//     mid-function epilogues (their pops happen on a path that ends in a
//     return and do not leak into the code after it), loops entered by a
//     forward branch, switch tables.
//   - Shrink-wrapping (GCC's `cbz r0, .Lout; push {r4, lr}; ...; .Lout: bx
//     lr`) falls out of the same rule: the state recorded at the CBZ (no
//     push, LR untouched) is the state at .Lout, so a PC there is a leaf
//     whose caller is LR.
//
// Calls do not end the sweep: they leave SP unchanged and clobber r0-r3,
// r12 and LR.
//
// # Epilogues
//
// For an interrupted PC the strategy first scans forward from the PC
// (at most 16 instructions) for a return sequence: only SP-increasing
// instructions (ADD SP, #imm; POP without PC; VPOP; LDR Rt,[SP],#4; LDRD
// post-indexed; MOV SP, r7 and SUB SP, r7, #N when r7 is known) and
// instructions that write nothing but r0-r3/r12, ending in POP {..., PC}
// (any encoding, LDMIA.W SP! and LDR PC,[SP],#4 included), BX LR, or a tail
// call (B to another function, BX Rm) once the sequence has popped LR. The
// brief asked for SP-increasing instructions only; data processing into
// r0-r12 that does not store (the return value, GCC -O0's "adds r7, #8"
// before "mov sp, r7") is allowed too, with the written registers tracked
// or forgotten. If it finds one, the caller is what
// executing that sequence would produce: the popped words, LR, the final SP.
// This is exact whatever came before (it does not depend on the prologue),
// so it wins over the forward scan. It is not tried inside an IT block (the
// sequence would be conditional) or after a conditional instruction.
//
// # Confidence
//
// ConfidenceHigh when the whole path from the function start to the PC was
// decoded linearly with no branch, no unknown SP change and no assumption,
// or when an epilogue sequence was simulated; ConfidenceMedium otherwise.
//
// # Limits
//
// Every scan is bounded (Unwinder.MaxInsns instructions, default 1024, and
// the function's size); a PC outside any function, a function with no
// known start, ARM-state code, or a PC that the scan cannot reach in step
// makes the strategy decline with an error wrapping
// unwinders.ErrNotApplicable and one of this package's sentinels, so the
// walk tries the next strategy. Code that saves LR in another register (MOV
// r8, LR), switches stacks or restores SP from memory is not understood.
//
// References: ARMv7-M Architecture Reference Manual (DDI 0403E) A7.7 (PUSH,
// POP, STMDB, STR, STRD, SUB (SP minus immediate/register), ADD (SP plus
// immediate), VPUSH, VPOP, TBB/TBH, IT), A5.3.2 (ThumbExpandImm); AAPCS
// (IHI 0042) 5.1.1 (callee-saved r4-r11, s16-s31); cortex-m.md sections 3,
// 4 and 6.
package prologue
