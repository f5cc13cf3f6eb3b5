package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// checkZephyrLog decodes the Zephyr log buffer of a firmware-samples/
// zephyr-log crash and compares it byte for byte with what the firmware
// printed on its UART (console, CRLF line ends): the log thread printed
// part of the messages before the fault, the HardFault handler flushed
// the rest after the capture.
func checkZephyrLog(t *testing.T, dump, console string) {
	t.Helper()
	elf := repo + "/firmware-samples/zephyr-log/build/gcc-m3-O2.elf"
	out, errOut, code := run(t, "", "analyze", "--elf", elf, "--format", "json", dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Logs []struct {
			Source, Name, Text, Address, Note string
			Unread                            int
			Entries                           []struct {
				Address, Level, Source, Text, State, Data string
				Timestamp                                 uint64
			}
		} `json:"logs"`
		Frames []struct {
			Function string
			Args     []struct{ Name, Value string }
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Logs) != 1 || r.Logs[0].Source != "zephyr" || r.Logs[0].Name != "log_buffer" {
		t.Fatalf("logs: %+v, want Zephyr's log_buffer", r.Logs)
	}
	l := r.Logs[0]
	if !strings.Contains(l.Note, "log_msg, 16-byte header, 8-byte alignment (from DWARF)") {
		t.Errorf("note %q: want the layout read from the ELF's struct log_msg", l.Note)
	}
	con := strings.ReplaceAll(console, "\r\n", "\n")
	// Every decoded line is the console's, in its order, up to its end.
	if !strings.HasSuffix(con, l.Text) || !strings.HasSuffix(con[:len(con)-len(l.Text)], "\n") {
		t.Errorf("decoded log is not the end of the console output, byte for byte:\n%s\nconsole:\n%s", l.Text, con)
	}
	// The ring (128 words) keeps, past the messages still pending, the
	// freed messages warmup 9 to 12 whole (8 words each; the write index
	// cut warmup 8), found by walking from the write index to the ring's
	// end and from its start: the ring wrapped, so the addresses fall back.
	var states []string
	wrapped := false
	for i, e := range l.Entries {
		states = append(states, e.State)
		if i > 0 && e.Address < l.Entries[i-1].Address {
			wrapped = true
		}
	}
	want := "output output output output pending pending pending pending pending pending pending pending"
	if got := strings.Join(states, " "); got != want {
		t.Errorf("states %s\nwant   %s", got, want)
	}
	if !wrapped {
		t.Errorf("the entries' addresses never fall back: the ring's wrap is not covered: %+v", l.Entries)
	}
	// The pending messages (warmup 13 on) are the unread end.
	if i := strings.Index(con, "[00:00:00.289,380] <inf> app: warmup 13 of 14\n"); i < 0 || l.Unread != len(con)-i {
		t.Errorf("unread %d, want the %d bytes from warmup 13 on", l.Unread, len(con)-i)
	}
	if len(l.Entries) == 12 {
		e := l.Entries[8]
		if e.Level != "dbg" || e.Source != "sensor" || e.Text != "sensor_report: raw=0xdeadbef2 ll=-1234567890123 c=Z" {
			t.Errorf("entry 10: %+v", e)
		}
		// An int then a long long: the long long 8-aligned in the package.
		if e := l.Entries[9]; e.Text != "n=3 ll=9876543210 u=18446744073709551615" {
			t.Errorf("entry 9: %+v", e)
		}
		if e := l.Entries[10]; e.Data != "010203fe6869007f090a0b0c0d0e0f1041" {
			t.Errorf("entry 10 data %q", e.Data)
		}
	}
	found := false
	for _, f := range r.Frames {
		if f.Function == "sensor_fail" && len(f.Args) == 1 && f.Args[0].Name == "id" && f.Args[0].Value == "3" {
			found = true
		}
	}
	if !found {
		t.Errorf("no frame sensor_fail (id=3): %+v", r.Frames)
	}
	html, _, _ := run(t, "", "analyze", "--elf", elf, "--format", "html", dump)
	if !strings.Contains(html, "<summary><b>log_buffer</b> · zephyr · 0x20000030 · ") ||
		!strings.Contains(html, "[00:00:24.150,032] &lt;inf&gt; app: blob\n") {
		t.Errorf("html report has no Zephyr log")
	}
	text, _, _ := run(t, "", "analyze", "--elf", elf, dump)
	if !strings.Contains(text, "  zephyr \"log_buffer\" at 0x20000030, ") ||
		!strings.Contains(text, "    | [00:00:24.150,032] <inf> app: blob\n    |                               01 02 03 fe 68 69 00 7f  09 0a 0b 0c 0d 0e 0f 10 |....hi.. ........\n") {
		t.Errorf("text report:\n%s", text)
	}
}

// TestZephyrLogFirmwareDump: the committed capture of
// firmware-samples/zephyr-log and the console output of the same run
// (fixtures/zephyr-log/README.md).
func TestZephyrLogFirmwareDump(t *testing.T) {
	con, err := os.ReadFile(repo + "/fixtures/zephyr-log/gcc-m3-O2.console.txt")
	if err != nil {
		t.Fatal(err)
	}
	checkZephyrLog(t, repo+"/fixtures/zephyr-log/gcc-m3-O2.json", string(con))
}

// TestZephyrLogFirmwareLive runs firmware-samples/zephyr-log in
// qemu-system-arm with its UART in a file, captures it at the HardFault,
// lets it flush its log and compares.
func TestZephyrLogFirmwareLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs QEMU")
	}
	dir := t.TempDir()
	consoleFile := filepath.Join(dir, "console.txt")
	elf := repo + "/firmware-samples/zephyr-log/build/gcc-m3-O2.elf"
	addr := startQEMU(t, "mps2-an385", elf, "-serial", "file:"+consoleFile, "-monitor", "none")
	dump := filepath.Join(dir, "zlog.json")
	if _, errOut, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "--wait-fault", "--resume", "--timeout", "30s", "-o", dump); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
	var con []byte
	for i := 0; i < 200; i++ {
		con, _ = os.ReadFile(consoleFile)
		if strings.Contains(string(con), "about to crash") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkZephyrLog(t, dump, string(con))
}
