package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver/client"
	"github.com/faultline-dev/faultline/unwinders"
)

// `faultline capture` against real GDB servers: qemu-system-arm running
// the sample firmware (the same machines as fixtures/oracle/run.sh), and
// faultline's own gdbserver.

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startQEMU starts qemu-system-arm halted at reset with its gdbstub on a
// free loopback port and returns "127.0.0.1:PORT"; the QEMU is killed
// when the test ends (and bounded by timeout(1) besides).
func startQEMU(t *testing.T, machine, elf string, extra ...string) string {
	t.Helper()
	qemu, err := exec.LookPath("qemu-system-arm")
	if err != nil {
		t.Skip("qemu-system-arm is not installed (make test installs it): the live capture tests need it")
	}
	for attempt := 0; attempt < 3; attempt++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		qargs := []string{"-M", machine, "-nographic", "-S", "-gdb", "tcp:" + addr, "-kernel", elf}
		if !slices.Contains(extra, "-serial") {
			qargs = append(qargs, "-serial", "none")
		}
		if len(extra) == 0 {
			qargs = append(qargs, "-monitor", "none")
		}
		cmd := exec.CommandContext(ctx, qemu, append(qargs, extra...)...)
		log := filepath.Join(t.TempDir(), "qemu.log")
		lf, err := os.Create(log)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = lf, lf
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lf.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		// Wait for the port to listen without connecting to it (a
		// connection would be QEMU's one gdb session): /proc/net/tcp.
		for i := 0; i < 100; i++ {
			select {
			case <-done:
				i = 100
				continue
			default:
			}
			if listening(addr) {
				return addr
			}
			time.Sleep(50 * time.Millisecond)
		}
		msg, _ := os.ReadFile(log)
		t.Logf("QEMU did not listen on %s (attempt %d): %s", addr, attempt+1, msg)
		cancel()
	}
	t.Fatal("QEMU did not start")
	return ""
}

// listening reports whether a socket listens on addr (127.0.0.1:PORT),
// from /proc/net/tcp (state 0A); elsewhere it assumes so after a pause.
func listening(addr string) bool {
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		time.Sleep(time.Second)
		return true
	}
	want := fmt.Sprintf(":%04X ", p)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1]+" ", want) && f[3] == "0A" {
			return true
		}
	}
	return false
}

// liveReport is the part of analyze --format json the comparisons use.
type liveReport struct {
	report.Report
	Regs  map[string]string `json:"registers"`
	FRegs map[string]string `json:"fault_registers"`
}

func liveAnalyze(t *testing.T, elf, dump string) liveReport {
	t.Helper()
	stdout, errs, code := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("analyze %s: exit %d: %s", dump, code, errs)
	}
	var r liveReport
	if err := json.Unmarshal([]byte(stdout), &r.Report); err != nil {
		t.Fatalf("analyze %s: %v", dump, err)
	}
	var raw struct {
		Regs  map[string]string `json:"registers"`
		FRegs map[string]string `json:"fault_registers"`
	}
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("analyze %s: %v", dump, err)
	}
	r.Regs, r.FRegs = raw.Regs, raw.FRegs
	return r
}

// liveFrames are the frames as "function@pc" ("<exception>@EXC_RETURN").
func liveFrames(r report.Report) []string {
	var out []string
	for _, f := range r.Frames {
		if f.Kind == "exception" {
			out = append(out, "<exception>@"+f.ExcReturn)
			continue
		}
		out = append(out, f.Function+"@"+f.PC)
	}
	return out
}

// liveCase is one QEMU oracle scenario to capture live.
type liveCase struct{ name, elf, machine, oracle, set string }

// liveScenarios are the sample firmware's scenarios, longest name first
// (a fixture is <build>-<scenario>.json).
var liveScenarios = []string{"null_write_deep", "null_fnptr", "psp_thread", "irq_crash", "fpu_crash", "udf", "div0"}

// liveMachine is the QEMU machine of a build's core (fixtures/oracle/run.sh).
func liveMachine(build string) string {
	switch {
	case strings.Contains(build, "-m0-"):
		return "microbit"
	case strings.Contains(build, "-m3-"):
		return "mps2-an385"
	case strings.Contains(build, "-m4f-"):
		return "mps2-an386"
	case strings.Contains(build, "-m33-"):
		return "mps2-an505"
	}
	return ""
}

// liveOracleCases are every scenario of every build with a QEMU+GDB
// oracle dump: fixtures/qemu (the sample firmware on M3 and M4F) and the
// corpora fixtures/qemu-cxx, qemu-dispatch and qemu-excentry (scenarios
// from firmware-samples/<dir>/scenarios.txt, as fixtures/oracle/run.sh
// runs them), or with -short those of fixtures/qemu's gcc-m3-O2 and
// gcc-m4f-O2 only; and every build of the FreeRTOS look-alike
// (fixtures/rtos/freertos: M0, M3, M4F and M33, the only M33 oracle dumps
// there are; it crashes a task on its own).
func liveOracleCases(t *testing.T) []liveCase {
	t.Helper()
	var cases []liveCase
	for _, corpus := range []string{"", "cxx", "dispatch", "excentry"} {
		if testing.Short() && corpus != "" {
			continue
		}
		fixDir, fwDir, prefix := "fixtures/qemu", "firmware-samples", ""
		numbers := map[string]int{}
		for _, sc := range liveScenarios {
			numbers[sc] = scenarioNumbers[sc]
		}
		if corpus != "" {
			fixDir, fwDir, prefix = "fixtures/qemu-"+corpus, "firmware-samples/"+corpus, corpus+"-"
			numbers = map[string]int{}
			data, err := os.ReadFile(filepath.Join(repo, fwDir, "scenarios.txt"))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(data), "\n") {
				f := strings.Fields(line)
				if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
					n, err := strconv.Atoi(f[0])
					if err != nil {
						t.Fatalf("%s/scenarios.txt: %q", fwDir, line)
					}
					numbers[f[1]] = n
				}
			}
		}
		dumps, _ := filepath.Glob(filepath.Join(repo, fixDir, "*.json"))
		if len(dumps) == 0 {
			t.Fatalf("no oracle dumps in %s", fixDir)
		}
		for _, o := range dumps {
			base := strings.TrimSuffix(filepath.Base(o), ".json")
			sc, build := "", ""
			for name := range numbers {
				if b, ok := strings.CutSuffix(base, "-"+name); ok && len(name) > len(sc) {
					sc, build = name, b
				}
			}
			if sc == "" || liveMachine(build) == "" {
				t.Errorf("%s: not <build>-<scenario> of a known core and scenario", o)
				continue
			}
			if testing.Short() && build != "gcc-m3-O2" && build != "gcc-m4f-O2" {
				continue
			}
			cases = append(cases, liveCase{prefix + base, filepath.Join(repo, fwDir, "build", build+".elf"), liveMachine(build), o,
				fmt.Sprintf("crash_scenario=%d", numbers[sc])})
		}
	}
	rtosDumps, _ := filepath.Glob(filepath.Join(repo, "fixtures/rtos/freertos/*.json"))
	for _, o := range rtosDumps {
		build := strings.TrimSuffix(filepath.Base(o), ".json")
		if strings.HasSuffix(build, ".tasks") || liveMachine(build) == "" {
			continue
		}
		cases = append(cases, liveCase{"freertos-" + build, filepath.Join(repo, "firmware-samples/rtos-freertos/build", build+".elf"), liveMachine(build), o, ""})
	}
	return cases
}

// liveParallel bounds the QEMUs running at once.
var liveParallel = make(chan struct{}, 2)

// TestCaptureQEMUEqualsOracle: for every QEMU oracle scenario (see
// liveOracleCases: M3, M4F with an FP context, M0 and M33), capture
// --wait-fault --set crash_scenario=N against qemu-system-arm, then
// compare analyze on the capture with analyze on the committed oracle
// dump (taken by GDB at the same breakpoint):
//
//   - the fault (exception, causes, address) and every fault status
//     register (the SCB block and, on M4F, FPCCR/FPCAR/FPDSCR);
//   - every register the capture holds, which must include r0-r12, sp,
//     lr, pc, xpsr, msp, psp, control, primask (basepri and faultmask
//     but on M0) and, with an FPU, s0-s31 and fpscr;
//   - every frame (function and PC, exception frames by EXC_RETURN),
//     and every RTOS thread with its frames.
//
// QEMU 7.2's gdbstub gives no MSP, PSP, CONTROL or masks: capture reads
// them by stepping MRS instructions written at the PC (the oracle by
// running a routine in the firmware, fl_capture_sysregs), so the walks
// through an exception frame on the process stack (psp_thread, the
// FreeRTOS tasks) are compared whole, as every other.
func TestCaptureQEMUEqualsOracle(t *testing.T) {
	cases := liveOracleCases(t)
	dir := t.TempDir()
	for _, lc := range cases {
		t.Run(lc.name, func(t *testing.T) {
			t.Parallel()
			liveParallel <- struct{}{}
			defer func() { <-liveParallel }()
			elf, oracle := lc.elf, lc.oracle
			remote := startQEMU(t, lc.machine, elf)
			out := filepath.Join(dir, lc.name+".json")
			args := []string{"capture", "--remote", remote, "--elf", elf, "-o", out, "--wait-fault", "--timeout", "20s"}
			if lc.set != "" {
				args = append(args, "--set", lc.set)
			}
			_, stderr, code := run(t, "", args...)
			if code != 0 {
				t.Fatalf("capture: exit %d: %s", code, stderr)
			}
			if !strings.Contains(stderr, "stopped in HardFault_Handler") {
				t.Errorf("capture did not say where the target stopped: %s", stderr)
			}
			if !strings.Contains(stderr, "read them from the core by writing") || !strings.Contains(stderr, "written back and checked") {
				t.Errorf("capture did not say it stepped MRS for the registers QEMU lacks: %s", stderr)
			}
			got, want := liveAnalyze(t, elf, out), liveAnalyze(t, elf, oracle)
			sameFault(t, got.Fault, want.Fault, "oracle")
			for k, v := range want.FRegs {
				if got.FRegs[k] != v {
					t.Errorf("fault register %s: capture %q, oracle %q", k, got.FRegs[k], v)
				}
			}
			need := []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xpsr",
				"msp", "psp", "control", "primask"}
			if !strings.Contains(lc.name, "-m0-") {
				need = append(need, "basepri", "faultmask")
			}
			if strings.Contains(lc.name, "m4f") || strings.Contains(lc.name, "m33") && !strings.Contains(lc.name, "-tz") {
				for i := 0; i < 32; i++ {
					need = append(need, fmt.Sprintf("s%d", i))
				}
				need = append(need, "fpscr")
			}
			for _, k := range need {
				if _, ok := got.Regs[k]; !ok {
					t.Errorf("the capture lacks register %s", k)
				}
			}
			for k, v := range got.Regs {
				if _, ok := want.Regs[k]; !ok && (k == "basepri" || k == "faultmask") && strings.HasPrefix(lc.name, "freertos-") {
					continue // the FreeRTOS oracle's GDB script reads MSP, PSP, CONTROL, PRIMASK only
				}
				if want.Regs[k] != v {
					t.Errorf("register %s: capture %s, oracle %s", k, v, want.Regs[k])
				}
			}
			g, w := liveFrames(got.Report), liveFrames(want.Report)
			if !slices.Equal(g, w) {
				t.Errorf("frames differ:\n capture %q\n oracle  %q", g, w)
			}
			if len(g) < 2 {
				t.Errorf("backtrace too short: %q", g)
			}
			if got.Stop != want.Stop {
				t.Errorf("stop differs:\n capture %q\n oracle  %q", got.Stop, want.Stop)
			}
			// RTOS threads: the same list, each walked the same.
			if len(got.Threads) != len(want.Threads) {
				t.Errorf("%d threads, oracle %d", len(got.Threads), len(want.Threads))
			}
			for i := range min(len(got.Threads), len(want.Threads)) {
				gt, wt := got.Threads[i], want.Threads[i]
				if gt.Name != wt.Name || gt.State != wt.State || gt.Current != wt.Current {
					t.Errorf("thread %d: %s %s current=%v, oracle %s %s current=%v", i, gt.Name, gt.State, gt.Current, wt.Name, wt.State, wt.Current)
				}
				gf := liveFrames(report.Report{Frames: gt.Frames})
				wf := liveFrames(report.Report{Frames: wt.Frames})
				if !slices.Equal(gf, wf) {
					t.Errorf("thread %s: frames differ:\n capture %q\n oracle  %q", gt.Name, gf, wf)
				}
			}
		})
	}
	min := 440
	if testing.Short() {
		min = 30
	}
	if len(cases) < min {
		t.Errorf("only %d oracle scenarios found (want at least %d)", len(cases), min)
	}
}

var pspReg = unwinders.PSP

// --no-step leaves the target untouched: QEMU gives no PSP, so the dump
// has none, the capture says so, and the walk stops at the exception
// frame on the process stack (a prefix of the oracle's frames).
func TestCaptureNoStep(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	oracle := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-psp_thread.json")
	remote := startQEMU(t, "mps2-an385", elf)
	out := filepath.Join(t.TempDir(), "c.json")
	_, stderr, code := run(t, "", "capture", "--remote", remote, "--elf", elf, "-o", out, "--wait-fault", "--set", "crash_scenario=6", "--no-step")
	if code != 0 {
		t.Fatalf("capture: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "--no-step: not read from the core") || strings.Contains(stderr, "read them from the core by writing") {
		t.Errorf("capture --no-step did not say the registers were left unread: %s", stderr)
	}
	d, err := crashdump.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Regs.Get(pspReg); ok {
		t.Errorf("--no-step: the capture holds a PSP, which QEMU 7.2 does not give")
	}
	got, want := liveAnalyze(t, elf, out), liveAnalyze(t, elf, oracle)
	g, w := liveFrames(got.Report), liveFrames(want.Report)
	if len(g) >= len(w) || !slices.Equal(g, w[:len(g)]) || !strings.Contains(got.Stop, "PSP is not known") {
		t.Errorf("--no-step: the walk should stop at the exception frame on the unknown PSP:\n capture %q (%s)\n oracle  %q", g, got.Stop, w)
	}
}

// Reading MSP/PSP by stepping leaves the target as found: after a capture
// of the M4F's psp_thread (halted at HardFault_Handler), a second
// connection reads every register the server gives (core and FPU) and
// they equal those in the dump (read before the step); the code at the PC
// equals the ELF's image; every RAM region the dump holds reads the same.
func TestCaptureStepLeavesTargetAsFound(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m4f-O2.elf")
	remote := startQEMU(t, "mps2-an386", elf)
	out := filepath.Join(t.TempDir(), "c.json")
	_, stderr, code := run(t, "", "capture", "--remote", remote, "--elf", elf, "-o", out, "--wait-fault", "--set", "crash_scenario=6")
	if code != 0 {
		t.Fatalf("capture: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "read them from the core by writing") {
		t.Fatalf("capture did not step: %s", stderr)
	}
	d, err := crashdump.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.Dial(remote, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	desc, err := c.TargetDescription()
	if err != nil {
		t.Fatal(err)
	}
	vals, _, err := c.ReadRegisters(desc, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]unwinders.Reg{"sp": unwinders.SP, "lr": unwinders.LR, "pc": unwinders.PC, "xpsr": unwinders.XPSR, "fpscr": unwinders.FPSCR}
	for i := 0; i <= 12; i++ {
		names[fmt.Sprintf("r%d", i)] = unwinders.R0 + unwinders.Reg(i)
	}
	for i := 0; i < 32; i++ {
		names[fmt.Sprintf("s%d", i)] = unwinders.S(i)
		// QEMU gives d0-d15: s(2n) is the low word of d(n).
		if b, ok := vals[fmt.Sprintf("d%d", i/2)]; ok && len(b) == 8 {
			vals[fmt.Sprintf("s%d", i)] = b[4*(i%2) : 4*(i%2)+4]
		}
	}
	for n, r := range names {
		now, ok := vals.U32(n)
		was, ok2 := d.Regs.Get(r)
		if !ok || !ok2 || now != was {
			t.Errorf("%s after the capture 0x%08x (read %v), in the dump 0x%08x (held %v)", n, now, ok, was, ok2)
		}
	}
	fw, err := openFirmware(elf)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	pc, _ := d.Regs.Get(unwinders.PC)
	code6, _, err := c.ReadMemory(pc, 64, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, seg := range fw.Segments() {
		if seg.Contains(pc) && uint64(pc)+64 <= seg.End() {
			if img := seg.Data[pc-seg.Addr : pc-seg.Addr+64]; !bytes.Equal(code6, img) {
				t.Errorf("the code at pc 0x%08x after the capture:\n %x\nthe ELF's:\n %x", pc, code6, img)
			}
		}
	}
	n := 0
	for _, r := range d.Memory {
		if r.Addr >= 0xe0000000 {
			continue // system registers
		}
		now, holes, err := c.ReadMemory(r.Addr, uint32(len(r.Data)), nil)
		if err != nil || len(holes) > 0 {
			t.Fatalf("reading %s again: %v %v", r.Name, err, holes)
		}
		if !bytes.Equal(now, r.Data) {
			t.Errorf("memory %s changed after the capture", r.Name)
		}
		n += len(now)
	}
	if n < 1024 {
		t.Errorf("only %d bytes of RAM compared", n)
	}
}

// The other output formats and --analyze: one capture of div0 per format;
// analyze gives the same frames on each, and --analyze prints the report.
func TestCaptureFormatsAndAnalyze(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	dir := t.TempDir()
	var ref []string
	for _, to := range []string{"native", "elfcore", "crashcatcher"} {
		remote := startQEMU(t, "mps2-an385", elf)
		out := filepath.Join(dir, "div0."+to)
		stdout, stderr, code := run(t, "", "capture", "--remote", remote, "--elf", elf, "-o", out, "--to", to,
			"--wait-fault", "--set", "crash_scenario=4", "--analyze")
		if code != 0 {
			t.Fatalf("--to %s: exit %d: %s", to, code, stderr)
		}
		if !strings.Contains(stdout, "div0_average") || !strings.Contains(stdout, "DIVBYZERO") {
			t.Errorf("--to %s --analyze: the report lacks the division: %s", to, stdout)
		}
		fns := fromFaultingFrame(reportFunctions(captureAnalyze(t, elf, out)))
		if ref == nil {
			ref = fns
		} else if !slices.Equal(fns, ref) {
			t.Errorf("--to %s: frames %q, native %q", to, fns, ref)
		}
	}
}

// The target is left as capture found it: halted after a capture (QEMU's
// monitor says "paused"), running after one with --resume.
func TestCaptureLeavesTargetHaltedOrResumed(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	sockDir, err := os.MkdirTemp("", "flmon")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "m")
	remote := startQEMU(t, "mps2-an385", elf, "-monitor", "unix:"+sock+",server,nowait")
	status := func() string {
		c, err := net.DialTimeout("unix", sock, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		fmt.Fprint(c, "info status\n")
		var b []byte
		buf := make([]byte, 4096)
		answered := func() bool {
			i := strings.Index(string(b), "VM status:")
			return i >= 0 && strings.Contains(string(b[i:]), "\n")
		}
		for i := 0; i < 100 && !answered(); i++ {
			n, err := c.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil {
				break
			}
		}
		s := string(b)
		i := strings.Index(s, "VM status:")
		if i < 0 {
			t.Fatalf("QEMU's monitor said %q", s)
		}
		return strings.TrimSpace(strings.SplitN(s[i:], "\n", 2)[0])
	}
	dir := t.TempDir()
	if _, stderr, code := run(t, "", "capture", "--remote", remote, "--elf", elf, "-o", filepath.Join(dir, "a.json"),
		"--wait-fault", "--set", "crash_scenario=3"); code != 0 {
		t.Fatalf("capture: exit %d: %s", code, stderr)
	}
	if s := status(); !strings.Contains(s, "paused") {
		t.Errorf("after capture: %q, want paused", s)
	}
	if _, stderr, code := run(t, "", "capture", "--remote", remote, "--elf", elf, "-o", filepath.Join(dir, "b.json"), "--resume"); code != 0 {
		t.Fatalf("capture --resume: exit %d: %s", code, stderr)
	}
	if s := status(); !strings.Contains(s, "running") {
		t.Errorf("after capture --resume: %q, want running", s)
	}
}
