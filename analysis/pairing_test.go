package analysis

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// pairCase is one dump and the ELF of the build that made it.
type pairCase struct {
	dump  string
	build string // ELF path
}

// pairingCorpus lists the QEMU fixtures and the on-target captures with
// their own ELFs, and every ELF they can be paired with.
func pairingCorpus(t *testing.T) (cases []pairCase, elfs []string) {
	t.Helper()
	builds, _ := filepath.Glob(filepath.Join(repo, "firmware-samples/build/*.elf"))
	captures, _ := filepath.Glob(filepath.Join(repo, "firmware-samples/capture/build/*.elf"))
	elfs = append(builds, captures...)
	// The longest ELF name that prefixes a fixture's name is its build.
	sort.Slice(elfs, func(i, j int) bool { return len(elfs[i]) > len(elfs[j]) })
	own := func(fixture string) string {
		base := filepath.Base(fixture)
		for _, e := range elfs {
			if strings.HasPrefix(base, strings.TrimSuffix(filepath.Base(e), ".elf")+"-") {
				return e
			}
		}
		return ""
	}
	qemu, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu/*.json"))
	cap1, _ := filepath.Glob(filepath.Join(repo, "fixtures/capture/*.crashcatcher*"))
	for _, f := range append(qemu, cap1...) {
		e := own(f)
		if e == "" {
			t.Fatalf("%s: no ELF of its build", f)
		}
		cases = append(cases, pairCase{f, e})
	}
	sort.Strings(elfs)
	return cases, elfs
}

// loadImage is the ELF's loadable bytes, to tell builds whose firmware is
// identical (the same image under two names) from different ones.
func loadImage(t *testing.T, f *elfsym.File) []byte {
	var b bytes.Buffer
	for _, r := range f.Segments() {
		b.WriteString(report.Hex(r.Addr))
		b.Write(r.Data)
	}
	return b.Bytes()
}

// positiveEvidence are the forms of a difference that may make a
// mismatch: build IDs, code bytes where the walk read them, a core that
// cannot run the ELF's code.
var positiveEvidence = []string{
	"build-id differs",
	"code bytes differ where the walk read them",
	"(Tag_CPU_arch), which the dump's",
	"(Tag_FP_arch",
}

// Every dump against every ELF: its own build's ELF (or one whose loaded
// image is byte for byte the same) is never a mismatch and never doubted;
// every other ELF is a mismatch only on positive evidence (here the core:
// these dumps carry no build ID and no flash), and otherwise unverified
// with the doubts the heuristics found, with a warning that says them.
func TestPairingAllPairs(t *testing.T) {
	cases, elfs := pairingCorpus(t)
	files := map[string]*elfsym.File{}
	analyzers := map[string]*Analyzer{}
	images := map[string][]byte{}
	for _, p := range elfs {
		f, err := elfsym.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[p] = f
		images[p] = loadImage(t, f)
		if analyzers[p], err = NewAnalyzer(f, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	var silent, rightBad, right, wrong, harmless, mismatched, doubted int
	for _, c := range cases {
		d, err := crashdump.Load(c.dump)
		if err != nil {
			t.Fatal(err)
		}
		ownReport, err := analyzers[c.build].Analyze(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range elfs {
			r, err := analyzers[e].Analyze(d)
			if err != nil {
				t.Fatalf("%s with %s: %v", c.dump, e, err)
			}
			same := bytes.Equal(images[e], images[c.build])
			v := r.Pairing.Verdict
			if same {
				right++
				if v == report.PairMismatch || len(r.Pairing.Doubts) > 0 {
					rightBad++
					t.Errorf("%s with its own ELF %s: %s: %v", filepath.Base(c.dump), filepath.Base(e), v, r.Pairing.Evidence)
				}
				continue
			}
			wrong++
			if v == report.PairVerified {
				t.Errorf("%s with %s: verified", filepath.Base(c.dump), filepath.Base(e))
				continue
			}
			for _, diff := range r.Pairing.Differences {
				ok := false
				for _, p := range positiveEvidence {
					ok = ok || strings.Contains(diff, p)
				}
				if !ok {
					t.Errorf("%s with %s: a mismatch on a heuristic: %q", filepath.Base(c.dump), filepath.Base(e), diff)
				}
			}
			w := strings.Join(r.Warnings, "\n")
			switch {
			case v == report.PairMismatch:
				mismatched++
				if !strings.Contains(w, "pairing mismatch") {
					t.Errorf("%s with %s: mismatch without a warning: %q", filepath.Base(c.dump), filepath.Base(e), w)
				}
				for _, f := range r.Frames {
					if f.Confidence == "high" || f.Confidence == "medium" {
						t.Errorf("%s with %s: frame %d still %s after a mismatch", filepath.Base(c.dump), filepath.Base(e), f.Index, f.Confidence)
						break
					}
				}
			case len(r.Pairing.Doubts) > 0:
				doubted++
				if !strings.Contains(w, "is unverified: "+r.Pairing.Doubts[0]) {
					t.Errorf("%s with %s: doubts without a warning: %q", filepath.Base(c.dump), filepath.Base(e), w)
				}
			case sameDecode(ownReport, r):
				// The other build's code is the same where this dump
				// reaches it (only the addresses of unrelated sections
				// differ): the decode is identical, so nothing lies.
				harmless++
			default:
				silent++
				if os.Getenv("PAIRING_VERBOSE") != "" {
					t.Logf("%s with %s: %s, nothing against it: %v", filepath.Base(c.dump), filepath.Base(e), v, r.Pairing.Evidence)
				}
			}
		}
	}
	// Measured over 207 right pairs and 4861 wrong ones: 936 wrong pairs
	// are mismatches by the core alone (an m4f ELF on a cortex-m3 dump, an
	// FPU build on a core without one); 3744 more are unverified with
	// doubts; 106 decode exactly the same (only unrelated sections moved);
	// 75 decode differently with nothing against them: an m3 build under
	// an m4 dump whose walk stays in code the builds share, captures that
	// name no CPU, and pairs whose only contradiction was a call reaching
	// its callee through an indirect branch, or a constant in .text, which
	// no longer count. Hold these numbers.
	if silent > 80 || mismatched < 900 || doubted < 3600 {
		t.Errorf("wrong pairs: %d mismatched, %d doubted, %d with nothing against them: want at least 900, at least 3600, at most 80", mismatched, doubted, silent)
	}
	t.Logf("%d right pairs (%d mismatched or doubted), %d wrong pairs (%d mismatched, %d doubted, %d decode the same, %d with nothing against them)", right, rightBad, wrong, mismatched, doubted, harmless, silent)
}

// sameDecode reports whether two reports give the same backtrace: the
// same functions at the same lines, frame by frame.
func sameDecode(a, b *report.Report) bool {
	if len(a.Frames) != len(b.Frames) {
		return false
	}
	for i := range a.Frames {
		x, y := a.Frames[i], b.Frames[i]
		if x.PC != y.PC || x.Function != y.Function || x.Line != y.Line || filepath.Base(x.File) != filepath.Base(y.File) {
			return false
		}
	}
	return true
}

// The case of an earlier issue: a dump from the -fp build decoded with
// the plain build's ELF. Nothing positive tells them apart (no build ID,
// no flash in the dump, the same core): the faulting instruction that
// cannot raise the fault the sticky status bits report is a doubt, which
// leaves the pairing unverified with a warning that says it, and the
// frames as they are.
func TestPairingIssueExample(t *testing.T) {
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-fp-udf.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pairing.Verdict != report.PairUnverified || len(r.Pairing.Differences) != 0 {
		t.Fatalf("verdict %s, want unverified: %v", r.Pairing.Verdict, r.Pairing.Evidence)
	}
	w := strings.Join(r.Warnings, "\n")
	if !strings.Contains(w, "the pairing of "+elf.Name()+" with the dump is unverified") || !strings.Contains(w, "undefined instruction") {
		t.Errorf("warning does not say what is doubted: %q", w)
	}
	// The same dump carrying the -fp build's ID is a mismatch.
	d.BuildID = "c86f05c5f989296d2d3988cf4cb8b72153d448ac"
	elfID, err := elfsym.Open(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elfID.Close()
	if r, err = Analyze(elfID, d, Options{}); err != nil {
		t.Fatal(err)
	}
	if r.Pairing.Verdict != report.PairMismatch || !strings.Contains(strings.Join(r.Warnings, "\n"), "is not the firmware that crashed") {
		t.Errorf("with another build's ID: %s %q", r.Pairing.Verdict, r.Warnings)
	}
}

// Build IDs decide: the dump's equal to the ELF's is verified, another
// build's is a mismatch that names both.
func TestPairingBuildID(t *testing.T) {
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	for _, c := range []struct{ id, want string }{
		{"57dac794fb05f6051e02302940eb03bbd758fb12", report.PairVerified},
		{"c86f05c5f989296d2d3988cf4cb8b72153d448ac", report.PairMismatch},
		{"", report.PairUnverified},
	} {
		d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-div0.json"))
		if err != nil {
			t.Fatal(err)
		}
		d.BuildID = c.id
		r, err := Analyze(elf, d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Pairing.Verdict != c.want {
			t.Errorf("build-id %q: %s, want %s: %v", c.id, r.Pairing.Verdict, c.want, r.Pairing.Evidence)
		}
		if r.ELFInfo == nil || r.ELFInfo.BuildID != "57dac794fb05f6051e02302940eb03bbd758fb12" || r.ELFInfo.CPU != "armv7-m" {
			t.Errorf("elf object %+v", r.ELFInfo)
		}
		if c.want == report.PairMismatch && !strings.Contains(strings.Join(r.Warnings, " "), "build-id differs: the dump's is c86f05c5f989296d..., the ELF's 57dac794fb05f605...") {
			t.Errorf("warning %q", r.Warnings)
		}
	}
}

// A dump that holds the code (a capture that saved flash too) is verified
// by its bytes, and a dump holding another build's code is a mismatch
// that says where the bytes differ.
func TestPairingCodeBytes(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "udf")
	other, err := elfsym.Open(filepath.Join(repo, "firmware-samples/build/gcc-m3-Os.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		code *elfsym.File
		want string
	}{{elf, report.PairVerified}, {other, report.PairMismatch}} {
		addr, text, ok := c.code.Section(".text")
		if !ok {
			t.Fatal("no .text")
		}
		dd := *d
		dd.Memory = append(append([]unwinders.Region(nil), d.Memory...), unwinders.Region{Addr: addr, Data: text, Name: "flash.bin"})
		r, err := Analyze(elf, &dd, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Pairing.Verdict != c.want {
			t.Errorf("code of %s: %s, want %s: %v", c.code.Name(), r.Pairing.Verdict, c.want, r.Pairing.Evidence)
		}
		if c.want == report.PairMismatch && !strings.Contains(strings.Join(r.Pairing.Evidence, " "), "code bytes differ") {
			t.Errorf("evidence %q", r.Pairing.Evidence)
		}
	}
}

// probe-rs writes core_type armv7m for every ARMv7 core, the Cortex-M4F
// and M7 included, and says in fpu_support whether the core has an FPU.
// The Cortex-M4F crash written that way (crashdump's TestProbeRSFixtures)
// pairs with the M4F ELF, whose Tag_CPU_arch is v7E-M: an architecture
// name is no proof of the core; the same file with fpu_support false
// cannot be the M4F hard-float ELF's dump (positive: the core says it
// has no FPU), and an ARMv6-M core's file cannot be the M4F ELF's.
func TestPairingProbeRSArmv7m(t *testing.T) {
	open := func(p string) *elfsym.File {
		f, err := elfsym.Open(filepath.Join(repo, p))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	m4f := open("firmware-samples/build/gcc-m4f-O2.elf")
	for _, c := range []struct {
		file string
		elf  *elfsym.File
		want string
		why  string
	}{
		{"gcc-m4f-O2-fpu_crash-armv7m.coredump", m4f, report.PairUnverified, ""},
		{"gcc-m4f-O2-null_write_deep-armv7m-nofpu.coredump", m4f, report.PairMismatch, "which the dump says its armv7-m core does not have"},
		{"gcc-m0-O2.coredump", m4f, report.PairMismatch, "which the dump's armv6-m cannot execute"},
	} {
		d, err := crashdump.Load(filepath.Join(repo, "fixtures/import/probe-rs", c.file))
		if err != nil {
			t.Fatal(err)
		}
		if d.CPU != map[bool]string{true: "armv7-m", false: "armv6-m"}[strings.Contains(c.file, "armv7m")] || d.FPU == nil {
			t.Fatalf("%s: cpu %q fpu %v", c.file, d.CPU, d.FPU)
		}
		r, err := Analyze(c.elf, d, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Pairing.Verdict != c.want || (c.want == report.PairUnverified && len(r.Pairing.Doubts) > 0) {
			t.Errorf("%s with %s: %s, want %s: %v", c.file, c.elf.Name(), r.Pairing.Verdict, c.want, r.Pairing.Evidence)
		}
		if c.why != "" && !strings.Contains(strings.Join(r.Pairing.Differences, "\n"), c.why) {
			t.Errorf("%s: differences %q, want %q", c.file, r.Pairing.Differences, c.why)
		}
	}
	// A native dump that names the core exactly is held to it.
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m4f-O2-fpu_crash.json"))
	if err != nil {
		t.Fatal(err)
	}
	d.CPU = "cortex-m3"
	if r, err := Analyze(m4f, d, Options{}); err != nil || r.Pairing.Verdict != report.PairMismatch {
		t.Errorf("an M4F ELF on a cortex-m3 dump: %v %v", err, r.Pairing.Evidence)
	}
}

// Code bytes decide only where the walk read them: a byte of the dump's
// flash that differs inside a function of the backtrace is a mismatch; one
// that differs elsewhere (flash the firmware writes, say, or constant data
// in .text) leaves the pairing unverified with the doubt said, never
// verified and never a mismatch.
func TestPairingCodeBytesWalked(t *testing.T) {
	elf, d := load(t, "gcc-m3-O2", "null_write_deep")
	addr, text, ok := elf.Section(".text")
	if !ok {
		t.Fatal("no .text")
	}
	base, err := Analyze(elf, d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var fn unwinders.Function
	for _, f := range base.Walk.Frames {
		if g, ok := elf.FuncAt(f.LookupPC()); ok && f.Kind == unwinders.KindNormal && g.End-g.Start > 8 {
			fn = g
			break
		}
	}
	if fn.End == 0 {
		t.Fatal("no frame in a function of more than 8 bytes")
	}
	for _, c := range []struct {
		at   uint32
		want string
		says string
	}{
		{fn.Start + (fn.End-fn.Start)/2, report.PairMismatch, "code bytes differ where the walk read them"},
		{addr + uint32(len(text)) - 1, report.PairUnverified, "outside the code the walk used"},
	} {
		flash := bytes.Clone(text)
		flash[c.at-addr] ^= 0x5a
		dd := *d
		dd.Memory = append(append([]unwinders.Region(nil), d.Memory...), unwinders.Region{Addr: addr, Data: flash, Name: "flash.bin"})
		r, err := Analyze(elf, &dd, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Pairing.Verdict != c.want || !strings.Contains(strings.Join(r.Pairing.Evidence, "\n"), c.says) {
			t.Errorf("a byte changed at 0x%08x: %s, want %s saying %q: %v", c.at, r.Pairing.Verdict, c.want, c.says, r.Pairing.Evidence)
		}
	}
}
