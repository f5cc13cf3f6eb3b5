package cli

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver/client/clienttest"
	"github.com/faultline-dev/faultline/unwinders"
)

// fakeTarget is a scripted server holding a Cortex-M3 halted in
// HardFault_Handler of gcc-m3-O2 (registers in GDB's default layout, no
// target description), its SCB block and 16 KiB of RAM.
func fakeTarget(t *testing.T) (*clienttest.Server, string) {
	t.Helper()
	return fakeTargetWith(t, nil)
}

// fakeTargetWith is fakeTarget changed by edit before it serves.
func fakeTargetWith(t *testing.T, edit func(s *clienttest.Server, le func(uint32) string)) (*clienttest.Server, string) {
	t.Helper()
	le := func(v uint32) string {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], v)
		return fmt.Sprintf("%x", b)
	}
	var g strings.Builder
	for i := 0; i < 13; i++ {
		g.WriteString(le(uint32(i)))
	}
	g.WriteString(le(0x20003f90) + le(0xfffffff9) + le(0xc0))
	g.WriteString(strings.Repeat("0", 8*24+8)) // f0-f7, fps
	g.WriteString(le(0x01000003))
	scb := make([]byte, 0x40)
	binary.LittleEndian.PutUint32(scb, 0x412fc231)
	s := &clienttest.Server{
		PacketSize: 0x204,
		G:          g.String(),
		P:          map[int]string{15: le(0x100)},
		Mem:        []clienttest.Region{{Addr: 0xe000ed00, Data: scb}, {Addr: 0x20000000, Data: make([]byte, 0x4000)}},
	}
	if edit != nil {
		edit(s, le)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		conn, err := l.Accept()
		if err == nil {
			s.Serve(conn)
		}
	}()
	return s, l.Addr().String()
}

// A server that drops the connection in the middle of the RAM read: exit
// 1, a message that says so, and no file under the output's name (nor
// anything else in its directory).
func TestCaptureDroppedConnectionWritesNothing(t *testing.T) {
	s, addr := fakeTarget(t)
	s.DropAfterReads = 6
	dir := t.TempDir()
	out := filepath.Join(dir, "crash.json")
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out)
	if code != ExitInput || !strings.Contains(stderr, "closed the connection") {
		t.Fatalf("exit %d, stderr %q: want 1 and \"closed the connection\"", code, stderr)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 0 {
		t.Errorf("files left in the output directory: %v", ents)
	}
}

// --wait-fault on a target that never stops at a handler: exit status 3,
// the target interrupted, the breakpoints removed again.
func TestCaptureWaitFaultTimeout(t *testing.T) {
	s, addr := fakeTarget(t)
	s.Run = true
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "crash.json")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out, "--wait-fault", "--timeout", "300ms", "--set", "crash_scenario=4")
	if code != ExitNoFault || !strings.Contains(stderr, "did not fault") {
		t.Fatalf("exit %d, stderr %q: want 3 and \"did not fault\"", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a dump was written although the target did not fault")
	}
	set, removed := map[string]bool{}, map[string]bool{}
	for _, p := range s.Log() {
		switch {
		case strings.HasPrefix(p, "Z1,"):
			set[p[3:]] = true
		case strings.HasPrefix(p, "z1,"):
			removed[p[3:]] = true
		}
	}
	if len(set) == 0 {
		t.Fatal("no hardware breakpoint was set")
	}
	for bp := range set {
		if !removed[bp] {
			t.Errorf("breakpoint %s was not removed", bp)
		}
	}
}

// A dump served by `faultline gdbserver` and captured back (its regions
// as --region) has the same registers and the same memory, byte for byte.
func TestCaptureRoundTripThroughGDBServer(t *testing.T) {
	for _, name := range []string{"gcc-m3-O2-psp_thread", "gcc-m4f-O2-fpu_crash"} {
		t.Run(name, func(t *testing.T) {
			build := strings.TrimSuffix(strings.TrimSuffix(name, "-psp_thread"), "-fpu_crash")
			elf := filepath.Join(repo, "firmware-samples/build", build+".elf")
			dump := filepath.Join(repo, "fixtures/qemu", name+".json")
			orig, err := crashdump.Load(dump)
			if err != nil {
				t.Fatal(err)
			}
			defer orig.Close()
			errR, errW := io.Pipe()
			done := make(chan int, 1)
			go func() {
				code := Run([]string{"gdbserver", "--listen", "127.0.0.1:0", "--sessions", "1", "--elf", elf, dump},
					strings.NewReader(""), io.Discard, errW)
				errW.Close()
				done <- code
			}()
			lines := bufio.NewScanner(errR)
			var addr string
			re := regexp.MustCompile(`target remote (127\.0\.0\.1:\d+)`)
			for addr == "" && lines.Scan() {
				if m := re.FindStringSubmatch(lines.Text()); m != nil {
					addr = m[1]
				}
			}
			if addr == "" {
				t.Fatal("the server did not say where it listens")
			}
			go io.Copy(io.Discard, errR)
			args := []string{"capture", "--remote", addr, "--elf", elf, "-o", filepath.Join(t.TempDir(), "back.json")}
			for _, r := range orig.Memory {
				args = append(args, "--region", fmt.Sprintf("%#x:%d", r.Addr, len(r.Data)))
			}
			_, stderr, code := run(t, "", args...)
			if code != 0 {
				t.Fatalf("capture: exit %d: %s", code, stderr)
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("gdbserver did not end its one session")
			}
			back, err := crashdump.Load(args[6])
			if err != nil {
				t.Fatal(err)
			}
			defer back.Close()
			if !back.Regs.Equal(&orig.Regs) {
				var diff []string
				for r := unwinders.Reg(0); int(r) < unwinders.NumRegs; r++ {
					a, okA := orig.Regs.Get(r)
					b, okB := back.Regs.Get(r)
					if a != b || okA != okB {
						diff = append(diff, fmt.Sprintf("%s: served %#x (%v), captured %#x (%v)", r, a, okA, b, okB))
					}
				}
				t.Errorf("registers differ: %s", strings.Join(diff, "; "))
			}
			if back.BuildID != orig.BuildID && orig.BuildID != "" {
				t.Errorf("build ID %q, want %q", back.BuildID, orig.BuildID)
			}
			img := func(d *crashdump.Dump) map[uint32]byte {
				m := map[uint32]byte{}
				for _, r := range d.Memory {
					for i, b := range r.Data {
						m[r.Addr+uint32(i)] = b
					}
				}
				return m
			}
			a, b := img(orig), img(back)
			if len(a) != len(b) {
				t.Errorf("memory: served %d bytes, captured %d", len(a), len(b))
			}
			bad := 0
			for k, v := range a {
				if w, ok := b[k]; !ok || w != v {
					if bad++; bad < 5 {
						t.Errorf("memory 0x%08x: served %#02x, captured %#02x (%v)", k, v, w, ok)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d bytes differ", bad)
			}
		})
	}
}

// Memory the server refuses is a hole: listed in the dump's capture
// object and left out of its memory, and the capture still succeeds.
func TestCaptureRecordsHoles(t *testing.T) {
	_, addr := fakeTarget(t)
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "crash.json")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out, "--region", "0x20003f00:0x200")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m struct {
		Capture crashdump.CaptureInfo `json:"capture"`
	}
	data, _ := os.ReadFile(out)
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := crashdump.CaptureHole{Address: "0x20004000", Size: 0x100, Reply: "E14"}
	if len(m.Capture.Holes) != 1 || m.Capture.Holes[0] != want {
		t.Errorf("holes %+v: want [%+v]", m.Capture.Holes, want)
	}
	if !strings.Contains(stderr, "0x20004000-0x20004100") {
		t.Errorf("no warning names the hole: %s", stderr)
	}
	d, err := crashdump.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, r := range d.Memory {
		if r.Contains(0x20004000) {
			t.Errorf("the hole is in the dump's memory (%s)", r.Name)
		}
	}
}

// A target that runs when capture connects (a server that does not answer
// "?" meanwhile) is interrupted, within a few seconds, and captured.
func TestCaptureHaltsARunningTarget(t *testing.T) {
	s, addr := fakeTarget(t)
	s.Running = true
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "crash.json")
	start := time.Now()
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v to halt the target", d)
	}
	if !slices.Contains(s.Log(), "\x03") {
		t.Error("the target was not interrupted")
	}
}

// --wait-fault on a target already halted in a fault handler captures it
// as it is (running would leave the handler): no breakpoint, no c.
func TestCaptureWaitFaultAlreadyInHandler(t *testing.T) {
	s, addr := fakeTarget(t)
	s.Run = true         // a c would never stop
	s.P[15] = "c0000000" // pc 0xc0: HardFault_Handler of gcc-m3-O2
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	out := filepath.Join(t.TempDir(), "crash.json")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out, "--wait-fault", "--timeout", "5s")
	if code != 0 || !strings.Contains(stderr, "already halted in HardFault_Handler") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, p := range s.Log() {
		if p == "c" || strings.HasPrefix(p, "Z") {
			t.Errorf("sent %q to a target already in its fault handler", p)
		}
	}
}

func TestCaptureUsage(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"capture", "--elf", elf, "-o", "x.json"}, "--remote is required"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "-o", "x.json"}, "--elf is required"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf}, "-o DUMP is required"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", "x", "--to", "json"}, "--to \"json\""},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", "x", "--set", "a=1"}, "--set is used with --wait-fault"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", "x", "--region", "0x20000000"}, "want ADDR:SIZE"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", "x", "--region", "0xffffff00:0x200"}, "within the 32-bit address space"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", "-", "--analyze"}, "--analyze needs -o FILE"},
		{[]string{"capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", elf}, "-o"},
	} {
		_, stderr, code := run(t, "", tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q: want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	// A server that is not there: exit 1, naming it.
	_, stderr, code := run(t, "", "capture", "--remote", "127.0.0.1:1", "--elf", elf, "-o", filepath.Join(t.TempDir(), "x.json"))
	if code != ExitInput || !strings.Contains(stderr, "127.0.0.1:1") {
		t.Errorf("no server: exit %d, stderr %q", code, stderr)
	}
}

// The server's memory map bounds the window read around a stack pointer
// outside the ELF's RAM: SP 0x30000f80 in a 4 KiB RAM region that the map
// ends at 0x30001000 is read up to there (128 bytes), not 4 KiB past it,
// so no read the server refuses and no hole; without the map the window
// runs on and the reads past the region are holes.
func TestCaptureMemoryMapBoundsSPWindow(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	for _, withMap := range []bool{true, false} {
		_, addr := fakeTargetWith(t, func(s *clienttest.Server, le func(uint32) string) {
			s.G = s.G[:13*8] + le(0x30000f80) + s.G[14*8:]
			s.Mem = append(s.Mem, clienttest.Region{Addr: 0x30000000, Data: make([]byte, 0x1000)})
			if withMap {
				s.MemoryMap = `<memory-map><memory type="flash" start="0x0" length="0x400000"/><memory type="ram" start="0x20000000" length="0x4000"/><memory type="ram" start="0x30000000" length="0x1000"/><memory type="ram" start="0xe0000000" length="0x20000000"/></memory-map>`
			}
		})
		out := filepath.Join(t.TempDir(), "c.json")
		_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out, "--no-step")
		if code != 0 {
			t.Fatalf("map %v: exit %d: %s", withMap, code, stderr)
		}
		d, err := crashdump.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		refused := strings.Contains(stderr, "memory 0x30000f80-0x30001f80: the server replied E14")
		held := false
		for _, r := range d.Memory {
			held = held || r.Contains(0x30000f80) && r.Contains(0x30000fff)
		}
		bounded := strings.Contains(stderr, "read 0x30000f80-0x30001000 (bounded by the server's memory map: ram 0x30000000-0x30001000)")
		if withMap && (!bounded || refused || !held) {
			t.Errorf("with the map: bounded %v, refused %v, stack held %v: %s", bounded, refused, held, stderr)
		}
		// Without the map the window runs past the region: the server
		// refuses it (in 256-byte pieces, each straddling the end), and
		// the 128 bytes of stack are lost with it.
		if !withMap && (bounded || !refused || held) {
			t.Errorf("without the map: bounded %v, refused %v, stack held %v: %s", bounded, refused, held, stderr)
		}
	}
}

// A Black Magic Probe answers "?" with W00 until a target is attached:
// capture scans (qRcmd swdp_scan) and attaches target 1 (vAttach;1), says
// so, and captures; a server that answers W00 and knows no swdp_scan is
// an error naming the stop reply.
func TestCaptureAttachesLikeBlackMagicProbe(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	s, addr := fakeTargetWith(t, func(s *clienttest.Server, _ func(uint32) string) { s.Unattached = true })
	out := filepath.Join(t.TempDir(), "c.json")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out, "--no-step")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, `scanned with "monitor swdp_scan" and attached target 1`) {
		t.Errorf("capture did not say it attached: %s", stderr)
	}
	if log := strings.Join(s.Log(), " "); !strings.Contains(log, "vAttach;1") {
		t.Errorf("no vAttach;1 sent: %s", log)
	}
	_, addr = fakeTargetWith(t, func(s *clienttest.Server, _ func(uint32) string) { s.Stop = "W00" })
	_, stderr, code = run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", filepath.Join(t.TempDir(), "d.json"))
	if code == 0 || !strings.Contains(stderr, `the target has exited (stop reply "W00")`) {
		t.Errorf("a W00 server without swdp_scan: exit %d: %s", code, stderr)
	}
}

// A server that writes memory but cannot step ("s" and vCont unknown):
// the MRS instructions written at the PC are taken back, the registers
// checked, and MSP/PSP stay unknown, with a warning saying so.
func TestCaptureStepUnsupportedRestores(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	code0 := make([]byte, 0x200)
	for i := range code0 {
		code0[i] = byte(i*7 + 1)
	}
	s, addr := fakeTargetWith(t, func(s *clienttest.Server, _ func(uint32) string) {
		s.Mem = append(s.Mem, clienttest.Region{Addr: 0, Data: append([]byte(nil), code0...)})
	})
	out := filepath.Join(t.TempDir(), "c.json")
	_, stderr, code := run(t, "", "capture", "--remote", addr, "--elf", elf, "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "stepping MRS at pc 0x000000c0 failed") || !strings.Contains(stderr, "left unknown (target restored and checked)") {
		t.Errorf("capture did not say the step failed and the target was restored: %s", stderr)
	}
	log := strings.Join(s.Log(), " ")
	if !strings.Contains(log, "Mc0,") {
		t.Errorf("no MRS written at the PC: %s", log)
	}
	for _, r := range s.Mem {
		if r.Addr == 0 && !slices.Equal(r.Data, code0) {
			t.Errorf("the code at 0 was not written back")
		}
	}
	d, err := crashdump.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Regs.Known(unwinders.PSP) {
		t.Errorf("PSP known after a failed step")
	}
}
