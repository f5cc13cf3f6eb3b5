package crashdump

import (
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// jlinkText lays out a dump's registers as J-Link Commander's "regs"
// prints them (SEGGER J-Link Commander, Cortex-M: four per line, hex
// without 0x, aliases in parentheses, the xPSR fields, the FP bank).
func jlinkText(r *unwinders.Registers) string {
	v := func(reg unwinders.Reg) uint32 { return r.Value(reg) }
	var b strings.Builder
	b.WriteString("J-Link>regs\n")
	fmt.Fprintf(&b, "PC = %08X, CycleCnt = 0000A3F1\n", v(unwinders.PC))
	for i := 0; i < 12; i += 4 {
		for k := i; k < i+4; k++ {
			sep := ", "
			if k == i+3 {
				sep = "\n"
			}
			fmt.Fprintf(&b, "R%d = %08X%s", k, v(unwinders.R0+unwinders.Reg(k)), sep)
		}
	}
	fmt.Fprintf(&b, "R12= %08X\n", v(unwinders.R12))
	fmt.Fprintf(&b, "SP(R13)= %08X, MSP= %08X, PSP= %08X, R14(LR) = %08X\n", v(unwinders.SP), v(unwinders.MSP), v(unwinders.PSP), v(unwinders.LR))
	fmt.Fprintf(&b, "XPSR = %08X: APSR = nzcvq, EPSR = 01000000, IPSR = %03X (HardFault)\n", v(unwinders.XPSR), v(unwinders.XPSR)&0x1ff)
	fmt.Fprintf(&b, "CFBP = 00000000, CONTROL = %02X, FAULTMASK = %02X, BASEPRI = %02X, PRIMASK = %02X\n", v(unwinders.CONTROL), v(unwinders.FAULTMASK), v(unwinders.BASEPRI), v(unwinders.PRIMASK))
	if _, ok := r.Get(unwinders.S(0)); ok {
		for i := 0; i < 32; i++ {
			sep := ", "
			if i%4 == 3 {
				sep = "\n"
			}
			fmt.Fprintf(&b, "FPS%02d = %08X%s", i, v(unwinders.S(i)), sep)
		}
		fmt.Fprintf(&b, "FPSCR = %08X\n", v(unwinders.FPSCR))
	}
	return b.String()
}

// J-Link "regs" output gives back every register of the dump it was made
// from, the FP registers included.
func TestJLinkRegs(t *testing.T) {
	for _, p := range []string{"../fixtures/qemu/gcc-m3-O2-udf.json", "../fixtures/qemu/gcc-m4f-O2-fpu_crash.json", "../fixtures/qemu/gcc-m3-O2-psp_thread.json"} {
		d, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseRegisterText([]byte(jlinkText(&d.Regs)), "regs.txt")
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		d.Regs.Each(func(reg unwinders.Reg, v uint32) {
			if g, ok := got.Get(reg); !ok || g != v {
				t.Errorf("%s: %v = 0x%x (known %v), want 0x%x", p, reg, g, ok, v)
			}
		})
	}
	if _, err := ParseRegisterText([]byte("PC = 000001B2, CycleCnt = 00000000\nPC = 000001B4\n"), "r.txt"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a register twice with two values: %v", err)
	}
}
