package unwinders

import (
	"fmt"
	"strings"
)

// ARMv8-M Security Extension (TrustZone for Cortex-M): the walk crosses
// three kinds of security-state transition, each with the stack pointer of
// the state it lands in.
//
//   - An exception frame: EXC_RETURN.ES says which state took the exception
//     (the handler's stack is that state's MSP), EXC_RETURN.S and SPSEL
//     which of the four stacks holds the frame (ARMv8-M ARM B3.19, D1.2.95).
//     A Secure stack with DCRS=0 or ES=0 holds the additional state context
//     below it, led by the integrity signature 0xFEFA125B (0xFEFA125A on
//     v8.1-M with a floating-point context).
//   - FNC_RETURN (Secure code called Non-secure code with BLXNS): the
//     return address and a partial xPSR sit on the Secure stack, PSP_S when
//     the Non-secure code runs in Thread mode, MSP_S in Handler mode (B3.16;
//     GDB 13's arm-tdep reads them so). A Secure Thread that runs on MSP_S
//     pushes them there: the walk takes PSP_S only when the word it points
//     at returns after a BLXNS, else MSP_S with the same proof.
//   - The return of a CMSE entry function to its Non-secure caller: SG
//     cleared bit 0 of LR, so the return address is even; the caller's SP
//     is the Non-secure stack's. The entry function is recognised by its
//     __acle_se_ alias (the toolchain's CMSE symbol, AAELF32/ACLE CMSE 5.4).
//
// The walk keeps the four banked stack pointers in each frame's registers
// (MSPS..PSPNS), from the dump and as each transition moves them.

// IntegritySignature values of an additional state context (ARMv8-M ARM
// B3.19; 0xFEFA125A on ARMv8.1-M when a floating-point context is stacked).
const (
	IntegritySignature   = 0xFEFA125B
	IntegritySignatureFP = 0xFEFA125A
)

// bankedSP returns the banked stack pointer register of a security state.
func bankedSP(secure, process bool) Reg {
	switch {
	case secure && process:
		return PSPS
	case secure:
		return MSPS
	case process:
		return PSPNS
	}
	return MSPNS
}

// bankName is the architecture's name of a banked stack pointer.
func bankName(r Reg) string { return strings.ToUpper(r.String()) }

// withSecurityExt reports whether exc comes from a core with the Security
// Extension: on ARMv8-M without it ES and S are both 0 (0xFFFFFFA0-BC).
func withSecurityExt(p Profile, exc ExcReturn) bool {
	return p == V8M && exc&(excES|excSecure) != 0
}

// carryBanked copies the banked stack pointers and CONTROL_NS that from
// knows and to does not: a call or return in one state leaves the other
// state's stacks where they are.
func carryBanked(from, to *Registers) {
	for _, r := range []Reg{MSPS, PSPS, MSPNS, PSPNS, CONTROLNS} {
		if v, ok := from.Get(r); ok && !to.Known(r) {
			to.Set(r, v)
		}
	}
}

// isBLXNS reports whether the instruction before ret is BLXNS Rm (T1:
// 0100 0111 1 Rm 100, ARMv8-M ARM C2.4.25).
func isBLXNS(m Memory, ret uint32) bool {
	cs, ok := CallBefore(m, ret)
	return ok && cs.Kind == CallBLXNS
}

// fncStack chooses the Secure stack that holds a FNC_RETURN frame: the
// bank the Non-secure code's mode names first (PSP_S in Thread mode,
// MSP_S in Handler mode), then the other, each only when the word it
// points at is a return address right after a BLXNS in code.
func (t *Target) fncStack(regs *Registers, handler bool) (sp uint32, bank Reg, why string) {
	order := []Reg{PSPS, MSPS}
	if handler {
		order = []Reg{MSPS}
	}
	var tried []string
	for _, b := range order {
		v, ok := regs.Get(b)
		if !ok {
			tried = append(tried, bankName(b)+" is not in the dump")
			continue
		}
		ret, err := ReadU32(t.Mem, v)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s 0x%08x: %v", bankName(b), v, err))
			continue
		}
		if t.IsCode(ret&^1) && isBLXNS(t.Mem, ret&^1) {
			return v, b, ""
		}
		tried = append(tried, fmt.Sprintf("%s 0x%08x holds 0x%08x, not a return address after a BLXNS", bankName(b), v, ret))
	}
	return 0, 0, "FNC_RETURN: no Secure stack holds its return address (" + strings.Join(tried, "; ") + ")"
}

// secureEntryReturn reports whether raw, the return address found for
// frame cur, is the return of a CMSE entry function to Non-secure code:
// bit 0 clear and cur's function is an entry function (it has an
// __acle_se_ alias).
func (t *Target) secureEntryReturn(cur *Frame, raw uint32) bool {
	if t.Profile != V8M || raw&1 != 0 || t.Prog == nil {
		return false
	}
	fn, ok := t.Prog.FuncAt(cur.LookupPC())
	if !ok || fn.Name == "" {
		return false
	}
	a, ok := t.Prog.Symbol("__acle_se_" + strings.TrimPrefix(fn.Name, "__acle_se_"))
	return ok && a&^1 == fn.Start
}

// nsCallerStack returns the Non-secure stack pointer register of the code
// that called a Secure entry function: MSP_NS in Handler mode, else the
// one CONTROL_NS.SPSEL selects (ARMv8-M ARM B3.11).
func nsCallerStack(regs *Registers, handler bool) (Reg, string) {
	if handler {
		return MSPNS, ""
	}
	c, ok := regs.Get(CONTROLNS)
	if !ok {
		return 0, "CONTROL_NS is not in the dump: which Non-secure stack (MSP_NS or PSP_NS) the caller ran on is unknown"
	}
	return bankedSP(false, c&2 != 0), ""
}
