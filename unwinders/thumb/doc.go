// Package thumb decodes the stack-relevant subset of the Thumb and Thumb-2
// instruction sets executed by ARMv6-M, ARMv7-M and ARMv8-M (Cortex-M) cores.
//
// It serves faultline's unwinding strategies: prologue analysis (PUSH, STMDB
// SP!, VPUSH, SUB SP and the constants a large frame is built from),
// frame-pointer unwinding (MOV r7, SP; ADD r7, SP, #N), stack scanning (is
// the instruction before a return address a call?) and the EHABI helpers.
//
// Decode and DecodeAt decode one instruction. Every halfword sequence
// decodes: instructions outside the subset become OpOther with the correct
// length (16 or 32 bits, ARMv7-M ARM A5.1: a halfword whose bits [15:11] are
// 0b11101, 0b11110 or 0b11111 starts a 32-bit instruction) and, for nearly
// every encoding, the set of core registers the instruction writes, so a
// prologue scanner can stop at a branch or notice LR being clobbered.
//
// Like golang.org/x/arch/arm/armasm the instruction set is data: two tables
// (16-bit and 32-bit) of {mask, value, op, argument decoder}, scanned in
// order; the first matching entry whose decoder accepts the bits wins.
// Printing (Inst.String, objdump-compatible syntax) is separate from
// decoding. Decode is stateless: IT blocks (ARMv7-M ARM A7.3) are tracked by
// ITState, which a caller decoding straight-line code applies to each
// instruction in turn; Decoder does that for a range of memory.
//
// Coverage: every ARMv6-M and ARMv7-M (with the FP extension) encoding gets
// its length and written registers; the ARMv8-M additions that change control
// flow or registers (BXNS, BLXNS, SG, TT, load-acquire/store-release) and the
// ARMv8.1-M low-overhead loops (WLS, DLS, LE, ...) and CLRM are recognised
// for their register writes. Advanced SIMD / MVE vector instructions are
// taken to write no core register. ARM (A32) code is not decoded: Cortex-M
// has none.
//
// References: ARMv7-M Architecture Reference Manual, ARM DDI 0403E
// ("ARMv7-M ARM"): A5.2 (16-bit encodings), A5.3 (32-bit encodings), A5.3.2
// (ThumbExpandImm), A7.3 (conditional execution and ITSTATE), A7.7 (the
// alphabetical list of instructions; each decoder names the entry and
// encoding, e.g. "A7.7 PUSH T3"), chapter A6 (the floating-point extension
// register loads and stores: VPUSH, VPOP, VLDM, VSTM). The ARMv8-M ARM (DDI
// 0553) uses the same encodings for every instruction decoded here.
//
// Tests compare the decoder with GNU objdump 2.40 on every instruction of the
// repository's sample firmware and of a random instruction stream; see
// testdata/README.md and the accepted differences in objdump_test.go.
package thumb
