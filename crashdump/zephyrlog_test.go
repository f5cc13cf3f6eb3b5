package crashdump

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// zConsole prints a coredump as Zephyr's logging backend does on a board
// console with colours and timestamps: each "#CD:" line an error message of
// the "coredump" module wrapped in ANSI colour codes, CRLF line ends, and
// a line of other output after the data line number other (-1: none).
func zConsole(bin []byte, other int, ts string) []byte {
	var b bytes.Buffer
	line := func(msg string) {
		fmt.Fprintf(&b, "[%s] \x1b[1;31m<err> coredump: %s\x1b[0m\r\n", ts, msg)
	}
	line("#CD:BEGIN#")
	for i, n := 0, 0; i < len(bin); i, n = i+32, n+1 {
		line("#CD:" + hex.EncodeToString(bin[i:min(i+32, len(bin))]))
		if n == other {
			b.WriteString("\x1b[1;31m--- 3 messages dropped ---\r\n\x1b[0m")
		}
	}
	line("#CD:END#")
	return b.Bytes()
}

// zDump is a small decodable coredump whose PC tells dumps apart.
func zDump(pc uint32) []byte {
	return cat(zHeader(0), []byte{'A', 1, 0, 36, 0}, le32(0, 1, 2, 3, 12, 0x1001, pc, 0x01000000, 0x20000100),
		[]byte{'M', 1, 0}, le32(0x20000000, 0x20000040), make([]byte, 0x40))
}

func warningsHave(t *testing.T, d *Dump, want ...string) {
	t.Helper()
	all := strings.Join(d.Warnings, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q: want one holding %q", d.Warnings, w)
		}
	}
}

// TestZephyrConsoleLog: the console as printed (colours, timestamps, CRLF,
// another line between two data lines) decodes to the same dump as the
// plain lines; detection finds it from the content.
func TestZephyrConsoleLog(t *testing.T) {
	bin := zDump(0x2468)
	log := cat([]byte("*** Booting Zephyr OS build v2.5.0 ***\r\n[00:00:00.000,000] \x1b[0m<inf> main: up\x1b[0m\r\n"),
		zConsole(bin, 1, "00:00:00.330,000"), []byte("[00:00:00.331,000] \x1b[1;31m<err> os: Halting system\x1b[0m\r\n"))
	if f, ok := Detect(log); !ok || f.Name != FormatZephyrLog {
		t.Fatalf("detected %q, want %s", f.Name, FormatZephyrLog)
	}
	d, err := Parse(log, "console.log", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pc := d.Regs.Value(unwinders.PC); pc != 0x2468 {
		t.Errorf("PC 0x%x, want 0x2468", pc)
	}
	warningsHave(t, d, "1 other log lines between the coredump's #CD: lines were skipped (the first at line 6)")
	// Without the colours and CRs: the same registers and memory.
	plain, err := Parse([]byte(strings.NewReplacer("\x1b[1;31m", "", "\x1b[0m", "", "\r", "").Replace(string(log))), "plain.log", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Regs != d.Regs || len(plain.Memory) != len(d.Memory) || !bytes.Equal(plain.Memory[0].Data, d.Memory[0].Data) {
		t.Errorf("coloured and plain logs decode differently")
	}
}

// TestZephyrLogSeveralDumps: the last complete dump that decodes is
// analysed; every other is named with its lines and why it was not used.
func TestZephyrLogSeveralDumps(t *testing.T) {
	first, second := zConsole(zDump(0x1000), -1, "00:00:01.000,000"), zConsole(zDump(0x2000), -1, "00:00:09.000,000")
	for _, tc := range []struct {
		name   string
		log    []byte
		pc     uint32
		want   []string
		errOff int64
		err    string
	}{
		{"two complete", cat(first, second), 0x2000, []string{"the log holds 2 coredumps", "the one at lines 7-12 is analysed", "the coredump at lines 1-6 is not used: a later complete coredump is analysed"}, 0, ""},
		{"device error last", cat(first, []byte("#CD:BEGIN#\r\n#CD:ERROR CANNOT DUMP#\r\n#CD:END#\r\n")), 0x1000, []string{"lines 7-9 is not used: the device reported \"#CD:ERROR CANNOT DUMP#\""}, 0, ""},
		{"bad hex last", cat(first, []byte("#CD:BEGIN#\n#CD:5a45zz\n#CD:END#\n")), 0x1000, []string{"lines 7-9 is not used: offset", "invalid hex digit 'z'"}, 0, ""},
		{"cut by a reset", cat(first, first[:len(first)/2], second), 0x2000, []string{"the log holds 3 coredumps", "(a new #CD:BEGIN# at line"}, 0, ""},
		{"last does not decode", cat(first, []byte("#CD:BEGIN#\n#CD:5a450900\n#CD:END#\n")), 0x1000, []string{"lines 7-9 is not used: offset", "header version"}, 0, ""},
		{"incomplete after complete", cat(first, second[:len(second)-40]), 0x1000, []string{"the coredump at lines 7-end is not used"}, 0, ""},
		{"only incomplete", second[:len(second)-40], 0x2000, []string{"no \"#CD:END#\" line: the log may be cut short"}, 0, ""},
		{"stray lines", cat([]byte("#CD:0011\n#CD:END#\n"), first), 0x1000, []string{"1 #CD: data lines outside any", "1 #CD:END# lines without a #CD:BEGIN#"}, 0, ""},
		{"nothing decodes", []byte("#CD:BEGIN#\n#CD:5a45zz\n#CD:END#\n"), 0, nil, 19, "invalid hex digit 'z'"},
		{"cut data line", cat([]byte("#CD:BEGIN#\n#CD:5a#CD:45\n#CD:END#\n")), 0, nil, 11, "a #CD: line cut short by another"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse(tc.log, "multi.log", nil)
			if tc.err != "" {
				var fe *FormatError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !asFormatError(err, &fe) || fe.Offset != tc.errOff {
					t.Fatalf("error %v: want %q at offset %d", err, tc.err, tc.errOff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pc := d.Regs.Value(unwinders.PC); pc != tc.pc {
				t.Errorf("PC 0x%x: want the dump with PC 0x%x", pc, tc.pc)
			}
			warningsHave(t, d, tc.want...)
		})
	}
}

func asFormatError(err error, fe **FormatError) bool {
	e, ok := err.(*FormatError)
	*fe = e
	return ok
}

// TestZephyrLogEscapes: control sequences are removed within bounds, and
// error offsets still point into the file.
func TestZephyrLogEscapes(t *testing.T) {
	bin := zDump(0x3000)
	h := hex.EncodeToString(bin)
	for _, tc := range []struct {
		name, log string
		errOff    int64
		err       string
	}{
		{"escape inside the hex", "#CD:BEGIN#\n#CD:" + h[:10] + "\x1b[0m" + h[10:] + "\n#CD:END#\n", 0, ""},
		{"escape splitting a byte", "#CD:BEGIN#\n#CD:" + h[:11] + "\x1b[1;31m" + h[11:] + "\n#CD:END#\n", 0, ""},
		{"sequence cut by CR", "#CD:BEGIN#\x1b[0\r\n#CD:" + h + "\x1b[\r\n#CD:END#\x1b\r\n", 0, ""},
		{"sequence cut by the end", "#CD:BEGIN#\n#CD:" + h + "\n#CD:END#\x1b[1;3", 0, ""},
		{"two-byte escape", "#CD:BEGIN#\x1bc\n#CD:" + h + "\n#CD:END#\n", 0, ""},
		// Digit 'z' after an escape: its offset is that of the 'z' in the file.
		{"bad digit after an escape", "#CD:BEGIN#\n#CD:\x1b[0m5a45z0\n#CD:END#\n", 15 + 4 + 4, "invalid hex digit 'z'"},
		{"sequence too long", "#CD:BEGIN#\n#CD:\x1b[" + strings.Repeat("1;", 40) + "m" + h + "\n#CD:END#\n", 15 + 1, "invalid hex digit '['"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.log), "esc.log", nil)
			if tc.err != "" {
				var fe *FormatError
				if err == nil || !strings.Contains(err.Error(), tc.err) || !asFormatError(err, &fe) || fe.Offset != tc.errOff {
					t.Fatalf("error %v: want %q at offset %d", err, tc.err, tc.errOff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pc := d.Regs.Value(unwinders.PC); pc != 0x3000 {
				t.Errorf("PC 0x%x, want 0x3000", pc)
			}
		})
	}
}

// TestZephyrLogHugeLines: a long line of escapes or of hex is handled in
// one linear pass (bounded sequences), not refused.
func TestZephyrLogHugeLines(t *testing.T) {
	first := zConsole(zDump(0x1000), -1, "00:00:01.000,000")
	huge := cat(first, []byte("#CD:BEGIN#\n#CD:"), bytes.Repeat([]byte("\x1b[0m"), 1<<18), []byte("\n"),
		bytes.Repeat([]byte("x"), 1<<20), []byte("\n#CD:END#\n"))
	d, err := Parse(huge, "huge.log", nil)
	if err != nil {
		t.Fatal(err)
	}
	if pc := d.Regs.Value(unwinders.PC); pc != 0x1000 {
		t.Errorf("PC 0x%x, want 0x1000", pc)
	}
	warningsHave(t, d, "lines 7-10 is not used: it holds no data lines")
}

// TestZephyrLogFixtureTwoDumps: the Zephyr-like kernel's log of a k_oops
// (the thread is aborted, the system goes on) then a HardFault holds two
// coredumps; the second, the HardFault's, is analysed.
func TestZephyrLogFixtureTwoDumps(t *testing.T) {
	p := filepath.Join("..", "fixtures", "rtos-zephyr", "scenarios", "gcc-m3-O2-oops.zephyr.log")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("#CD:BEGIN#\x1b[0m\r\n")); n != 2 {
		t.Fatalf("%s: %d coloured BEGIN lines, want 2", p, n)
	}
	d, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	warningsHave(t, d, "the log holds 2 coredumps", "is not used: a later complete coredump is analysed", "other log lines between the coredump's #CD: lines were skipped")
	if !strings.Contains(d.Warnings[0], "Zephyr fatal error reason") && d.Regs.Value(unwinders.SP) == 0 {
		t.Errorf("the k_oops dump (SP 0) was chosen, want the HardFault's")
	}
	if sp := d.Regs.Value(unwinders.SP); sp == 0 {
		t.Errorf("SP 0: the first (k_oops) dump was analysed, want the second")
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, "K_ERR_KERNEL_OOPS") {
			t.Errorf("warning %q: the k_oops dump was analysed", w)
		}
	}
}
