package crashdump

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Register text as people paste it from a debugger:
//
//	GDB "info registers" / "info all-registers":
//	    r0             0x20000100          536871168
//	    sp             0x2000ffb8          0x2000ffb8
//	    pc             0x8000234           0x8000234 <main+12>
//	    xPSR           0x21000003          553648131
//	    s0             1.5                 (raw 0x3fc00000)
//	OpenOCD "reg":
//	    (0) r0 (/32): 0x00000000
//	    (16) xPSR (/32): 0x01000000
//	    msp (/32): 0x2000ffb8 (dirty)
//	SEGGER J-Link Commander "regs" (hex without 0x, several per line):
//	    PC = 000001B2, CycleCnt = 00000000
//	    R0 = 00000000, R1 = 00000001, R2 = 00000002, R3 = 00000003
//	    SP(R13)= 20003F98, MSP= 20003F98, PSP= 00000000, R14(LR) = FFFFFFF9
//	    XPSR = 01000003: APSR = nzcvq, EPSR = 01000000, IPSR = 003 (HardFault)
//	    CFBP = 00000000, CONTROL = 00, FAULTMASK = 00, BASEPRI = 00, PRIMASK = 00
//	    FPS00 = 00000000, ..., FPSCR = 00000000
//
// Register names are those of unwinders.ParseReg in any case (r0-r15, sp,
// lr, pc, xpsr/psr/cpsr, msp, psp, control, primask, basepri, faultmask,
// fpscr, s0-s31). Lines naming other registers (d0-d15, msplim, banked
// secure copies) and lines that are not register lines at all (prompts,
// headers) are ignored; "<unavailable>" leaves a register unknown.
var (
	openocdRegLine = regexp.MustCompile(`^(?:\(\d+\)\s+)?([A-Za-z_][A-Za-z0-9_]*)\s+\(/(\d+)\):\s*(\S+)(?:\s+\(dirty\))?$`)
	gdbRawLine     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s+\S+\s+\(raw\s+(\S+)\)$`)
	gdbRegLine     = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s+(\S+)(?:\s+.*)?$`)
	jlinkPair      = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_]*)(?:\([A-Za-z0-9]+\))?\s*=\s*([0-9A-Fa-f]+)\b`)
	jlinkLine      = regexp.MustCompile(`^\s*[A-Za-z][A-Za-z0-9_]*(?:\([A-Za-z0-9]+\))?\s*=\s*[0-9A-Fa-f]+\b`)
)

// jlinkRegs reads the "NAME = HEX" pairs of a J-Link "regs" line: the name
// before any "(alias)", FPSnn for the FP register snn; pairs whose value is
// not hex (APSR = nzcvq) and names faultline does not know (CycleCnt, CFBP,
// EPSR, IPSR) are skipped.
func jlinkRegs(s string, set func(name, val string, at int) error) error {
	at := 0
	for _, part := range strings.Split(s, ",") {
		if m := jlinkPair.FindStringSubmatchIndex(part); m != nil {
			name := part[m[2]:m[3]]
			if strings.HasPrefix(strings.ToUpper(name), "FPS") && len(name) == 5 && name[3] >= '0' && name[3] <= '9' {
				name = "s" + strings.TrimPrefix(name[3:], "0")
				if name == "s" {
					name = "s0"
				}
			}
			if err := set(name, "0x"+part[m[4]:m[5]], at+m[4]); err != nil {
				return err
			}
		}
		at += len(part) + 1
	}
	return nil
}

// ParseRegisterText reads register values from GDB "info registers" or
// OpenOCD "reg" output. It fails when no register is found, when a line
// naming a known register holds a value that is not a 32-bit hex number,
// or when a register is given twice with different values; errors are
// *FormatError with the offset of the line.
func ParseRegisterText(data []byte, name string) (unwinders.Registers, error) {
	var regs unwinders.Registers
	seen := make(map[unwinders.Reg]int64)
	setReg := func(rn, val string, vo, off int64) (bool, error) {
		reg, ok := unwinders.ParseReg(rn)
		if !ok {
			return true, nil // d0, msplim, a header word...
		}
		if val == "<unavailable>" || val == "<not" || val == "<error>" {
			return true, nil
		}
		if !strings.HasPrefix(val, "0x") && !strings.HasPrefix(val, "0X") {
			return false, &FormatError{File: name, Offset: vo, Msg: fmt.Sprintf("register %s: value %s is not a hex number: want 0x...", rn, quoteShort(val))}
		}
		v, err := strconv.ParseUint(val[2:], 16, 64)
		if err != nil || !isHex(val[2:]) {
			return false, &FormatError{File: name, Offset: vo, Msg: fmt.Sprintf("register %s: value %s is not a hex number: want 0x...", rn, quoteShort(val))}
		}
		if v > 0xFFFFFFFF {
			return false, &FormatError{File: name, Offset: vo, Msg: fmt.Sprintf("register %s: value %s does not fit in 32 bits", rn, val)}
		}
		if prev, dup := seen[reg]; dup {
			if regs.Value(reg) != uint32(v) {
				return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("register %s is given twice with different values (first at offset %d): want one value", reg, prev)}
			}
			return true, nil
		}
		seen[reg] = off
		regs.Set(reg, uint32(v))
		return true, nil
	}
	err := textLines(data, func(off int64, line []byte) (bool, error) {
		s := string(line)
		if s == "" || strings.HasPrefix(s, "(gdb)") || strings.HasPrefix(s, ">") || strings.HasPrefix(s, "=") {
			return true, nil
		}
		var regName, val string
		var valOff int64
		if jlinkLine.MatchString(s) && strings.Contains(s, "=") {
			return true, jlinkRegs(s, func(name, val string, at int) error {
				_, err := setReg(name, val, off+int64(at), off)
				return err
			})
		}
		switch {
		case openocdRegLine.MatchString(s):
			m := openocdRegLine.FindStringSubmatchIndex(s)
			regName, val, valOff = s[m[2]:m[3]], s[m[6]:m[7]], off+int64(m[6])
			if s[m[4]:m[5]] != "32" {
				if _, ok := unwinders.ParseReg(regName); ok {
					return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("register %s is %s bits wide: want 32", regName, s[m[4]:m[5]])}
				}
				return true, nil
			}
		case gdbRawLine.MatchString(s):
			m := gdbRawLine.FindStringSubmatchIndex(s)
			regName, val, valOff = s[m[2]:m[3]], s[m[4]:m[5]], off+int64(m[4])
		case gdbRegLine.MatchString(s):
			m := gdbRegLine.FindStringSubmatchIndex(s)
			regName, val, valOff = s[m[2]:m[3]], s[m[4]:m[5]], off+int64(m[4])
		default:
			return true, nil
		}
		return setReg(regName, val, valOff, off)
	})
	if err != nil {
		return regs, err
	}
	if len(seen) == 0 {
		n := min(len(data), 16)
		return regs, &FormatError{File: name, Offset: -1, Msg: fmt.Sprintf("no register values found (starts with %q): want GDB \"info registers\", OpenOCD \"reg\" or J-Link \"regs\" output", bytes.TrimSpace(data[:n]))}
	}
	return regs, nil
}
