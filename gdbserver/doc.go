// Package gdbserver serves a crash dump to GDB over the GDB remote serial
// protocol (GDB manual, appendix E "GDB Remote Serial Protocol"), so that
// `target remote` shows the crashed device as a stopped, read-only target:
// GDB's own backtrace, registers, memory and expressions work on the dump
// exactly as on a live board.
//
// The target (NewTarget) is the dump's registers and a spliced memory image:
// the ELF's loadable segments at the bottom, the dump's memory regions on
// top (design.md, "Core vocabulary"). A Server speaks the protocol on any
// byte stream: a TCP connection from a Listener (sessions are served one
// after another) or a pipe such as `target remote | faultline gdbserver
// --stdio ...`.
//
// # What GDB sees
//
//   - Target description (qXfer:features:read, GDB manual G.5.3 "ARM
//     Features"): org.gnu.gdb.arm.m-profile (r0-r12, sp, lr, pc, xpsr at
//     remote register numbers 0-15 and 25, as in GDB's own
//     arm-m-profile.xml); org.gnu.gdb.arm.m-system with msp and psp, which
//     GDB 13 requires and uses to unwind an exception frame stacked on the
//     other stack, plus primask, basepri, faultmask and control (extra
//     registers are allowed in that feature) at 26-31; and, when the dump
//     holds any FP register, org.gnu.gdb.arm.vfp with d0-d15 built from the
//     pairs s(2n), s(2n+1) and fpscr at 32-48. GDB makes s0-s31 pseudo
//     registers from the d registers itself. When the dump lacks msp or
//     psp the same six registers go in a feature GDB does not interpret,
//     org.faultline.arm.m-system: GDB 13 cannot unwind any exception frame
//     while an m-system stack pointer is unavailable, and without the
//     feature it unwinds from sp (right for the main stack).
//   - Registers the dump does not hold are unavailable ("xxxxxxxx" in g and
//     p replies; GDB prints <unavailable>). A d register is unavailable
//     unless both of its s halves are known.
//   - Memory (m): the spliced image. A read that starts in mapped memory
//     and runs off its end is answered with the readable prefix, which GDB
//     accepts as a partial transfer (it then asks for the rest and gets an
//     error); a read that starts in unmapped memory gets E01, which GDB
//     reports as "Cannot access memory at address ...".
//   - Memory map (qXfer:memory-map:read): the image flattened into disjoint
//     ranges, each typed by the topmost layer that covers it: ELF segments
//     not covered by the dump are "rom", dump regions are "ram". GDB then
//     refuses accesses outside the map itself.
//   - Threads: without an RTOS, one thread, id 1. When package rtos finds
//     a kernel (FreeRTOS, Zephyr; a Zephyr coredump's threads block is
//     placed at _kernel first), every thread: id 1 is the crashing one with
//     the dump's registers, 2..N the others with the registers their saved
//     contexts hold (MSP from the dump, PSP their own SP). qfThreadInfo /
//     qsThreadInfo list them (64 ids a reply), qXfer:threads:read gives
//     their names, qThreadExtraInfo "name, state (what it waits on), prio N"
//     or why the context is lost, T answers OK for a listed id, Hg selects
//     the thread g and p read (per session; 0 and -1 mean thread 1), Hc is
//     accepted. "monitor threads" prints the list and discovery's warnings.
//     The target stops in thread 1 with the signal StopSignal derives from
//     the fault (see StopSignal for the mapping).
//   - Everything is read-only: G, P, M, X answer E01 (GDB: "Could not
//     write register"); Z/z (breakpoints and watchpoints) are unsupported
//     (empty reply; GDB says it cannot insert the breakpoint, and its
//     fallback of writing a breakpoint instruction would get E01); c, C,
//     s, S, vCont;... answer E01, which GDB reports as "Remote failure
//     reply" and treats as a stop. vCont? is unsupported. D (detach)
//     answers OK and ends the session; k (kill) and vKill end it.
//   - "monitor fault" prints the decoded fault, "monitor threads" the
//     threads, "monitor help" the commands; "info threads" shows the
//     exception taken.
//
// # Bounds
//
// A client is untrusted. Packets longer than Config.MaxPacket are read to
// their end and answered E02 without being stored; a packet with a bad
// checksum is NAKed, and after Config.MaxBadPackets bad checksums or
// malformed packets, or more than 4*MaxPacket bytes of line noise, the
// session ends. A session also ends when the client sends nothing for
// Config.IdleTimeout or does not take a reply within Config.WriteTimeout.
package gdbserver
