package exidx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/faultline-dev/faultline/unwinders"
)

// State is the virtual register set of EHABI 10.3 while the unwinding
// instructions run: vsp, the registers as far as they are known, and what
// was popped from the stack.
type State struct {
	VSP uint32
	// Regs holds the register values the instructions use and update:
	// start with the frame's known registers.
	Regs unwinders.Registers
	// Popped holds the registers read from the stack (core registers, and
	// S0-S31 for D0-D15 VFP pops).
	Popped unwinders.Registers

	buf [128]byte // scratch for pops: one allocation per State, not per read
}

// maxOps bounds the instructions one entry may execute. A stream is at most
// 3 + 4*255 bytes, so this never triggers on well-formed input; it keeps
// Execute bounded whatever it is given.
const maxOps = 4096

// Execute runs the unwinding instructions of stream on st until a finish
// instruction or the end of the stream (EHABI 10.3). It does not compute
// the return address: the caller applies "finish" (PC = LR unless PC was
// popped). Errors: ErrRefused for the refuse instruction, ErrBadOpcode for
// spare, reserved, iWMMXt or malformed instructions and for vsp leaving the
// 32-bit address space, ErrRegisterUnknown for vsp = r[n] with r[n]
// unknown, and an error wrapping unwinders.ErrUnmapped when a pop reads
// memory the image does not hold.
func Execute(stream []byte, m unwinders.Memory, st *State) error {
	for i, n := 0, 0; i < len(stream); n++ {
		if n >= maxOps {
			return fmt.Errorf("%w: more than %d instructions", ErrBadOpcode, maxOps)
		}
		op := decodeOp(stream, i)
		i += len(op.Bytes)
		switch op.Op {
		case OpFinish:
			return nil
		case OpVSPAdd:
			v := uint64(st.VSP) + uint64(op.Value)
			if v > 0xFFFFFFFF {
				return fmt.Errorf("%w: vsp 0x%08x + %d wraps past 4 GiB (%v)", ErrBadOpcode, st.VSP, op.Value, op)
			}
			st.VSP = uint32(v)
		case OpVSPSub:
			if st.VSP < op.Value {
				return fmt.Errorf("%w: vsp 0x%08x - %d wraps below 0 (%v)", ErrBadOpcode, st.VSP, op.Value, op)
			}
			st.VSP -= op.Value
		case OpVSPReg:
			v, ok := st.Regs.Get(unwinders.Reg(op.Value))
			if !ok {
				return fmt.Errorf("%w: %v needs r%d", ErrRegisterUnknown, op, op.Value)
			}
			st.VSP = v
		case OpPop:
			if err := popCore(m, st, op.Mask); err != nil {
				return err
			}
		case OpPopVFP:
			if op.Problem != "" {
				return fmt.Errorf("%w: %v", ErrBadOpcode, op)
			}
			if err := popVFP(m, st, int(op.Value), op.Count, op.FSTMFDX); err != nil {
				return err
			}
		case OpPopPAC:
			// EHABI 10.3 remark: the pseudo-register holds the return address
			// authentication code pushed by the PACBTI prologue (v8.1-M PAC
			// r12, push {r12, ...}). It only authenticates the return
			// address; unwinding needs nothing from it but the vsp step.
			if err := readStack(m, st.VSP, "the PAC word"); err != nil {
				return err
			}
			if err := advance(st, 4); err != nil {
				return err
			}
		case OpPACModifier:
			// Names vsp as the PAC modifier for validation: no unwinding
			// effect.
		case OpRefuse:
			return fmt.Errorf("%w (%v)", ErrRefused, op)
		default: // spare, reserved, iWMMXt, truncated
			return fmt.Errorf("%w: %v", ErrBadOpcode, op)
		}
	}
	return nil
}

func advance(st *State, n uint32) error {
	v := uint64(st.VSP) + uint64(n)
	if v > 0xFFFFFFFF {
		return fmt.Errorf("%w: vsp 0x%08x + %d wraps past 4 GiB", ErrBadOpcode, st.VSP, n)
	}
	st.VSP = uint32(v)
	return nil
}

// readErr makes sure a memory error wraps unwinders.ErrUnmapped, whatever
// the Memory implementation returned.
func readErr(err error, what string, addr uint32) error {
	if errors.Is(err, unwinders.ErrUnmapped) {
		return fmt.Errorf("exidx: reading %s at 0x%08x: %w", what, addr, err)
	}
	return fmt.Errorf("exidx: reading %s at 0x%08x: %w: %w", what, addr, unwinders.ErrUnmapped, err)
}

func readStack(m unwinders.Memory, addr uint32, what string) error {
	if _, err := unwinders.ReadU32(m, addr); err != nil {
		return readErr(err, what, addr)
	}
	return nil
}

// popCore pops the core registers of mask, lowest register at the lowest
// address, with one memory read. Popping SP loads vsp from the stack at the
// end of the instruction (EHABI 10.3 remark b).
func popCore(m unwinders.Memory, st *State, mask uint16) error {
	n := uint32(bits.OnesCount16(mask))
	if uint64(st.VSP)+4*uint64(n) > 1<<32 {
		return fmt.Errorf("%w: pop of %d registers at vsp 0x%08x runs past 4 GiB", ErrBadOpcode, n, st.VSP)
	}
	buf := st.buf[:4*n]
	if err := m.Read(st.VSP, buf); err != nil {
		return readErr(err, fmt.Sprintf("%d popped registers", n), st.VSP)
	}
	k := 0
	var sp uint32
	spPopped := false
	for r := 0; r < 16; r++ {
		if mask&(1<<r) == 0 {
			continue
		}
		v := binary.LittleEndian.Uint32(buf[4*k:])
		k++
		reg := unwinders.Reg(r)
		if reg == unwinders.SP {
			sp, spPopped = v, true
			continue
		}
		st.Regs.Set(reg, v)
		st.Popped.Set(reg, v)
	}
	st.VSP += 4 * n
	if spPopped {
		st.VSP = sp
		st.Regs.Set(unwinders.SP, sp)
	}
	return nil
}

// popVFP pops count D registers from first with one memory read: 8 bytes
// each, plus a pad word for the FSTMFDX format (EHABI 10.3 remark d).
// D0-D15 are S0-S31 and become known; D16-D31 do not exist on M-profile
// and are only skipped.
func popVFP(m unwinders.Memory, st *State, first, count int, fstmx bool) error {
	if uint64(st.VSP)+8*uint64(count) > 1<<32 {
		return fmt.Errorf("%w: VFP pop of %d registers at vsp 0x%08x runs past 4 GiB", ErrBadOpcode, count, st.VSP)
	}
	buf := st.buf[:8*count]
	if err := m.Read(st.VSP, buf); err != nil {
		return readErr(err, fmt.Sprintf("D%d-D%d", first, first+count-1), st.VSP)
	}
	for k := 0; k < count; k++ {
		if d := first + k; d < 16 {
			lo := binary.LittleEndian.Uint32(buf[8*k:])
			hi := binary.LittleEndian.Uint32(buf[8*k+4:])
			st.Regs.Set(unwinders.S(2*d), lo)
			st.Popped.Set(unwinders.S(2*d), lo)
			st.Regs.Set(unwinders.S(2*d+1), hi)
			st.Popped.Set(unwinders.S(2*d+1), hi)
		}
	}
	st.VSP += 8 * uint32(count)
	if fstmx {
		return advance(st, 4)
	}
	return nil
}
