package cli

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"1073741824": 1 << 30, "512MiB": 512 << 20, "512M": 512 << 20, "512mb": 512 << 20,
		"4G": 4 << 30, "1.5GiB": 3 << 29, "64 KiB": 64 << 10, "100B": 100,
	} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1G", "0%", "101%", "1X"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q): no error", in)
		}
	}
	if physicalRAM() > 0 {
		if got, err := parseSize("50%"); err != nil || got != physicalRAM()/2 {
			t.Errorf("50%%: %d, %v", got, err)
		}
	}
}

func TestPlanBudget(t *testing.T) {
	for _, tc := range []struct {
		budget           int64
		jobs, inflight   int
		wantJobs         int
		wantPerDumpShare int64
	}{
		{256 << 20, 8, 1, 8, 16 << 20},
		{128 << 20, 8, 1, 4, 16 << 20},
		{64 << 20, 8, 1, 2, 16 << 20},
		{64 << 20, 8, 5, 1, 6710886},
		{64 << 30, 2, 1, 2, crashdump.MaxTotalSize},
	} {
		p := planBudget(tc.budget, tc.jobs, tc.inflight)
		if p.jobs != tc.wantJobs || p.perDump != tc.wantPerDumpShare {
			t.Errorf("planBudget(%d, %d, %d) = %+v; want %d jobs, %d per dump", tc.budget, tc.jobs, tc.inflight, p, tc.wantJobs, tc.wantPerDumpShare)
		}
		if int64(p.jobs*tc.inflight)*p.perDump > tc.budget/2 {
			t.Errorf("planBudget(%d, %d, %d) = %+v: the dumps may take more than half the budget", tc.budget, tc.jobs, tc.inflight, p)
		}
	}
	if b := defaultBudget(); b < minBudget {
		t.Errorf("default budget %d", b)
	}
}

// TestChildProcess is not a test: it runs faultline with the arguments in
// FAULTLINE_CHILD_ARGS when the tests start themselves as a child process
// (runChild), so that the child's resource usage is faultline's own.
func TestChildProcess(t *testing.T) {
	raw := os.Getenv("FAULTLINE_CHILD_ARGS")
	if raw == "" {
		t.Skip("only run as a child process")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(100)
	}
	os.Exit(Run(args, os.Stdin, os.Stdout, os.Stderr))
}

// runChild runs faultline args in a child process and returns its output,
// exit status and peak resident set size in bytes.
func runChild(t *testing.T, args ...string) (stdout, stderr string, code int, maxRSS int64) {
	t.Helper()
	js, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FAULTLINE_CHILD_ARGS="+string(js))
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Skip("no rusage on this platform")
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), int64(ru.Maxrss) * 1024 // Linux: KiB
}

// bigDumps writes n copies of a QEMU fixture whose manifest names two 512
// MiB region files (sparse: the fixture's RAM, then zeros), plus the SCB
// block as hex: 1 GiB of memory per dump.
func bigDumps(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	ram, err := os.ReadFile(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.ram.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var hexRegions []any
	for _, r := range m["memory"].([]any) {
		if _, ok := r.(map[string]any)["hex"]; ok {
			hexRegions = append(hexRegions, r)
		}
	}
	sparse := func(name string, head []byte) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(head); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(crashdump.MaxRegionSize); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		ramName, extName := fmt.Sprintf("d%d.ram.bin", i), fmt.Sprintf("d%d.ext.bin", i)
		sparse(ramName, ram)
		sparse(extName, nil)
		m["memory"] = append([]any{
			map[string]any{"address": "0x20000000", "file": ramName},
			map[string]any{"address": "0x60000000", "file": extName},
		}, hexRegions...)
		out, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%d.json", i)), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBatchMemoryBudget runs the case that once peaked at 8.4 GB: eight
// dumps of two 512 MiB regions each, -j 8. Regions are mapped, so only the
// pages the walks read are loaded, and the whole process stays under its
// --max-memory budget (peak RSS measured by the kernel, not estimated).
func TestBatchMemoryBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 8 GiB of sparse files")
	}
	dir := bigDumps(t, 8)
	const budget = 256 << 20
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	stdout, stderr, code, rss := runChild(t, "analyze", "--elf", elf, "-j", "8", "--max-memory", "256MiB", "--format", "jsonl", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 8 {
		t.Fatalf("%d reports, want 8", len(lines))
	}
	for _, l := range lines {
		if !strings.Contains(l, `"function":"null_store"`) || !strings.Contains(l, `"stop":"reached the reset handler"`) {
			t.Errorf("unexpected report: %.300s", l)
		}
	}
	t.Logf("peak RSS %s for 8 dumps of 1 GiB each, -j 8, budget %s", crashdump.FormatBytes(rss), crashdump.FormatBytes(budget))
	if rss <= 0 || rss > budget {
		t.Errorf("peak RSS %d bytes: over the %d byte budget", rss, budget)
	}
}

// TestSingleDumpGetsTheBudget: with fewer dumps than -j, the idle
// workers' shares go to the dumps there are: one dump that needs about
// 21 MB to decode fits a 64 MiB --max-memory even with -j 4 (half the
// budget, 32 MiB, for the one dump; with the share of 4 workers it got
// 16 MiB and was refused).
func TestSingleDumpGetsTheBudget(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-udf.json"))
	if err != nil {
		t.Fatal(err)
	}
	ram, err := os.ReadFile(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-udf.ram.bin"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(src, &m); err != nil {
		t.Fatal(err)
	}
	m["memory"] = []any{
		map[string]any{"address": "0x20000000", "hex": hex.EncodeToString(ram)},
		map[string]any{"address": "0x60000000", "hex": strings.Repeat("00", 3400<<10)},
	}
	delete(m, "truth")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if n := int64(len(b)) * crashdump.DecodeFactor; n <= 16<<20 || n >= 32<<20 {
		t.Fatalf("the dump needs %d bytes: want between 16 and 32 MiB", n)
	}
	dump := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(dump, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := run(t, "", "analyze", "-j", "4", "--max-memory", "64MiB", "--elf", filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"), dump)
	if code != 0 {
		t.Errorf("exit %d: %s", code, stderr)
	}
}
