package fault

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// regs builds a register file from name/value pairs.
func regs(t testing.TB, kv ...any) *unwinders.Registers {
	t.Helper()
	r := new(unwinders.Registers)
	for i := 0; i < len(kv); i += 2 {
		reg, ok := unwinders.ParseReg(kv[i].(string))
		if !ok {
			t.Fatalf("bad register %v", kv[i])
		}
		r.Set(reg, uint32(kv[i+1].(int)))
	}
	return r
}

// handler is the register state at the HardFault handler's entry.
func handler(t testing.TB) *unwinders.Registers {
	return regs(t, "pc", 0x204, "lr", 0xfffffff9, "sp", 0x2000ffb8, "xpsr", 0x01000003)
}

func hasCause(r Report, reg, bit string) bool {
	return slices.ContainsFunc(r.Causes, func(c Cause) bool { return c.Register == reg && c.Bit == bit })
}

func hasNote(r Report, sub string) bool {
	return slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

// TestCFSRBits checks every CFSR bit against ARMv7-M B3.2.15 (and ARMv8-M
// for STKOF): the bit position, its mnemonic and the key words of its text.
func TestCFSRBits(t *testing.T) {
	tests := []struct {
		bit  uint
		name string
		text string
		prof unwinders.Profile
		exc  string // exception inferred from the CFSR alone
	}{
		{0, "IACCVIOL", "instruction access violation", unwinders.V7M, "MemManage"},
		{1, "DACCVIOL", "data access violation", unwinders.V7M, "MemManage"},
		{3, "MUNSTKERR", "unstacking", unwinders.V7M, "MemManage"},
		{4, "MSTKERR", "stacking the exception frame on exception entry", unwinders.V7M, "MemManage"},
		{5, "MLSPERR", "lazy floating-point", unwinders.V7M, "MemManage"},
		{7, "MMARVALID", "MMFAR holds the faulting data address 0x00000010", unwinders.V7M, "MemManage"},
		{8, "IBUSERR", "instruction bus error", unwinders.V7M, "BusFault"},
		{9, "PRECISERR", "precise data bus error", unwinders.V7M, "BusFault"},
		{10, "IMPRECISERR", "imprecise data bus error", unwinders.V7M, "BusFault"},
		{11, "UNSTKERR", "unstacking", unwinders.V7M, "BusFault"},
		{12, "STKERR", "stacking the exception frame on exception entry", unwinders.V7M, "BusFault"},
		{13, "LSPERR", "lazy floating-point", unwinders.V7M, "BusFault"},
		{15, "BFARVALID", "BFAR holds the faulting data address 0x40000000", unwinders.V7M, "BusFault"},
		{16, "UNDEFINSTR", "undefined instruction", unwinders.V7M, "UsageFault"},
		{17, "INVSTATE", "EPSR.T clear", unwinders.V7M, "UsageFault"},
		{18, "INVPC", "invalid PC load", unwinders.V7M, "UsageFault"},
		{19, "NOCP", "coprocessor", unwinders.V7M, "UsageFault"},
		{20, "STKOF", "stack overflow", unwinders.V8M, "UsageFault"},
		{24, "UNALIGNED", "unaligned", unwinders.V7M, "UsageFault"},
		{25, "DIVBYZERO", "division by zero", unwinders.V7M, "UsageFault"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			scb := SCB{CFSR: Known(1 << tc.bit), HFSR: Known(0), MMFAR: Known(0x10), BFAR: Known(0x40000000)}
			r := Decode(tc.prof, handler(t), scb)
			if len(r.Causes) != 1 {
				t.Fatalf("causes = %+v, want exactly one", r.Causes)
			}
			c := r.Causes[0]
			if c.Register != "CFSR" || c.Bit != tc.name || !strings.Contains(c.Text, tc.text) {
				t.Errorf("cause = %+v, want CFSR %s containing %q", c, tc.name, tc.text)
			}
			// With IPSR 0 the exception is inferred from the CFSR.
			r = Decode(tc.prof, regs(t, "xpsr", 0x01000000, "pc", 0x1000, "lr", 0x801), scb)
			if r.Exception != tc.exc {
				t.Errorf("inferred exception = %q, want %q", r.Exception, tc.exc)
			}
			if !hasNote(r, "inferred from CFSR."+tc.name) {
				t.Errorf("notes %q do not say the exception was inferred from CFSR.%s", r.Notes, tc.name)
			}
		})
	}
}

func TestHFSRBits(t *testing.T) {
	for _, tc := range []struct {
		bit        uint
		name, text string
	}{
		{1, "VECTTBL", "vector table read"},
		{30, "FORCED", "escalated to HardFault"},
		{31, "DEBUGEVT", "debug event"},
	} {
		r := Decode(unwinders.V7M, handler(t), SCB{CFSR: Known(0), HFSR: Known(1 << tc.bit)})
		if len(r.Causes) != 1 || r.Causes[0].Register != "HFSR" || r.Causes[0].Bit != tc.name || !strings.Contains(r.Causes[0].Text, tc.text) {
			t.Errorf("HFSR bit %d: causes = %+v, want HFSR %s", tc.bit, r.Causes, tc.name)
		}
		if !hasNote(r, tc.name+":") {
			t.Errorf("HFSR bit %d: no %s note in %q", tc.bit, tc.name, r.Notes)
		}
		r = Decode(unwinders.V7M, regs(t, "xpsr", 0), SCB{CFSR: Known(0), HFSR: Known(1 << tc.bit)})
		if r.Exception != "HardFault" || r.Number != 3 {
			t.Errorf("HFSR bit %d: inferred %q %d, want HardFault 3", tc.bit, r.Exception, r.Number)
		}
	}
}

// TestSFSRBits checks the ARMv8-M SecureFault status bits.
func TestSFSRBits(t *testing.T) {
	names := []string{"INVEP", "INVIS", "INVER", "AUVIOL", "INVTRAN", "LSPERR", "SFARVALID", "LSERR"}
	for bit, name := range names {
		scb := SCB{CFSR: Known(0), HFSR: Known(0), SFSR: Known(1 << bit), SFAR: Known(0x10000000)}
		r := Decode(unwinders.V8M, regs(t, "xpsr", 7), scb)
		if len(r.Causes) != 1 || r.Causes[0].Register != "SFSR" || r.Causes[0].Bit != name {
			t.Errorf("SFSR bit %d: causes = %+v, want SFSR %s", bit, r.Causes, name)
		}
		if r.Exception != "SecureFault" {
			t.Errorf("SFSR bit %d: exception %q, want SecureFault", bit, r.Exception)
		}
		// ARMv7-M has no SFSR: the value is ignored.
		r = Decode(unwinders.V7M, regs(t, "xpsr", 3), scb)
		if len(r.Causes) != 0 {
			t.Errorf("SFSR bit %d on ARMv7-M: causes = %+v, want none", bit, r.Causes)
		}
	}
	r := Decode(unwinders.V8M, regs(t, "xpsr", 7), SCB{SFSR: Known(1<<AUVIOL | 1<<SFARVALID), SFAR: Known(0x10000000)})
	if r.Address == nil || *r.Address != 0x10000000 {
		t.Errorf("SFARVALID: address = %v, want 0x10000000", r.Address)
	}
}

func TestDFSRWithDebugEvent(t *testing.T) {
	scb := SCB{CFSR: Known(0), HFSR: Known(1 << DEBUGEVT), DFSR: Known(1 << BKPT)}
	r := Decode(unwinders.V7M, handler(t), scb)
	if !hasCause(r, "DFSR", "BKPT") {
		t.Errorf("causes %+v lack DFSR.BKPT", r.Causes)
	}
	// Without DEBUGEVT the (sticky) DFSR is not a cause.
	scb.HFSR = Known(0)
	if r := Decode(unwinders.V7M, handler(t), scb); hasCause(r, "DFSR", "BKPT") {
		t.Errorf("DFSR decoded without DEBUGEVT: %+v", r.Causes)
	}
}

func TestNotes(t *testing.T) {
	v7 := unwinders.V7M
	tests := []struct {
		name  string
		in    Input
		notes []string // substrings that must appear
		not   []string // substrings that must not appear
	}{
		{
			name:  "imprecise",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << IMPRECISERR), HFSR: Known(1 << FORCED), BFAR: Known(0x12345678)}, Faulting: regs(t, "pc", 0x1a2, "xpsr", 0x01000000)},
			notes: []string{"stacked PC (0x000001a2) is after the faulting store", "do not blame the stacked PC's line", "BFAR holds 0x12345678 but BFARVALID is clear, so it is not the faulting address"},
		},
		{
			name:  "stacking failed",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1<<MSTKERR | 1<<STKERR), HFSR: Known(1 << FORCED)}},
			notes: []string{"MSTKERR, STKERR: stacking the exception frame on exception entry failed", "incomplete", "stack overflow", "SP is 0x2000ffb8"},
		},
		{
			name:  "unstacking failed",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << UNSTKERR), HFSR: Known(1 << FORCED)}},
			notes: []string{"UNSTKERR: unstacking"},
		},
		{
			name:  "lazy FP",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << LSPERR), HFSR: Known(0), FPCAR: Known(0x20001000)}},
			notes: []string{"LSPERR: lazy floating-point", "FPCAR 0x20001000"},
		},
		{
			name:  "NULL function pointer",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << INVSTATE), HFSR: Known(1 << FORCED)}, Faulting: regs(t, "pc", 0, "lr", 0x1235, "xpsr", 0)},
			notes: []string{"The PC is 0: a call through a NULL function pointer", "T (bit 24) clear", "LR 0x00001235"},
		},
		{
			name:  "bad function pointer",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << INVSTATE), HFSR: Known(1 << FORCED)}, Faulting: regs(t, "pc", 0x2000, "xpsr", 0)},
			notes: []string{"bad or NULL function pointer", "0x00002000 is the target"},
		},
		{
			name:  "INVSTATE from reconstructed registers",
			in:    Input{Profile: v7, Regs: regs(t, "pc", 0, "lr", 0x1235, "xpsr", 0), SCB: SCB{CFSR: Known(1 << INVSTATE), HFSR: Known(1 << FORCED)}},
			notes: []string{"The PC is 0: a call through a NULL function pointer", "IPSR is 0: the registers are the state before the exception"},
		},
		{
			name:  "INVSTATE without the stacked frame",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << INVSTATE), HFSR: Known(1 << FORCED)}},
			notes: []string{"the target is the stacked PC"},
			not:   []string{"0x00000204"}, // the handler's PC is not the faulting PC
		},
		{
			name:  "division by zero",
			in:    Input{Profile: v7, Regs: regs(t, "pc", 0x300, "xpsr", 0x01000000), SCB: SCB{CFSR: Known(1 << DIVBYZERO), HFSR: Known(1 << FORCED)}},
			notes: []string{"DIVBYZERO: an SDIV or UDIV instruction divided by zero", "stacked PC (0x00000300) is the division"},
		},
		{
			name:  "unaligned, trap enabled",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << UNALIGNED), HFSR: Known(0), CCR: Known(1 << UNALIGNTRP)}},
			notes: []string{"CCR.UNALIGN_TRP is set"},
		},
		{
			name:  "unaligned, trap disabled",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << UNALIGNED), HFSR: Known(0), CCR: Known(1 << STKALIGN)}},
			notes: []string{"LDM, STM, LDRD, STRD"},
		},
		{
			name:  "forced, disabled in SHCSR",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1<<DACCVIOL | 1<<MMARVALID), HFSR: Known(1 << FORCED), MMFAR: Known(0), SHCSR: Known(0)}},
			notes: []string{"the CFSR says it was MemManage (DACCVIOL, MMARVALID)", "MemManage is disabled in SHCSR, so it escalated to HardFault", "0x00000000: a NULL pointer dereference"},
		},
		{
			name:  "forced although enabled",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << PRECISERR), HFSR: Known(1 << FORCED), SHCSR: Known(1<<BUSFAULTENA | 1<<SVCALLACT)}},
			notes: []string{"BusFault is enabled in SHCSR but still escalated", "other handlers active as well (SVCall)"},
		},
		{
			name:  "forced without CFSR",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{HFSR: Known(1 << FORCED)}},
			notes: []string{"CFSR is not in the dump, so which one is unknown"},
		},
		{
			name:  "forced with CFSR clear",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(0), HFSR: Known(1 << FORCED)}},
			notes: []string{"the CFSR records none"},
		},
		{
			name:  "vector table",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(0), HFSR: Known(1 << VECTTBL), VTOR: Known(0x08000000)}},
			notes: []string{"VECTTBL: a bus fault on a vector table read", "VTOR is 0x08000000"},
		},
		{
			name:  "no status registers",
			in:    Input{Profile: v7, Regs: handler(t)},
			notes: []string{"The fault status registers (CFSR, HFSR) are not in the dump"},
		},
		{
			name:  "ARMv6-M ignores CFSR",
			in:    Input{Profile: unwinders.V6M, Regs: handler(t), SCB: SCB{CFSR: Known(1 << PRECISERR), HFSR: Known(1 << FORCED), BFAR: Known(4)}},
			notes: []string{"ARMv6-M has no configurable faults", "are ignored"},
		},
		{
			name:  "lockup",
			in:    Input{Profile: v7, Regs: regs(t, "pc", 0xeffffffe, "xpsr", 0x01000003), SCB: SCB{CFSR: Known(0), HFSR: Known(0)}},
			notes: []string{"The PC is 0xeffffffe: the core locked up"},
		},
		{
			name:  "lockup 0xfffffffe",
			in:    Input{Profile: v7, Regs: regs(t, "pc", 0xfffffffe, "xpsr", 3)},
			notes: []string{"0xfffffffe: the core locked up"},
		},
		{
			name:  "lockup 0xffffffff on ARMv6-M",
			in:    Input{Profile: unwinders.V6M, Regs: regs(t, "pc", 0xffffffff, "xpsr", 3)},
			notes: []string{"0xffffffff: the core locked up"},
		},
		{
			name:  "MMFAR without MMARVALID",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << IACCVIOL), HFSR: Known(0), MMFAR: Known(0x20000000)}},
			notes: []string{"MMFAR holds 0x20000000 but MMARVALID is clear", "IACCVIOL: the core fetched an instruction"},
		},
		{
			name:  "IACCVIOL at NULL",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << IACCVIOL), HFSR: Known(0)}, Faulting: regs(t, "pc", 0)},
			notes: []string{"the stacked PC is 0x00000000: a call through a NULL function pointer"},
		},
		{
			name:  "NOCP with the FPU off",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << NOCP), HFSR: Known(0), CPACR: Known(0)}},
			notes: []string{"NOCP:", "CP10/CP11 access is denied"},
		},
		{
			name:  "STKOF on ARMv7-M is reserved",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(1 << STKOF), HFSR: Known(0)}},
			notes: []string{"CFSR has reserved bits set (0x00100000)"},
			not:   []string{"STKOF:"},
		},
		{
			name:  "STKOF on ARMv8-M",
			in:    Input{Profile: unwinders.V8M, Regs: handler(t), SCB: SCB{CFSR: Known(1 << STKOF), HFSR: Known(1 << FORCED)}},
			notes: []string{"STKOF: the stack pointer went below its limit"},
		},
		{
			name:  "several classes",
			in:    Input{Profile: v7, Regs: regs(t, "xpsr", 0), SCB: SCB{CFSR: Known(1<<DACCVIOL | 1<<UNDEFINSTR), HFSR: Known(0)}},
			notes: []string{"Several fault classes are recorded (MemManage, UsageFault)"},
		},
		{
			name:  "ICSR gives the exception",
			in:    Input{Profile: v7, SCB: SCB{ICSR: Known(5), CFSR: Known(1 << PRECISERR), HFSR: Known(0)}},
			notes: []string{"ICSR.VECTACTIVE"},
		},
		{
			name:  "fault inside an IRQ handler, reconstructed",
			in:    Input{Profile: v7, Regs: regs(t, "xpsr", 0x01000015, "pc", 0x400, "lr", 0x301), SCB: SCB{CFSR: Known(1<<DACCVIOL | 1<<MMARVALID), HFSR: Known(1 << FORCED), MMFAR: Known(4)}},
			notes: []string{"IPSR is 21 (IRQ 5), not a fault exception", "inferred from HFSR.FORCED", "near 0"},
		},
		{
			name:  "status registers cleared",
			in:    Input{Profile: v7, Regs: handler(t), SCB: SCB{CFSR: Known(0), HFSR: Known(0)}},
			notes: []string{"may have been cleared by the handler"},
		},
		{
			name:  "unknown profile",
			in:    Input{Regs: handler(t), SCB: SCB{CFSR: Known(1 << PRECISERR), HFSR: Known(0)}},
			notes: []string{"architecture profile is unknown"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := DecodeInput(tc.in)
			for _, s := range tc.notes {
				if !hasNote(r, s) {
					t.Errorf("no note contains %q; notes:\n%s", s, strings.Join(r.Notes, "\n"))
				}
			}
			for _, s := range tc.not {
				if hasNote(r, s) {
					t.Errorf("a note contains %q; notes:\n%s", s, strings.Join(r.Notes, "\n"))
				}
			}
		})
	}
}

func TestV6MHasNoCFSR(t *testing.T) {
	r := Decode(unwinders.V6M, handler(t), SCB{CFSR: Known(0xffffffff), HFSR: Known(0xffffffff), MMFAR: Known(1), BFAR: Known(2)})
	if len(r.Causes) != 0 || r.Address != nil {
		t.Errorf("ARMv6-M decoded status registers: causes %+v address %v", r.Causes, r.Address)
	}
	if r.Exception != "HardFault" {
		t.Errorf("exception %q, want HardFault", r.Exception)
	}
	// IPSR 0 and no status registers on ARMv6-M: nothing to infer from.
	r = Decode(unwinders.V6M, regs(t, "xpsr", 0x01000000), SCB{CFSR: Known(0xffffffff)})
	if r.Exception != "Thread mode" || r.Number != 0 {
		t.Errorf("exception %q %d, want Thread mode 0", r.Exception, r.Number)
	}
}

func TestException(t *testing.T) {
	tests := []struct {
		prof unwinders.Profile
		regs *unwinders.Registers
		scb  SCB
		exc  string
		num  int
	}{
		{unwinders.V7M, regs(t, "xpsr", 2), SCB{}, "NMI", 2},
		{unwinders.V7M, regs(t, "xpsr", 3), SCB{}, "HardFault", 3},
		{unwinders.V7M, regs(t, "xpsr", 4), SCB{}, "MemManage", 4},
		{unwinders.V7M, regs(t, "xpsr", 5), SCB{}, "BusFault", 5},
		{unwinders.V7M, regs(t, "xpsr", 6), SCB{}, "UsageFault", 6},
		{unwinders.V7M, regs(t, "xpsr", 7), SCB{}, "exception 7", 7},
		{unwinders.V8M, regs(t, "xpsr", 7), SCB{}, "SecureFault", 7},
		{unwinders.V7M, regs(t, "xpsr", 11), SCB{}, "SVCall", 11},
		{unwinders.V7M, regs(t, "xpsr", 12), SCB{}, "DebugMonitor", 12},
		{unwinders.V7M, regs(t, "xpsr", 14), SCB{}, "PendSV", 14},
		{unwinders.V7M, regs(t, "xpsr", 15), SCB{}, "SysTick", 15},
		{unwinders.V7M, regs(t, "xpsr", 21), SCB{}, "IRQ 5", 21},
		{unwinders.V7M, regs(t, "xpsr", 0x1ff), SCB{}, "IRQ 495", 511},
		{unwinders.V6M, regs(t, "xpsr", 4), SCB{}, "exception 4", 4},
		{unwinders.V7M, regs(t, "xpsr", 0x200), SCB{}, "Thread mode", 0}, // bit 9 is not IPSR
		{unwinders.V7M, nil, SCB{}, "unknown", 0},
		{unwinders.V7M, regs(t, "xpsr", 0), SCB{CFSR: Known(1 << DIVBYZERO), HFSR: Known(0)}, "UsageFault", 6},
		{unwinders.V7M, regs(t, "xpsr", 0), SCB{CFSR: Known(1 << DIVBYZERO), HFSR: Known(1 << FORCED)}, "HardFault", 3},
		// An IRQ handler's registers with stale status bits and LR = EXC_RETURN: the IRQ wins.
		{unwinders.V7M, regs(t, "xpsr", 21, "lr", 0xfffffffd), SCB{CFSR: Known(1 << DIVBYZERO)}, "IRQ 5", 21},
	}
	for i, tc := range tests {
		r := Decode(tc.prof, tc.regs, tc.scb)
		if r.Exception != tc.exc || r.Number != tc.num {
			t.Errorf("%d: got %q %d, want %q %d", i, r.Exception, r.Number, tc.exc, tc.num)
		}
	}
}

func TestAddress(t *testing.T) {
	both := SCB{CFSR: Known(1<<DACCVIOL | 1<<MMARVALID | 1<<PRECISERR | 1<<BFARVALID), HFSR: Known(0), MMFAR: Known(0x100), BFAR: Known(0x200)}
	for _, tc := range []struct {
		xpsr int
		scb  SCB
		want any
	}{
		{4, both, uint32(0x100)},
		{5, both, uint32(0x200)},
		{3, both, uint32(0x100)},
		{5, SCB{CFSR: Known(1 << PRECISERR), BFAR: Known(0x200)}, nil},                  // BFARVALID clear
		{5, SCB{CFSR: Known(1<<PRECISERR | 1<<BFARVALID)}, nil},                         // BFAR not in the dump
		{5, SCB{CFSR: Known(1<<PRECISERR | 1<<BFARVALID), BFAR: Known(0)}, uint32(0)},   // 0 is a valid address
		{5, SCB{CFSR: Known(1<<IMPRECISERR | 1<<BFARVALID), BFAR: Known(8)}, uint32(8)}, // as the core says
	} {
		r := Decode(unwinders.V7M, regs(t, "xpsr", tc.xpsr), tc.scb)
		switch want := tc.want.(type) {
		case nil:
			if r.Address != nil {
				t.Errorf("xpsr %d %+v: address 0x%x, want none", tc.xpsr, tc.scb, *r.Address)
			}
		case uint32:
			if r.Address == nil || *r.Address != want {
				t.Errorf("xpsr %d %+v: address %v, want 0x%x", tc.xpsr, tc.scb, r.Address, want)
			}
		}
	}
	r := Decode(unwinders.V7M, handler(t), SCB{CFSR: Known(1 << BFARVALID)})
	if !hasCause(r, "CFSR", "BFARVALID") || !strings.Contains(r.Causes[0].Text, "BFAR is not in the dump") {
		t.Errorf("BFARVALID without BFAR: %+v", r.Causes)
	}
}

// TestJSON checks the analysis "fault" object of design.md.
func TestJSON(t *testing.T) {
	scb := SCB{CFSR: Known(0x8200), HFSR: Known(0), MMFAR: Known(0), BFAR: Known(0xe0100000)}
	r := Decode(unwinders.V7M, regs(t, "xpsr", 0x01000005), scb)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"exception":"BusFault","number":5,"causes":[{"register":"CFSR","bit":"PRECISERR","text":"precise data bus error"},{"register":"CFSR","bit":"BFARVALID","text":"BFAR holds the faulting data address 0xe0100000"}],"address":"0xe0100000"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	r.Notes = nil
	if fmt.Sprint(back) != fmt.Sprint(r) {
		t.Errorf("round trip: got %+v, want %+v", back, r)
	}
	b, _ = json.Marshal(Report{Exception: "unknown"})
	if string(b) != `{"exception":"unknown","number":0,"causes":[]}` {
		t.Errorf("empty report: %s", b)
	}
}

// mem is a Memory over a map of words.
type mem map[uint32]uint32

func (m mem) Read(addr uint32, p []byte) error {
	for i := range p {
		a := addr + uint32(i)
		w, ok := m[a&^3]
		if !ok {
			return &unwinders.UnmappedError{Addr: addr, Size: len(p)}
		}
		p[i] = byte(w >> (8 * (a & 3)))
	}
	return nil
}

func TestFromMemoryAndMerge(t *testing.T) {
	m := mem{AddrCFSR: 0x8200, AddrHFSR: 1 << 30, AddrBFAR: 0xe0100000, AddrSFSR: 0x48, AddrFPCAR: 0x20000100, AddrICSR: 3}
	s := FromMemory(m)
	want := SCB{CFSR: Known(0x8200), HFSR: Known(1 << 30), BFAR: Known(0xe0100000), SFSR: Known(0x48), FPCAR: Known(0x20000100), ICSR: Known(3)}
	if s != want {
		t.Errorf("FromMemory = %+v\nwant %+v", s, want)
	}
	if FromMemory(nil) != (SCB{}) {
		t.Error("FromMemory(nil) is not empty")
	}
	got := s.Merge(SCB{CFSR: Known(0x1), MMFAR: Known(7)})
	want.CFSR, want.MMFAR = Known(1), Known(7)
	if got != want {
		t.Errorf("Merge = %+v\nwant %+v", got, want)
	}
	for _, n := range Names() {
		a, ok := Addr(n)
		if !ok || s.Field(n) == nil || s.Field(strings.ToLower(n)) == nil || a < 0xE000E000 {
			t.Errorf("register %s: addr %#x %v", n, a, ok)
		}
	}
	if s.Field("nope") != nil {
		t.Error("Field(nope) != nil")
	}
}

// TestGolden renders whole reports for review: go test -update rewrites
// testdata/decode.golden.
func TestGolden(t *testing.T) {
	cases := []struct {
		name string
		in   Input
	}{
		{"design.md example: forced precise bus fault", Input{Profile: unwinders.V7M, Regs: handler(t),
			SCB: SCB{CFSR: Known(0x8200), HFSR: Known(0x40000000), MMFAR: Known(0), BFAR: Known(0xe0100000)}}},
		{"MPU-guarded NULL write", Input{Profile: unwinders.V7M, Regs: handler(t),
			SCB: SCB{CFSR: Known(0x82), HFSR: Known(0x40000000), MMFAR: Known(0), BFAR: Known(0), SHCSR: Known(0)}}},
		{"NULL function pointer, unstacked", Input{Profile: unwinders.V7M, Regs: handler(t),
			SCB: SCB{CFSR: Known(1 << INVSTATE), HFSR: Known(1 << FORCED), SHCSR: Known(0)}, Faulting: regs(t, "pc", 0, "lr", 0x2a1, "xpsr", 0)}},
		{"stack overflow on M33", Input{Profile: unwinders.V8M, Regs: regs(t, "sp", 0x2001fff0, "xpsr", 3, "lr", 0xffffffbc),
			SCB: SCB{CFSR: Known(1<<MSTKERR | 1<<STKOF), HFSR: Known(1 << FORCED), SHCSR: Known(1<<MEMFAULTENA | 1<<USGFAULTENA)}}},
		{"imprecise reconstructed", Input{Profile: unwinders.V7M, Regs: regs(t, "pc", 0x1f4, "lr", 0x1c3, "xpsr", 0x61000000),
			SCB: SCB{CFSR: Known(1 << IMPRECISERR), HFSR: Known(0), BFAR: Known(0xe0000000)}}},
		{"Cortex-M0 HardFault", Input{Profile: unwinders.V6M, Regs: handler(t)}},
		{"secure fault", Input{Profile: unwinders.V8M, Regs: regs(t, "xpsr", 7),
			SCB: SCB{CFSR: Known(0), HFSR: Known(0), SFSR: Known(1<<INVEP | 1<<SFARVALID), SFAR: Known(0x10000400)}}},
		{"nothing known", Input{}},
	}
	var b strings.Builder
	for _, c := range cases {
		r := DecodeInput(c.in)
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n%s%s\n\n", c.name, r, j)
	}
	path := filepath.Join("testdata", "decode.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != b.String() {
		t.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, b.String())
	}
}

// FuzzDecode checks that Decode never panics and keeps its invariants:
// an address only with a VALID bit, no CFSR causes on ARMv6-M, JSON that
// reads back.
func FuzzDecode(f *testing.F) {
	f.Add(uint8(2), uint32(0x01000003), uint32(0x204), uint32(0xfffffff9), uint32(0x8200), uint32(0x40000000), uint32(0), uint32(0xe0100000), uint32(0), uint32(0), uint32(0), uint16(0xffff))
	f.Add(uint8(2), uint32(0), uint32(0), uint32(0x1235), uint32(1<<17), uint32(1<<30), uint32(0), uint32(0), uint32(0), uint32(0), uint32(0), uint16(0x0fff))
	f.Add(uint8(1), uint32(3), uint32(0xfffffffe), uint32(0), uint32(0xffffffff), uint32(0xffffffff), uint32(1), uint32(2), uint32(0), uint32(0), uint32(0), uint16(0xffff))
	f.Add(uint8(3), uint32(7), uint32(0), uint32(0xffffffbc), uint32(1<<20), uint32(0), uint32(0), uint32(0), uint32(0x48), uint32(0x10000000), uint32(0x70000), uint16(0xffff))
	f.Fuzz(func(t *testing.T, prof uint8, xpsr, pc, lr, cfsr, hfsr, mmfar, bfar, sfsr, sfar, shcsr uint32, known uint16) {
		r := new(unwinders.Registers)
		for i, v := range []struct {
			reg unwinders.Reg
			val uint32
		}{{unwinders.XPSR, xpsr}, {unwinders.PC, pc}, {unwinders.LR, lr}} {
			if known&(1<<i) != 0 {
				r.Set(v.reg, v.val)
			}
		}
		var s SCB
		for i, v := range []struct {
			o   *Opt
			val uint32
		}{{&s.CFSR, cfsr}, {&s.HFSR, hfsr}, {&s.MMFAR, mmfar}, {&s.BFAR, bfar}, {&s.SFSR, sfsr}, {&s.SFAR, sfar}, {&s.SHCSR, shcsr}, {&s.ICSR, xpsr >> 9}, {&s.CCR, lr}} {
			if known&(1<<(i+3)) != 0 {
				*v.o = Known(v.val)
			}
		}
		p := unwinders.Profile(prof % 4)
		rep := DecodeInput(Input{Profile: p, Regs: r, SCB: s, Faulting: r})
		if rep.Exception == "" {
			t.Fatal("empty exception")
		}
		if rep.Address != nil {
			valid := s.CFSR.OK && s.CFSR.V&(1<<MMARVALID|1<<BFARVALID) != 0 || s.SFSR.OK && s.SFSR.V&(1<<SFARVALID) != 0
			if !valid || p == unwinders.V6M {
				t.Fatalf("address without a VALID bit: %+v", rep)
			}
		}
		if p == unwinders.V6M && len(rep.Causes) != 0 {
			t.Fatalf("ARMv6-M causes: %+v", rep.Causes)
		}
		for _, c := range rep.Causes {
			if c.Register == "" || c.Bit == "" || c.Text == "" {
				t.Fatalf("incomplete cause %+v", c)
			}
		}
		b, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		var back Report
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		_ = rep.String()
	})
}
