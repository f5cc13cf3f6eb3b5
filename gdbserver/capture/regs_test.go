package capture

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/unwinders"
)

func word(v uint32) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, v)
	return b
}

// Where the server has no MSP/PSP, only the active stack pointer is
// derived from SP, and only when the mode says which one it is.
func TestBankedStackPointers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		regs      map[string]uint32
		msp, psp  bool
		warnWords string
	}{
		{"handler mode: MSP", map[string]uint32{"xpsr": 0x01000003, "lr": 0xfffffff9}, true, false, "handler mode"},
		{"handler mode, frame on PSP", map[string]uint32{"xpsr": 0x01000003, "lr": 0xfffffffd}, true, false, "process stack"},
		{"thread mode, SPSEL=1: PSP", map[string]uint32{"xpsr": 0x01000000, "control": 2}, false, true, "SPSEL=1"},
		{"thread mode, SPSEL=0: MSP", map[string]uint32{"xpsr": 0x01000000, "control": 0}, true, false, "SPSEL=0"},
		{"thread mode, no CONTROL: neither", map[string]uint32{"xpsr": 0x01000000}, false, false, "cannot be told"},
		{"no xPSR: neither", map[string]uint32{}, false, false, "no xPSR"},
		{"server has both: kept", map[string]uint32{"xpsr": 0x01000003, "msp": 0x20001000, "psp": 0x20002000}, true, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := client.RegisterValues{"sp": word(0x20003f90), "pc": word(0xc0)}
			for k, x := range tc.regs {
				v[k] = word(x)
			}
			var d crashdump.Dump
			var warns []string
			if err := setRegisters(&d, v, func(f string, a ...any) { warns = append(warns, fmt.Sprintf(f, a...)) }); err != nil {
				t.Fatal(err)
			}
			msp, okM := d.Regs.Get(unwinders.MSP)
			psp, okP := d.Regs.Get(unwinders.PSP)
			if okM != tc.msp || okP != tc.psp {
				t.Fatalf("msp known %v, psp known %v: want %v, %v", okM, okP, tc.msp, tc.psp)
			}
			if _, given := tc.regs["msp"]; okM && !given && msp != 0x20003f90 {
				t.Errorf("msp %#x: want SP", msp)
			}
			if _, given := tc.regs["psp"]; okP && !given && psp != 0x20003f90 {
				t.Errorf("psp %#x: want SP", psp)
			}
			all := strings.Join(warns, "\n")
			if tc.warnWords == "" && len(warns) > 0 {
				t.Errorf("warnings %q: want none", warns)
			}
			if tc.warnWords != "" && !strings.Contains(all, tc.warnWords) {
				t.Errorf("warnings %q: want one saying %q", warns, tc.warnWords)
			}
		})
	}
}
