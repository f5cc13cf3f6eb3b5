package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

const sampleELF = repo + "/firmware-samples/build/gcc-m3-O2.elf"

// TestNoArguments: faultline with nothing to do is a usage error.
func TestNoArguments(t *testing.T) {
	stdout, stderr, code := run(t, "")
	if code != ExitUsage || stdout != "" || !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, "analyze") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, _, code := run(t, "", "--help"); code != ExitOK {
		t.Errorf("--help: exit %d", code)
	}
}

// TestNoPackagePrefixes: errors reach the user without the names of
// faultline's packages ("emu: ", "elfsym: ", "crashdump: ", "uc: "),
// whatever the working directory: run from the repository root, where
// folders of those names exist (the CLI once removed such prefixes only
// when no folder of that name was there).
func TestNoPackagePrefixes(t *testing.T) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema": "faultline.dump/1", "cpu": "cortex-m3", "registers": {"pc": "0x100", "sp": "0x20000000"}, "memory": [{"address": "0x20000000", "hex": "0000"}, {"address": "0x20000001", "hex": "0000"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(abs, "firmware-samples/build/gcc-m3-O2.elf")
	cortexA := filepath.Join(abs, "fixtures/hostile/elf/cortex-a-profile.elf")
	cases := [][]string{
		{"analyze", "--elf", sample, bad},
		{"symbolize", "--elf", cortexA, "0x100"},
		{"emulate", "--elf", cortexA, "-o", filepath.Join(dir, "x.json")},
		{"emulate", "--elf", sample, "--cpu", "z80", "-o", filepath.Join(dir, "y.json")},
		{"emulate", "--elf", sample, "--call", "nosuch", "-o", filepath.Join(dir, "z.json")},
		{"emulate", "--elf", sample, "--map", "0x3:0x10", "-o", filepath.Join(dir, "w.json")},
	}
	t.Chdir(abs)
	for _, pkg := range []string{"emu", "elfsym", "crashdump"} {
		if fi, err := os.Stat(pkg); err != nil || !fi.IsDir() {
			t.Fatalf("the repository root has no folder %s: %v", pkg, err)
		}
	}
	prefix := regexp.MustCompile(`(^|: )(analysis|cfi|crashdump|elfsym|emu|exidx|heap|rtos|scenario|thumb|uc|unwinders): `)
	for _, args := range cases {
		_, stderr, code := run(t, "", args...)
		if code == 0 || !strings.HasPrefix(stderr, "faultline: ") {
			t.Errorf("%v: exit %d, stderr %q: want an error", args, code, stderr)
			continue
		}
		if m := prefix.FindString(stderr); m != "" {
			t.Errorf("%v: package prefix %q in %q", args, m, stderr)
		}
	}
}

// TestRejectedInputs: inputs that are not what faultline decodes are
// refused with a clear error, not decoded into nonsense.
func TestRejectedInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	z80 := write("z80.json", `{"schema": "faultline.dump/1", "cpu": "z80", "registers": {"pc": "0x100", "sp": "0x20000000"}}`)
	noregs := write("noregs.json", `{"schema": "faultline.dump/1", "memory": [{"address": "0x20000000", "hex": "00000000"}]}`)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"analyze", "--elf", sampleELF, z80}, ExitInput, z80 + `: cpu: "z80" is not a Cortex-M core`},
		{[]string{"compare", "--elf", sampleELF, z80}, ExitInput, `"z80" is not a Cortex-M core`},
		{[]string{"analyze", "--elf", sampleELF, noregs}, ExitInput, noregs + ": the dump holds no registers"},
		{[]string{"compare", "--elf", sampleELF, noregs}, ExitInput, "the dump holds no registers"},
		{[]string{"analyze", "--elf", repo + "/fixtures/hostile/elf/not-an-executable.elf", noregs}, ExitInput, "a relocatable object (ELF type ET_REL, a .o file), not linked firmware"},
		{[]string{"symbolize", "--elf", repo + "/fixtures/hostile/elf/cortex-a-profile.elf", "0x100"}, ExitInput, "built for a Cortex-A core"},
		{[]string{"emulate", "--elf", repo + "/fixtures/hostile/elf/cortex-a-profile.elf", "-o", filepath.Join(dir, "x.json")}, ExitInput, "built for a Cortex-A core"},
		{[]string{"analyze", "--elf", sampleELF, "--format", "html", "--source-dir", "/nonexistent", z80}, ExitUsage, "--source-dir /nonexistent: no such file or directory"},
		{[]string{"analyze", "--elf", sampleELF, "--format", "html", "--source-dir", z80, z80}, ExitUsage, "not a directory"},
	} {
		_, stderr, code := run(t, "", c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args[:3], code, stderr, c.code, c.want)
		}
		if strings.Contains(stderr, "elfsym:") || strings.Contains(stderr, "crashdump:") {
			t.Errorf("%v: package prefix in %q", c.args[:3], stderr)
		}
	}
}

// TestOutputFiles: -o - is stdout, a directory is refused before any
// work, the input is never overwritten, and errors name the output, never
// a temporary file.
func TestOutputFiles(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	// A copy of the fixture in dir: manifest and region file.
	d, err := crashdump.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.json")
	if err := d.Write(in); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(in)

	// -o -: one self-contained manifest on stdout, no files.
	stdout, stderr, code := run(t, "", "convert", "--to", "native", in, "-o", "-")
	if code != 0 || !strings.Contains(stdout, `"hex": "`) || strings.Contains(stdout, `.bin"`) {
		t.Fatalf("convert -o -: exit %d, %s\n%.400s", code, stderr, stdout)
	}
	self := filepath.Join(t.TempDir(), "self.json")
	os.WriteFile(self, []byte(stdout), 0o644)
	a1, _, _ := run(t, "", "analyze", "--elf", sampleELF, "--format", "json", in)
	a2, _, _ := run(t, "", "analyze", "--elf", sampleELF, "--format", "json", self)
	if strings.ReplaceAll(a1, in, "X") != strings.ReplaceAll(a2, self, "X") {
		t.Errorf("the self-contained manifest decodes differently")
	}
	if _, err := os.Stat("-"); err == nil {
		t.Error(`a file named "-" was written`)
	}

	// An existing directory: a usage error, nothing written next to it.
	_, stderr, code = run(t, "", "convert", "--to", "native", in, "-o", dir)
	if code != ExitUsage || !strings.Contains(stderr, "-o "+dir+" is a directory") {
		t.Errorf("convert -o DIR: exit %d, %q", code, stderr)
	}
	if m, _ := filepath.Glob(dir + ".*"); len(m) != 0 {
		t.Errorf("stray files next to the directory: %v", m)
	}
	// The input itself, and a name whose region file is the input's.
	_, stderr, code = run(t, "", "convert", "--to", "native", in, "-o", in)
	if code != ExitUsage || !strings.Contains(stderr, "is the input") {
		t.Errorf("convert -o INPUT: exit %d, %q", code, stderr)
	}
	_, stderr, code = run(t, "", "convert", "--to", "crashcatcher", in, "-o", filepath.Join(dir, "in.20000000.bin"))
	if code != ExitUsage || !strings.Contains(stderr, "is the input") {
		t.Errorf("convert -o REGION-FILE: exit %d, %q", code, stderr)
	}
	if after, _ := os.ReadFile(in); string(after) != string(before) {
		t.Error("the input was overwritten")
	}
	// A write that fails names the output, not a temporary file.
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o555)
	if os.Getuid() != 0 {
		_, stderr, code = run(t, "", "convert", "--to", "native", in, "-o", filepath.Join(ro, "out.json"))
		if code != ExitInput || !strings.Contains(stderr, "cannot write "+filepath.Join(ro, "out.")) || strings.Contains(stderr, ".tmp") {
			t.Errorf("unwritable: exit %d, %q", code, stderr)
		}
	}
	// Region files sit next to the manifest, whatever the working directory.
	out := filepath.Join(dir, "sub", "out.json")
	os.Mkdir(filepath.Dir(out), 0o755)
	if _, stderr, code := run(t, "", "convert", "--to", "native", in, "-o", out); code != 0 {
		t.Fatalf("convert: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "sub", "out.20000000.bin")); err != nil {
		t.Errorf("region file: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "sub", ".*tmp*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestEmulateOutputAndFlags: emulate -o - writes the dump to stdout and the
// summary to stderr; negative --set values; usage errors are exit 2 whether
// the flag's syntax or the firmware refuses them; --map over flash says so.
func TestEmulateOutputAndFlags(t *testing.T) {
	skipWithoutEmulator(t)
	dir := t.TempDir()
	stdout, stderr, code := run(t, "", "emulate", "--elf", sampleELF, "-o", "-", "--set", "crash_scenario=1")
	if code != 0 || !strings.HasPrefix(stdout, "{") || !strings.Contains(stderr, "in null_store") || !strings.Contains(stderr, "Wrote the dump to standard output") {
		t.Fatalf("emulate -o -: exit %d, stderr %q, stdout %.100q", code, stderr, stdout)
	}
	dump := filepath.Join(dir, "s.json")
	os.WriteFile(dump, []byte(stdout), 0o644)
	if out, stderr, code := run(t, "", "analyze", "--elf", sampleELF, dump); code != 0 || !strings.Contains(out, "null_store") {
		t.Errorf("analyze of the -o - dump: exit %d %s", code, stderr)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--set", "nosuch=1"}, ExitUsage, "--set nosuch: no such symbol"},
		{[]string{"--set", "crash_scenario=zzz"}, ExitUsage, "not a number"},
		{[]string{"--set", "crash_scenario=0x1ffffffff"}, ExitUsage, "value does not fit in 4 bytes"},
		{[]string{"--set", "crash_scenario=-3000000000"}, ExitUsage, "--set crash_scenario=-3000000000: value does not fit in 4 bytes"},
		{[]string{"--call", "nosuch"}, ExitUsage, "--call nosuch: no such function"},
		{[]string{"--map", "0x0:4k"}, ExitUsage, "--map 0x0:0x1000: [0x0, 0x1000) overlaps flash"},
		{[]string{"--map", "0x20000000:4k"}, ExitUsage, "overlaps ram"},
		{[]string{"--map", "0xe000e000:4k"}, ExitUsage, "overlaps the System Control Space"},
		{[]string{"-o", dir}, ExitUsage, "is a directory"},
		// -1 is a number: the firmware takes it (an unknown scenario,
		// so it never faults; bounded by --max-insns).
		{[]string{"--set", "crash_scenario=-1", "--max-insns", "20000"}, ExitNoFault, "did not fault"},
	} {
		args := append([]string{"emulate", "--elf", sampleELF}, c.args...)
		if c.args[0] != "-o" {
			args = append(args, "-o", filepath.Join(dir, "x.json"))
		}
		_, stderr, code := run(t, "", args...)
		if code != c.code || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "emu:") || strings.Contains(stderr, "UC_ERR") {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".20000000.bin")); err == nil {
		t.Error("emulate -o DIR wrote a region file next to the directory")
	}
}

// TestCompareArguments: compare runs every strategy, so it has no
// --unwinder to ignore, and it expands directories and patterns as
// analyze does.
func TestCompareArguments(t *testing.T) {
	fx := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	if _, stderr, code := run(t, "", "compare", "--elf", sampleELF, "--unwinder", "cfi", fx); code != ExitUsage || !strings.Contains(stderr, "unknown flag: --unwinder") {
		t.Errorf("--unwinder: exit %d, %q", code, stderr)
	}
	one, _, code := run(t, "", "compare", "--elf", sampleELF, fx)
	if code != 0 {
		t.Fatalf("compare: exit %d", code)
	}
	pattern := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_*.json")
	out, stderr, code := run(t, "", "compare", "--elf", sampleELF, pattern)
	if code != 0 || !strings.Contains(out, one) || strings.Count(out, "Crash dump ") < 2 {
		t.Errorf("compare GLOB: exit %d, %s\n%s", code, stderr, out)
	}
	js, stderr, code := run(t, "", "compare", "--elf", sampleELF, "--format", "json", pattern)
	if code != 0 || !strings.HasPrefix(js, "[") || strings.Count(js, `"schema": "faultline.compare/1"`) < 2 {
		t.Errorf("compare --format json GLOB: exit %d, %s\n%.200s", code, stderr, js)
	}
}

// TestCompletionValues: shell completion offers the values of the flags
// that take one of a few.
func TestCompletionValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"analyze", "--unwinder", ""}, []string{"auto", "cfi", "exidx", "prologue", "framepointer", "stackscan"}},
		{[]string{"analyze", "--format", ""}, []string{"text", "json", "jsonl", "html"}},
		{[]string{"compare", "--format", ""}, []string{"text", "json"}},
		{[]string{"emulate", "--cpu", ""}, []string{"cortex-m0", "cortex-m4", "cortex-m33"}},
		{[]string{"analyze", "--cpu", ""}, []string{"cortex-m3"}},
		{[]string{"convert", "--to", ""}, []string{"native", "crashcatcher"}},
	} {
		out, _, code := run(t, "", append([]string{"__complete"}, c.args...)...)
		lines := strings.Split(out, "\n")
		if code != 0 || !strings.HasPrefix(lines[len(lines)-2], ":4") { // ShellCompDirectiveNoFileComp
			t.Errorf("%v: exit %d, %q", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w+"\n") {
				t.Errorf("%v: %q not offered in %q", c.args, w, out)
			}
		}
	}
}

func TestDisplayPath(t *testing.T) {
	for in, want := range map[string]string{
		"././src/startup.c": "./src/startup.c",
		"./src/main.c":      "./src/main.c",
		"/home/b/newlib/libc/string/../../../../newlib/libc/string/memmove.c": "/home/newlib/libc/string/memmove.c",
		"src/../inc/a.h": "inc/a.h",
		"./../lib/x.c":   "../lib/x.c",
		"":               "",
	} {
		if got := report.DisplayPath(in); got != want {
			t.Errorf("DisplayPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestColor: --color always colours the text report (confidence tags,
// the exception, the stop line) without moving a column; never, and auto
// on a non-terminal or with NO_COLOR, leave it plain.
func TestColor(t *testing.T) {
	fx := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	plain, _, code := run(t, "", "analyze", "--elf", sampleELF, fx)
	if code != 0 || strings.Contains(plain, "\x1b[") {
		t.Fatalf("default to a buffer: exit %d, escapes present", code)
	}
	colored, _, code := run(t, "", "analyze", "--color", "always", "--elf", sampleELF, fx)
	if code != 0 || !strings.Contains(colored, "\x1b[32m[registers, high]\x1b[0m") || !strings.Contains(colored, "\x1b[1m\x1b[31mHardFault (exception 3)\x1b[0m") || !strings.Contains(colored, "\x1b[1mStop: ") {
		t.Errorf("--color always: exit %d\n%q", code, colored)
	}
	strip := regexp.MustCompile("\x1b\\[[0-9;]*m")
	if strip.ReplaceAllString(colored, "") != plain {
		t.Error("--color always changes the text besides the colour")
	}
	if out, _, _ := run(t, "", "analyze", "--color", "never", "--elf", sampleELF, fx); out != plain {
		t.Error("--color never differs from plain")
	}
	t.Setenv("NO_COLOR", "1")
	if out, _, _ := run(t, "", "analyze", "--color", "auto", "--elf", sampleELF, fx); out != plain {
		t.Error("NO_COLOR with auto is coloured")
	}
	if _, _, code := run(t, "", "analyze", "--color", "bogus", "--elf", sampleELF, fx); code != ExitUsage {
		t.Errorf("--color bogus: exit %d", code)
	}
}
