// Package uc is faultline's thin cgo binding over libunicorn 2.x
// (<unicorn/unicorn.h>, Debian's libunicorn-dev 2.0.1), restricted to what
// the Cortex-M harness in package emu needs: one ARM engine in Thumb mode
// with an M-profile CPU model, memory and MMIO mapping, register access
// (including the M-profile system registers and the FP bank), hooks,
// start/stop, context checkpoints and translation-cache flushing.
//
// The binding follows the measured behaviour in docs/unicorn.md:
//
//   - Open selects the CPU model with uc_ctl(UC_CTL_CPU_MODEL) immediately
//     after uc_open(UC_ARCH_ARM, UC_MODE_THUMB) (trap 1: UC_MODE_MCLASS would
//     force a Cortex-M33, and the model cannot be changed afterwards).
//   - Variadic entry points (uc_ctl, uc_hook_add) are called through tiny C
//     wrappers in bridge.c.
//   - Go callbacks are //export functions reached through C trampolines; the
//     user_data passed to Unicorn is a runtime/cgo.Handle, never a Go
//     pointer. Every Go callback recovers from panics, records the panic and
//     stops the emulation; Engine.Start then returns a *CallbackPanicError.
//   - Hot hooks (the per-block tracker with instruction counting and the
//     shadow call stack, the exact-PC code hook, the divide-by-zero check)
//     are written in C (tracker.c) because each C->Go transition costs about
//     50 ns; see Tracker.
//
// An Engine owns C memory (the engine, hook handles, contexts, the tracker)
// and must be released with Close. An Engine is not safe for concurrent use;
// callbacks run on the goroutine that called Start.
//
// libunicorn is not linked: the first Open (or Available) loads it with
// dlopen ("libunicorn.so.2", then "libunicorn.so"), resolves the functions
// the binding calls with dlsym and checks that it is Unicorn 2.x (ucapi.h,
// ucapi.c, load.go). A process that never emulates never loads it, and
// faultline runs without it installed; Open then returns a *LoadError that
// wraps ErrUnavailable and carries the dlerror text. Building still needs
// the header, <unicorn/unicorn.h> (libunicorn-dev).
//
// When faultline is built without cgo (CGO_ENABLED=0) the package still
// compiles: Open returns ErrUnavailable and every other method returns it
// too.
package uc
