// Package exidx is faultline's EHABI strategy: it unwinds a Cortex-M frame
// with the .ARM.exidx / .ARM.extab tables that GCC and clang emit for C++
// and for C built with -funwind-tables.
//
// The package has three layers:
//
//   - Table decodes the index (EHABI section 6: prel31 function offsets,
//     EXIDX_CANTUNWIND, inline compact entries) and the exception-handling
//     table entries it points to (section 7: the compact model with
//     personality routines 0, 1 and 2, and the generic model with a prel31
//     personality routine such as GCC's __gxx_personality_v0). The index is
//     checked and decoded once; Lookup is a binary search.
//   - Opcode decodes the unwinding instructions of EHABI section 10.3 from an
//     entry's byte stream; Execute runs them against a virtual register set
//     (section 10.3's vsp model) reading the stack through
//     unwinders.Memory.
//   - Unwinder implements unwinders.Unwinder ("exidx"): it looks up the
//     entry for a frame, runs its opcodes and returns the caller frame.
//
// EHABI describes a function's frame only after its prologue and before its
// epilogue, so the tables are trusted at call sites (return addresses).
// For a frame whose PC was interrupted (frame 0, or the frame right after an
// exception frame) the strategy first proves from the instructions that the
// PC lies past the prologue and outside any epilogue, else it declines
// (cortex-m.md 5).
//
// Everything decoded here comes from firmware images that may be corrupt or
// hostile: every loop is bounded by the section sizes and by the EHABI
// encoding limits (at most 255 extra opcode words per entry, a uleb128 of at
// most 5 bytes), and malformed input yields an error, never a panic or a
// hang.
//
// Reference: "Exception Handling ABI for the Arm Architecture" (EHABI,
// IHI 0038), sections 6 (the index table), 7 (the exception-handling table),
// 8-9 (personality routines) and 10 (the ARM-defined compact model and its
// unwinding instructions).
package exidx
