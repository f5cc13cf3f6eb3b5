// Package emu runs Cortex-M firmware in the Unicorn emulator (through the
// binding in emu/uc) until it faults, and captures the state a debugger
// would see at the first instruction of the fault handler, together with
// the exact call stack at the fault as ground truth.
//
// What the harness models, with the architecture references it follows
// (ARMv7-M ARM, DDI 0403E; ARMv6-M ARM, DDI 0419E; ARMv8-M ARM, DDI 0553;
// docs/cortex-m.md sections 1-2; docs/unicorn.md):
//
//   - Loading: the ELF's PT_LOAD segments are written at their load
//     addresses (LMA) and, for initialised data, also at their run
//     addresses (VMA) so that --call works without the startup code. Flash
//     is mapped read/execute, RAM read/write; RAM is sized from the writable
//     segments and the initial SP in vector 0.
//   - The System Control Space (0xE000E000-0xE000EFFF) is an MMIO model (SCS)
//     with read/write semantics: SCB, NVIC, SysTick and MPU registers
//     (B3.2, B3.4, B3.3, B3.5).
//   - Faults are detected as described in docs/unicorn.md and turned into
//     the architectural fault (B1.5.14; CFSR bits in B3.2.15), escalated to
//     HardFault with HFSR.FORCED when the fault is disabled in SHCSR or its
//     priority does not allow it (B1.5.15); ARMv6-M has only HardFault.
//   - The faulting PC is exact: after an unmapped data access Unicorn leaves
//     PC at the start of the block (trap 2), so the harness restores the
//     last checkpoint (taken every chunkInsns instructions from the block
//     hook, at a block boundary) and replays at most that many instructions
//     with a C code hook on the faulting block's addresses only
//     (UC_CTL_TB_REMOVE_CACHE on that range; a full TB flush costs up to a
//     second in Unicorn 2.0.1).
//   - MPU (mpu.go): PMSAv7/PMSAv8 regions decide whether an access Unicorn
//     rejected is a MemManage (DACCVIOL+MMARVALID, IACCVIOL) or a BusFault;
//     accesses Unicorn allows are checked by C hooks while the MPU is
//     enabled (checks.go, emu/uc/check.c), as are CCR.UNALIGN_TRP and the
//     ARMv7-M instructions that always need aligned addresses (A3.2.1).
//   - Stacking errors (exception.go): exception entry checks each stack word
//     against the MPU and the memory map; MSTKERR/STKERR, an incomplete
//     frame, and the derived exception (escalation, or lockup).
//   - One shadow stack per thread (threads.go): an exception return to
//     Thread mode on another frame than the one the exception was taken
//     with is a context switch.
//   - Config.ImpreciseStores (imprecise.go): stores to unmapped memory
//     become IMPRECISERR, taken ImpreciseDelay instructions later.
//   - NVIC, SysTick, PendSV, NMI (nvic.go): pending, enables, priorities,
//     PRIMASK/BASEPRI/FAULTMASK, preemption, nesting and tail-chaining;
//     exceptions are taken from the C block hook before a block runs
//     (writing PC there abandons the block). Config.IRQs raises them at
//     instruction counts; SysTick counts instructions.
//   - Semihosting (BKPT 0xAB: SYS_WRITEC, SYS_WRITE0, SYS_WRITE, SYS_EXIT,
//     SYS_EXIT_EXTENDED) and Config.RunHandler (handler.go).
//   - Exception entry is synthesized (B1.5.6 PushStack, B1.5.7 EXC_RETURN):
//     basic or extended frame on the active stack, the bit-9 alignment pad,
//     EXC_RETURN in LR, the SCB registers, and PC at the handler's first
//     instruction, where Run stops. Exception return (B1.5.8) is unstacked
//     when a handler returns (e.g. from SVCall).
//   - The shadow call stack kept by the C block hook in emu/uc gives
//     Result.Truth. Calls abandoned without a return (a C++ throw reaching
//     a landing pad, longjmp, ARMv6-M switch helpers) are dropped by their
//     SP at each call and when the truth is built (uc/tracker.c, fl_prune;
//     abandon_test.go).
//
// Every run is bounded by an instruction budget and a timeout. When the
// firmware does not fault within them Run returns an error wrapping
// ErrNoFault. Without cgo, Run returns an error wrapping
// uc.ErrUnavailable.
package emu
