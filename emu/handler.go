package emu

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// Semihosting operations (ARM "Semihosting for AArch32 and AArch64",
// version 2.0: SYS_WRITEC 0x03, SYS_WRITE0 0x04, SYS_WRITE 0x05, SYS_EXIT
// 0x18, SYS_EXIT_EXTENDED 0x20). On M-profile the call is BKPT 0xAB with the
// operation in r0 and its parameter in r1; the result goes to r0.
const (
	shWriteC       = 0x03
	shWrite0       = 0x04
	shWrite        = 0x05
	shExit         = 0x18
	shExitExtended = 0x20

	adpStoppedApplicationExit = 0x20026

	// handlerSlice is how many instructions the handler runs between two
	// looks at where it is (runHandler).
	handlerSlice = 20_000
	// maxSemihostString bounds SYS_WRITE0 and SYS_WRITE.
	maxSemihostString = 1 << 16
)

// semihosting serves a BKPT 0xAB semihosting call from the interrupt hook
// (Unicorn reports BKPT as interrupt 7 with PC at it). It returns false for
// any other BKPT, which then escalates like a debug event. Output goes to
// Config.Stdout/Stderr; exits end the run.
func (m *machine) semihosting() bool {
	pc := m.reg(uc.RegPC)
	var insn [2]byte
	if m.eng.MemRead(uint64(pc), insn[:]) != nil || binary.LittleEndian.Uint16(insn[:]) != 0xBEAB {
		return false
	}
	op, arg := m.reg(uc.RegR(0)), m.reg(uc.RegR(1))
	result := uint32(0)
	switch op {
	case shWriteC:
		var c [1]byte
		if m.eng.MemRead(uint64(arg), c[:]) == nil {
			m.semihostOut(1, c[:])
		}
	case shWrite0:
		m.semihostOut(1, m.cString(arg))
	case shWrite:
		var blk [12]byte
		if m.eng.MemRead(uint64(arg), blk[:]) != nil {
			result = ^uint32(0)
			break
		}
		h := binary.LittleEndian.Uint32(blk[0:])
		p := binary.LittleEndian.Uint32(blk[4:])
		n := min(binary.LittleEndian.Uint32(blk[8:]), maxSemihostString)
		buf := make([]byte, n)
		if m.eng.MemRead(uint64(p), buf) != nil {
			result = n
			break
		}
		m.semihostOut(h, buf)
	case shExit:
		code := 1
		if arg == adpStoppedApplicationExit {
			code = 0
		}
		m.semihost = semihostState{exited: true, exitCode: code,
			reason: fmt.Sprintf("the firmware exited through semihosting SYS_EXIT (reason %#x, status %d)", arg, code)}
	case shExitExtended:
		var blk [8]byte
		code := 1
		if m.eng.MemRead(uint64(arg), blk[:]) == nil {
			code = int(int32(binary.LittleEndian.Uint32(blk[4:])))
		}
		m.semihost = semihostState{exited: true, exitCode: code,
			reason: fmt.Sprintf("the firmware exited through semihosting SYS_EXIT_EXTENDED with status %d", code)}
	default:
		result = ^uint32(0) // not supported: -1
	}
	if m.semihost.exited {
		m.eng.Stop()
		return true
	}
	if err := m.eng.RegWrite(uc.RegR(0), uint64(result)); err != nil {
		m.fail(err)
		return true
	}
	if err := m.eng.RegWrite(uc.RegPC, uint64(pc+2)|1); err != nil {
		m.fail(err)
	}
	return true
}

func (m *machine) semihostOut(handle uint32, b []byte) {
	if m.replaying {
		return // written already, before the replay of the last chunk
	}
	w := m.cfg.Stdout
	if handle == 2 {
		w = m.cfg.Stderr
	}
	if w == nil {
		w = io.Discard
	}
	w.Write(b)
}

// cString reads a NUL-terminated string of at most maxSemihostString bytes.
func (m *machine) cString(addr uint32) []byte {
	var out []byte
	var chunk [64]byte
	for len(out) < maxSemihostString {
		if m.eng.MemRead(uint64(addr), chunk[:1]) != nil || chunk[0] == 0 {
			break
		}
		out = append(out, chunk[0])
		addr++
	}
	return out
}

// runHandler continues from the fault handler's first instruction (the
// state Result already holds) until the handler halts in a branch-to-self
// loop, exits through semihosting, faults again, returns to code that
// cannot run, or a bound (instructions, timeout, ctx) is reached. Each of
// these ends it with a HandlerOutcome, not an error.
func (m *machine) runHandler(ctx context.Context, deadline time.Time) (*HandlerOutcome, error) {
	start := m.tr.Insns()
	out := &HandlerOutcome{}
	pc := uint64(m.reg(uc.RegPC)) | 1
	finish := func(reason string) (*HandlerOutcome, error) {
		out.Reason = reason
		out.PC = uint32(pc &^ 1)
		out.Insns = m.tr.Insns() - start
		return out, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return finish(fmt.Sprintf("was still running when the timeout of %v was reached", m.cfg.Timeout))
		}
		insns := m.tr.Insns()
		if insns >= m.cfg.MaxInsns {
			return finish(fmt.Sprintf("was still running at the instruction limit of %d", m.cfg.MaxInsns))
		}
		m.tr.SetBudget(min(insns+handlerSlice, m.cfg.MaxInsns))
		m.invalid, m.intrValid, m.hookErr = invalidAccess{}, false, nil
		err := m.start(pc, returnAddr, left)
		var pe *uc.CallbackPanicError
		if errors.As(err, &pe) {
			return nil, err
		}
		if m.hookErr != nil {
			return nil, m.hookErr
		}
		pc = uint64(m.reg(uc.RegPC)) | 1
		if m.semihost.exited {
			out.Exited, out.ExitCode = true, m.semihost.exitCode
			return finish(m.semihost.reason)
		}
		if m.tr.BudgetHit() {
			// The block hook stopped the run before the block it was
			// entering executed (it would have crossed the budget);
			// Unicorn's PC may still name an earlier block
			// (docs/unicorn.md, trap 2), so resume at the block.
			if a, _ := m.tr.Block(); a != 0 {
				pc = uint64(a) | 1
			}
			if m.branchToSelf(uint32(pc &^ 1)) {
				return finish(fmt.Sprintf("halted in a branch-to-self loop at 0x%08x (%s)", pc&^1, m.img.funcAt(uint32(pc&^1))))
			}
			if m.tr.Insns()+m.tr.BudgetLeft() >= m.cfg.MaxInsns {
				// The next block would cross the instruction limit
				// itself: the handler is stopped before it.
				return finish(fmt.Sprintf("was still running at the instruction limit of %d", m.cfg.MaxInsns))
			}
			continue
		}
		if ef := m.entryFault; ef != nil {
			m.entryFault = nil
			return finish(fmt.Sprintf("stopped: exception entry stacking faulted (%s)", bitNames(ef.cfsr, 0)))
		}
		if cf, ok := m.tr.CheckFault(); ok {
			m.tr.ClearCheckFault()
			return finish(fmt.Sprintf("stopped with a failed %s check at %#08x (a fault inside the handler: the core would lock up or escalate)", checkName(cf.Kind), cf.Addr))
		}
		if err != nil || m.intrValid {
			return finish(fmt.Sprintf("stopped with %v (a fault inside the handler: the core would lock up or escalate)", describeStop(err, m.intrValid, m.intr)))
		}
		if uint32(pc) == returnAddr {
			return finish("returned to the reset LR 0xFFFFFFFF")
		}
	}
}

// branchToSelf reports whether the instruction at pc is B to itself:
// B.N (0xE7FE) or B.W (0xF7FF 0xBFFE).
func (m *machine) branchToSelf(pc uint32) bool {
	var b [4]byte
	if m.eng.MemRead(uint64(pc), b[:2]) != nil {
		return false
	}
	if binary.LittleEndian.Uint16(b[:]) == 0xE7FE {
		return true
	}
	if m.eng.MemRead(uint64(pc), b[:]) != nil {
		return false
	}
	return binary.LittleEndian.Uint16(b[:]) == 0xF7FF && binary.LittleEndian.Uint16(b[2:]) == 0xBFFE
}

func describeStop(err error, intr bool, n uint32) string {
	if intr {
		return fmt.Sprintf("CPU exception %d", n)
	}
	return err.Error()
}
