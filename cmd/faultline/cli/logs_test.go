package cli

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRTTLogInDump plants a SEGGER RTT control block (our own layout
// writer: ID, counts, one up buffer and one down buffer) in the unused
// stack area of a real QEMU dump's RAM, its ring wrapped, and checks
// analyze prints the up buffer's text oldest first, byte for byte, in
// text and JSON; --log reads a string symbol the firmware has.
func TestRTTLogInDump(t *testing.T) {
	src := repo + "/fixtures/qemu/gcc-m3-O2-null_write_deep"
	ram, err := os.ReadFile(src + ".ram.bin")
	if err != nil {
		t.Fatal(err)
	}
	const base = 0x20000000
	le := binary.LittleEndian
	cb := ram[0x1000-0:]
	copy(cb, "SEGGER RTT\x00\x00\x00\x00\x00\x00")
	le.PutUint32(cb[16:], 1)
	le.PutUint32(cb[20:], 1)
	for k, v := range []uint32{base + 0x1100, base + 0x1200, 32, 10, 20, 0} {
		le.PutUint32(cb[24+4*k:], v)
	}
	for k, v := range []uint32{0, base + 0x1300, 16, 0, 0, 0} {
		le.PutUint32(cb[48+4*k:], v)
	}
	copy(ram[0x1100:], "Terminal\x00")
	// 32-byte ring, next write at 10: bytes 10..31 are older than 0..9.
	older, newest := "x boot ok\nstate=RUN\ner", "r 427\t\x1bC\n\n"
	copy(ram[0x1200+10:], older)
	copy(ram[0x1200:], newest)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "d.ram.bin"), ram, 0o644); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(src + ".json")
	if err != nil {
		t.Fatal(err)
	}
	js = []byte(strings.Replace(string(js), `"gcc-m3-O2-null_write_deep.ram.bin"`, `"d.ram.bin"`, 1))
	dump := filepath.Join(dir, "d.json")
	if err := os.WriteFile(dump, js, 0o644); err != nil {
		t.Fatal(err)
	}
	elf := repo + "/firmware-samples/build/gcc-m3-O2.elf"
	out, errOut, code := run(t, "", "analyze", "--elf", elf, "--format", "json", dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Logs []struct {
			Source, Name, Text, Address string
			Truncated                   bool
			Unread                      int
		} `json:"logs"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	wantText := "x boot ok\nstate=RUN\nerr 427\t\\x1bC\n\n"
	if len(r.Logs) != 1 || r.Logs[0].Source != "rtt" || r.Logs[0].Name != "Terminal" || r.Logs[0].Text != wantText ||
		r.Logs[0].Address != "0x20001200" || r.Logs[0].Unread != 25 {
		t.Errorf("logs: %+v\nwant text %q", r.Logs, wantText)
	}
	out, _, _ = run(t, "", "analyze", "--elf", elf, dump)
	want := "\nLogs (text left in RAM, oldest first)\n  rtt \"Terminal\" at 0x20001200, 25 bytes unread\n    note: the ring has wrapped: older text was overwritten\n" +
		"    | x boot ok\n    | state=RUN\n    | err 427\t\\x1bC\n    | \n"
	if !strings.Contains(out, want) {
		t.Errorf("text report:\n%s\nwant it to hold:\n%s", out, want)
	}
	out, errOut, code = run(t, "", "analyze", "--elf", elf, "--format", "html", dump)
	if code != 0 || !strings.Contains(out, "<h2>Logs") || !strings.Contains(out, "x boot ok\nstate=RUN\nerr 427\t\\x1bC") ||
		!strings.Contains(out, `<span class="args">(value=2549672336)</span>`) {
		t.Errorf("html (exit %d, %s): no logs or args section", code, errOut)
	}
	// Without the control block: no logs.
	out, _, _ = run(t, "", "analyze", "--elf", elf, "--format", "json", src+".json")
	if strings.Contains(out, `"logs"`) {
		t.Errorf("logs in a dump without RTT:\n%s", out)
	}
	// --log on a symbol that is not in the ELF is a warning, not a failure.
	out, _, code = run(t, "", "analyze", "--elf", elf, "--log", "no_such_log", dump)
	if code != 0 || !strings.Contains(out, `--log no_such_log: no symbol "no_such_log"`) {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

// rttWant is what firmware-samples/rtt/rtt.c wrote, derived from its
// source: Terminal (64 bytes) got "boot\n" "init ok\n" (read by the host:
// RdOff 13), six "tick N\n" and "sensor 3 timeout\n", which wrapped over
// "boot\ninit": the ring from WrOff 8 holds the already read "t ok\n" and
// 59 unread bytes. log_ring (32 bytes) lost "adc " of its 36.
var rttWant = []struct{ source, name, text string }{
	{"rtt", "Terminal", "t ok\ntick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\nsensor 3 timeout\n"},
	{"rtt", "Trace", "trace: start\t\\x01\n"},
	{"symbol", "last_message", "giving up"},
	{"symbol", "log_ring", "ready;sensor 3 timeout;giving up"},
}

func checkRTTDump(t *testing.T, dump string) {
	t.Helper()
	elf := repo + "/firmware-samples/rtt/build/gcc-m3-O2.elf"
	out, errOut, code := run(t, "", "analyze", "--elf", elf, "--format", "json", "--log", "last_message", "--log", "log_ring:log_head", dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Logs []struct {
			Source, Name, Text string
			Unread             int
		} `json:"logs"`
		Frames []struct {
			Function string
			Args     []struct{ Name, Value string }
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Logs) != len(rttWant) {
		t.Fatalf("%d logs, want %d: %+v", len(r.Logs), len(rttWant), r.Logs)
	}
	for i, w := range rttWant {
		if l := r.Logs[i]; l.Source != w.source || l.Name != w.name || l.Text != w.text {
			t.Errorf("log %d: %s %q %q, want %s %q %q", i, l.Source, l.Name, l.Text, w.source, w.name, w.text)
		}
	}
	if r.Logs[0].Unread != 59 {
		t.Errorf("Terminal: %d bytes unread, want 59 (RdOff 13 to WrOff 8 around 64)", r.Logs[0].Unread)
	}
	// The faulting frame's argument: sensor_fail(3).
	found := false
	for _, f := range r.Frames {
		if f.Function == "sensor_fail" && len(f.Args) == 1 && f.Args[0].Name == "id" && f.Args[0].Value == "3" {
			found = true
		}
	}
	if !found {
		t.Errorf("no frame sensor_fail (id=3): %+v", r.Frames)
	}
}

// TestRTTFirmwareDump: the committed capture of firmware-samples/rtt
// crashed in QEMU (fixtures/rtt/README.md).
func TestRTTFirmwareDump(t *testing.T) {
	checkRTTDump(t, repo+"/fixtures/rtt/gcc-m3-O2.json")
}

// TestRTTFirmwareLive runs firmware-samples/rtt in qemu-system-arm,
// captures it at the HardFault with faultline capture and decodes the
// logs it wrote.
func TestRTTFirmwareLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs QEMU")
	}
	elf := repo + "/firmware-samples/rtt/build/gcc-m3-O2.elf"
	addr := startQEMU(t, "mps2-an385", elf)
	dump := filepath.Join(t.TempDir(), "rtt.json")
	if _, errOut, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "--wait-fault", "--timeout", "30s", "-o", dump); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
	checkRTTDump(t, dump)
}
