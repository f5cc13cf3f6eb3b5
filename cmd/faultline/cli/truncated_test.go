package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

// truncatedCores writes the GDB core fixture cut at each of its structure
// boundaries (inside the ELF header, after it, inside and after the
// program headers, inside a memory segment, at the start of the note
// segment and inside it) and returns the files.
func truncatedCores(t *testing.T, dir string) []string {
	t.Helper()
	core, err := os.ReadFile(filepath.Join(repo, "fixtures/elfcore/gcc-m3-O2-null_write_deep.gcore.elf"))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture: 6 program headers from 52, memory from 0xf4, the
	// notes at 0x1550 (readelf -l).
	var out []string
	for _, n := range []int{20, 52, 60, 52 + 6*32, 0x200, 0x1550, 0x1550 + 8, 0x1550 + 100} {
		if n >= len(core) {
			t.Fatalf("cut at %d: the fixture has %d bytes", n, len(core))
		}
		p := filepath.Join(dir, fmt.Sprintf("cut%05d.core", n))
		if err := os.WriteFile(p, core[:n], 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// A truncated ELF core is an error naming the file and what is missing,
// in every command that reads dumps: never a panic (issue 23, item 1).
func TestTruncatedCoreEveryCommand(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	for _, p := range truncatedCores(t, dir) {
		for _, args := range [][]string{
			{"analyze", "--elf", elf, p},
			{"compare", "--elf", elf, p},
			{"convert", "--to", "native", "-o", filepath.Join(dir, "out.json"), p},
			{"convert", "--to", "elfcore", "-o", filepath.Join(dir, "out.core"), p},
			{"gdbserver", "--stdio", "--elf", elf, p},
		} {
			_, errOut, code := run(t, "", args...)
			if code != ExitInput || !strings.Contains(errOut, p) || !strings.Contains(errOut, "truncated") {
				t.Errorf("%v: exit %d, stderr %q; want exit 1 naming the file and \"truncated\"", args[0], code, errOut)
			}
		}
	}
}

// A directory with truncated cores among good dumps: every good dump is
// reported, each bad one costs one error line, and --summary counts them.
func TestBatchTruncatedCore(t *testing.T) {
	dir := t.TempDir()
	bad := truncatedCores(t, dir)
	for _, s := range batchScenarios {
		copyDump(t, dir, s, "good-"+s, 0)
	}
	for _, j := range []string{"1", "2"} {
		out, errOut, code := run(t, "", "analyze", "-j", j, "--format", "jsonl", "--elf", batchELF(), dir)
		if code != ExitInput {
			t.Errorf("-j %s: exit %d, want 1", j, code)
		}
		if got := len(jsonlDumps(t, out)); got != len(batchScenarios) {
			t.Errorf("-j %s: %d reports, want %d: %s", j, got, len(batchScenarios), errOut)
		}
		if got := strings.Count(errOut, "\n"); got != len(bad) {
			t.Errorf("-j %s: %d error lines, want %d:\n%s", j, got, len(bad), errOut)
		}
		out, _, _ = run(t, "", "analyze", "-j", j, "--summary", "--format", "json", "--elf", batchELF(), dir)
		if !strings.Contains(out, fmt.Sprintf(`"dumps": %d`, len(bad)+len(batchScenarios))) {
			t.Errorf("-j %s --summary does not count %d dumps:\n%s", j, len(bad)+len(batchScenarios), out)
		}
	}
}

type panicAnalyzer struct{ dumpAnalyzer }

func (p panicAnalyzer) Analyze(d *crashdump.Dump) (*report.Report, error) {
	if strings.Contains(d.Path, "boom") {
		panic("planted")
	}
	return p.dumpAnalyzer.Analyze(d)
}

// The last line of defence: a panic while loading or analysing one dump
// of a batch becomes that dump's error, an internal error naming it; the
// other dumps are all reported, with one worker or several.
func TestBatchPanicCostsOneDump(t *testing.T) {
	dir := t.TempDir()
	var jobs []batchJob
	for i, s := range batchScenarios {
		p := copyDump(t, dir, s, "d-"+s, 0)
		jobs = append(jobs, batchJob{name: p, load: func(b *crashdump.Buffers) (*crashdump.Dump, error) {
			return crashdump.LoadWith(p, crashdump.LoadOptions{Buffers: b})
		}})
		if i == 1 {
			jobs = append(jobs, batchJob{name: "load-panics", load: func(*crashdump.Buffers) (*crashdump.Dump, error) {
				var m map[string]int
				m["x"]++ // a nil map write: a runtime panic
				return nil, nil
			}})
		}
		if i == 3 {
			boom := filepath.Join(dir, "boom.json")
			os.Link(p, boom)
			jobs = append(jobs, batchJob{name: boom, load: func(b *crashdump.Buffers) (*crashdump.Dump, error) {
				return crashdump.LoadWith(boom, crashdump.LoadOptions{Buffers: b})
			}})
		}
	}
	elf, err := openFirmware(batchELF())
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	an, err := analysis.NewAnalyzer(elf, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		for _, reuse := range []bool{false, true} {
			var reports, internal []string
			err := runBatch(panicAnalyzer{an}, jobs, workers, false, reuse, nil, func(r batchResult) error {
				var ie *internalError
				switch {
				case errors.As(r.err, &ie):
					internal = append(internal, r.err.Error())
				case r.err != nil:
					t.Errorf("%s: %v", r.job.name, r.err)
				default:
					reports = append(reports, r.report.Dump)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != len(batchScenarios) || len(internal) != 2 {
				t.Fatalf("workers %d reuse %v: %d reports, internal errors %q", workers, reuse, len(reports), internal)
			}
			if !strings.HasPrefix(internal[0], "load-panics: internal error: ") || !strings.Contains(internal[1], "boom.json: internal error: planted") {
				t.Errorf("internal errors do not name their input: %q", internal)
			}
		}
	}
}

// A directory of symbolic links to dumps (and to a directory of dumps) is
// a directory of dumps: every one is decoded once, however many links
// lead to it, a link loop ends, a dangling link is skipped; a directory
// that holds no dump is an error but not a dump in --summary (issue 23
// item 8: "no crash dump found", and the directory counted as undecodable).
func TestBatchFollowsSymlinks(t *testing.T) {
	real := t.TempDir()
	var dumps []string
	for _, s := range batchScenarios[:3] {
		dumps = append(dumps, copyDump(t, filepath.Join(real, "d"), s, "r-"+s, 0))
	}
	links := t.TempDir()
	for i, d := range dumps {
		if err := os.Symlink(d, filepath.Join(links, fmt.Sprintf("link%d.json", i))); err != nil {
			t.Fatal(err)
		}
	}
	more := filepath.Join(t.TempDir(), "more")
	os.Mkdir(more, 0o755)
	copyDump(t, more, batchScenarios[3], "m-"+batchScenarios[3], 0)
	os.Symlink(more, filepath.Join(links, "moredir"))
	os.Symlink(more, filepath.Join(links, "again")) // the same directory twice
	os.Symlink(links, filepath.Join(links, "loop")) // a loop
	os.Symlink("/nonexistent/x.json", filepath.Join(links, "dangling.json"))
	out, errOut, code := run(t, "", "analyze", "--format", "jsonl", "--elf", batchELF(), links)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := jsonlDumps(t, out); len(got) != 4 {
		t.Errorf("%d dumps decoded, want 4: %q", len(got), got)
	}
	// A glob whose match is a link to a directory.
	out, errOut, code = run(t, "", "analyze", "--format", "jsonl", "--elf", batchELF(), filepath.Join(links, "more*"))
	if code != 0 || len(jsonlDumps(t, out)) != 1 {
		t.Errorf("glob of a linked directory: exit %d, %q %s", code, out, errOut)
	}
	// An empty directory beside a dump: an error line, and the summary
	// counts the one dump only.
	empty := t.TempDir()
	out, errOut, code = run(t, "", "analyze", "--summary", "--format", "json", "--elf", batchELF(), empty, dumps[0])
	if code != ExitInput || !strings.Contains(errOut, "no crash dump found") {
		t.Errorf("empty directory: exit %d, %q", code, errOut)
	}
	if !strings.Contains(out, `"dumps": 1,`) || !strings.Contains(out, `"decoded": 1,`) {
		t.Errorf("the summary counts the directory as a dump:\n%s", out)
	}
}
