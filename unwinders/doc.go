// Package unwinders is the shared vocabulary of faultline's stack unwinding:
// a memory image of the crashed device, the register file with known and
// unknown values, the Frame, the Unwinder interface that every strategy
// implements, exception-frame stepping for ARMv6-M, ARMv7-M and ARMv8-M, and
// the walk that chains strategies frame by frame and always says why it
// stopped.
//
// The strategies themselves live in sub-packages (exidx, framepointer,
// stackscan, prologue, cfi). They depend only on this package: a strategy
// never imports another strategy, the CLI or the ELF loader. What a strategy
// needs to know about the program (function bounds, sections, symbols) comes
// through the Program interface, which elfsym implements.
//
// References: ARMv7-M Architecture Reference Manual (DDI 0403E) B1.5.6-B1.5.8
// (exception entry, return and the stack frame layout), ARMv8-M Architecture
// Reference Manual (DDI 0553) B3.19-B3.21, ARMv6-M ARM (DDI 0419) B1.5.
package unwinders
