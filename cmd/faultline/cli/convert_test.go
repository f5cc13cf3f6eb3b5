package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

// importSources are the oracle dumps fixtures/import derives from
// (fixtures/import/README.md).
var importSources = []string{"gcc-m3-O2-null_write_deep", "gcc-m3-O2-psp_thread", "gcc-m4f-O2-fpu_crash"}

// analyzeJSON runs analyze --format json and returns the report.
func analyzeJSON(t *testing.T, args ...string) *report.Report {
	t.Helper()
	out, errs, code := run(t, "", append([]string{"analyze", "--format", "json"}, args...)...)
	if code != 0 {
		t.Fatalf("analyze %v: exit %d: %s", args, code, errs)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("analyze %v: %v\n%s", args, err, out)
	}
	return &r
}

// functions lists a report's frames: function names, "<exception>" for
// exception pseudo-frames.
func functions(r *report.Report) []string {
	var out []string
	for _, f := range r.Frames {
		if f.Kind == "exception" {
			out = append(out, "<exception>")
			continue
		}
		out = append(out, f.Function)
	}
	return out
}

// afterException is the part of a backtrace after its first exception
// pseudo-frame: what a dump holding the pre-exception state starts with.
func afterException[T any](frames []T, isExc func(T) bool) []T {
	for i, f := range frames {
		if isExc(f) {
			return frames[i+1:]
		}
	}
	return nil
}

// TestAnalyzeImported: analyze on each imported fixture gives the function
// list of the native oracle dump it derives from. The CrashCatcher, Zephyr
// and Memfault fixtures hold the state before the exception (capture point
// b), so their list is the native one after its exception frame (the
// handler frame and the exception pseudo-frame are not in those dumps); the
// memory-image + register-text fixtures hold the handler's registers like
// the native dump and give the whole list.
func TestAnalyzeImported(t *testing.T) {
	imp := filepath.Join(repo, "fixtures", "import")
	for _, name := range importSources {
		t.Run(name, func(t *testing.T) {
			native := filepath.Join(repo, "fixtures", "qemu", name+".json")
			elf := fixtureELF(t, native)
			full := functions(analyzeJSON(t, "--elf", elf, native))
			pre := afterException(full, func(s string) bool { return s == "<exception>" })
			if len(pre) < 2 {
				t.Fatalf("native backtrace %q has no frames after an exception frame", full)
			}
			for _, suffix := range []string{".crashcatcher.bin", ".crashcatcher.txt", ".crashcatcher-v2.bin", ".zephyr.bin", ".zephyr.log", ".memfault.bin"} {
				r := analyzeJSON(t, "--elf", elf, filepath.Join(imp, name+suffix))
				if got := functions(r); !slices.Equal(got, pre) {
					t.Errorf("%s: functions\n got %q\nwant %q", suffix, got, pre)
				}
				if r.Fault.Exception != "HardFault" {
					t.Errorf("%s: exception %q, want HardFault", suffix, r.Fault.Exception)
				}
			}
			for _, args := range [][]string{
				{"--regs", filepath.Join(imp, name+".regs.gdb.txt"), filepath.Join(imp, name+".mem.hex")},
				{"--regs", filepath.Join(imp, name+".regs.openocd.txt"), filepath.Join(imp, name+".mem.srec")},
				{"--regs", filepath.Join(imp, name+".regs.gdb.txt"), "--base", "0x20000000", filepath.Join(repo, "fixtures", "qemu", name+".ram.bin")},
			} {
				r := analyzeJSON(t, append([]string{"--elf", elf}, args...)...)
				if got := functions(r); !slices.Equal(got, full) {
					t.Errorf("%v: functions\n got %q\nwant %q", args, got, full)
				}
			}
		})
	}
}

// TestConvertRoundTrip: native oracle dump -> convert --to crashcatcher ->
// analyze gives the same backtrace (PC, function, SP of every frame) as the
// native dump after its exception frame; and the CrashCatcher dump converted
// back to native gives it again.
func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	isExc := func(f report.FrameJSON) bool { return f.Kind == "exception" }
	type fr struct{ PC, Function, SP string }
	strip := func(fs []report.FrameJSON) []fr {
		var out []fr
		for _, f := range fs {
			out = append(out, fr{f.PC, f.Function, f.SP})
		}
		return out
	}
	for _, name := range importSources {
		t.Run(name, func(t *testing.T) {
			native := filepath.Join(repo, "fixtures", "qemu", name+".json")
			elf := fixtureELF(t, native)
			want := strip(afterException(analyzeJSON(t, "--elf", elf, native).Frames, isExc))
			cc := filepath.Join(dir, name+".cc.bin")
			if _, errs, code := run(t, "", "convert", "--to", "crashcatcher", native, "-o", cc); code != 0 {
				t.Fatalf("convert: exit %d: %s", code, errs)
			}
			if got := strip(analyzeJSON(t, "--elf", elf, cc).Frames); !slices.Equal(got, want) {
				t.Errorf("crashcatcher backtrace\n got %v\nwant %v", got, want)
			}
			back := filepath.Join(dir, name+".back.json")
			if _, errs, code := run(t, "", "convert", "--to", "native", cc, "-o", back); code != 0 {
				t.Fatalf("convert back: exit %d: %s", code, errs)
			}
			if got := strip(analyzeJSON(t, "--elf", elf, back).Frames); !slices.Equal(got, want) {
				t.Errorf("native-again backtrace\n got %v\nwant %v", got, want)
			}
		})
	}
}

func TestConvertAndRawFlagErrors(t *testing.T) {
	native := filepath.Join(repo, "fixtures", "qemu", importSources[0]+".json")
	elf := fixtureELF(t, native)
	regs := filepath.Join(repo, "fixtures", "import", importSources[0]+".regs.gdb.txt")
	out := filepath.Join(t.TempDir(), "x")
	bad := filepath.Join(t.TempDir(), "bad.bin")
	if err := crashdump.WriteFile(bad, []byte("ZE\x02\x00\x03\x00\x05\x00\x00\x00\x00\x00Q")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"convert", native, "-o", out}, 2, "--to"},
		{[]string{"convert", "--to", "elf", native, "-o", out}, 2, "--to \"elf\""},
		{[]string{"convert", "--to", "native", native}, 2, "-o OUT"},
		{[]string{"convert", "--to", "native", native, native, "-o", out}, 2, "one DUMP"},
		{[]string{"convert", "--to", "native", bad, "-o", out}, 1, "bad.bin: offset 12: unknown block id 'Q'"},
		{[]string{"analyze", "--elf", elf, "--base", "0x20000000", native}, 2, "--base only applies"},
		{[]string{"analyze", "--elf", elf, "--regs", native, "--base", "zz", native}, 2, "--base \"zz\""},
		{[]string{"analyze", "--elf", elf, "--cpu", "pentium", native}, 2, "--cpu \"pentium\""},
		{[]string{"analyze", "--elf", elf, "--regs", regs, filepath.Join(repo, "fixtures", "qemu", importSources[0]+".ram.bin")}, 1, "--base"},
		{[]string{"analyze", "--elf", elf, "--regs", native, filepath.Join(repo, "fixtures", "qemu", importSources[0]+".ram.bin")}, 1, "no register values found"},
		{[]string{"analyze", "--elf", elf, bad}, 1, "bad.bin: offset 12"},
	} {
		_, errs, code := run(t, "", tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
	}
}
