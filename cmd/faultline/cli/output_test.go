package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// outputDump copies the null_write_deep fixture (manifest and RAM file)
// into dir as in.json.
func outputDump(t *testing.T, dir string) string {
	t.Helper()
	d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.json")
	if err := d.Write(in); err != nil {
		t.Fatal(err)
	}
	return in
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, _ := os.ReadDir(dir)
	var n []string
	for _, e := range es {
		n = append(n, e.Name())
	}
	return n
}

// -o at a character device (a null device): written through, it stays
// the same device, and no region file is put beside it (issue 23 item 2:
// as root, /dev/null was replaced by a regular file, with
// /dev/null.20000000.bin beside it). As root the test uses a private
// device node, never the system's /dev/null.
func TestOutputCharDevice(t *testing.T) {
	dev := nullDevice(t)
	st, err := os.Stat(dev)
	if err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("%s is not a character device", dev)
	}
	before, _ := filepath.Glob(dev + "*")
	in := outputDump(t, t.TempDir())
	for _, to := range []string{"native", "crashcatcher", "elfcore"} {
		_, errOut, code := run(t, "", "convert", "--to", to, in, "-o", dev)
		if code != 0 {
			t.Errorf("--to %s -o %s: exit %d: %s", to, dev, code, errOut)
		}
		after, err := os.Stat(dev)
		if err != nil || after.Mode()&fs.ModeCharDevice == 0 || !os.SameFile(st, after) {
			t.Fatalf("--to %s: %s is no longer the character device", to, dev)
		}
	}
	if now, _ := filepath.Glob(dev + "*"); len(now) != len(before) {
		t.Errorf("files beside %s: %v", dev, now)
	}
}

// -o at a FIFO: one self-contained manifest goes through it, which
// analyze reads back; the FIFO stays a FIFO, nothing is put beside it.
func TestOutputFIFO(t *testing.T) {
	dir := t.TempDir()
	in := outputDump(t, dir)
	fifo := filepath.Join(dir, "out.fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	got := make(chan []byte)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	_, errOut, code := run(t, "", "convert", "--to", "native", in, "-o", fifo)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if st, _ := os.Lstat(fifo); st.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", st.Mode()) // (its reader is left waiting)
	}
	var b []byte
	select {
	case b = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("nothing came through the FIFO")
	}
	if n := dirNames(t, dir); len(n) != 3 { // in.json, its RAM file, the FIFO
		t.Errorf("files beside the FIFO: %v", n)
	}
	self := filepath.Join(t.TempDir(), "self.json")
	os.WriteFile(self, b, 0o644)
	a1, _, _ := run(t, "", "analyze", "--elf", sampleELF, "--format", "json", in)
	a2, e2, _ := run(t, "", "analyze", "--elf", sampleELF, "--format", "json", self)
	if a1 == "" || strings.ReplaceAll(a1, in, "X") != strings.ReplaceAll(a2, self, "X") {
		t.Errorf("what went through the FIFO decodes differently: %s", e2)
	}
}

// -o at a symbolic link: the link's target is replaced, its region file
// lands beside the target, the link stays a link and analyze reads the
// dump through it.
func TestOutputSymlink(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	in := outputDump(t, dir)
	target := filepath.Join(other, "real.json")
	os.WriteFile(target, []byte("old"), 0o644)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := run(t, "", "convert", "--to", "native", in, "-o", link)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the link was replaced")
	}
	if _, err := os.Stat(filepath.Join(other, "real.20000000.bin")); err != nil {
		t.Errorf("no region file beside the target: %v (%v)", err, dirNames(t, other))
	}
	if n := dirNames(t, dir); len(n) != 3 {
		t.Errorf("files beside the link: %v", n)
	}
	for _, p := range []string{link, target} {
		if _, errOut, code := run(t, "", "analyze", "--elf", sampleELF, p); code != 0 {
			t.Errorf("analyze %s: exit %d: %s", p, code, errOut)
		}
	}
}

// Every input is refused as an output, by file identity: the ELF of
// emulate and convert --elf, --regs, the regress spec, matrix's spec,
// a hard link to any of them; the input is left as it was.
func TestOutputIsNeverAnInput(t *testing.T) {
	dir := t.TempDir()
	in := outputDump(t, dir)
	elf := filepath.Join(dir, "fw.elf")
	copyFile(t, sampleELF, elf)
	hardELF := filepath.Join(dir, "hard.elf")
	if err := os.Link(elf, hardELF); err != nil {
		t.Fatal(err)
	}
	regs := filepath.Join(dir, "regs.txt")
	os.WriteFile(regs, []byte("r0 0x0 0\nsp 0x20001000 0x20001000\npc 0x100 0x100\n"), 0o644)
	img := filepath.Join(dir, "ram.bin")
	os.WriteFile(img, make([]byte, 64), 0o644)
	spec := filepath.Join(dir, "sample.json")
	copyFile(t, filepath.Join(repo, regressDir, "sample.json"), spec)
	mspec := filepath.Join(dir, "matrix.json")
	copyFile(t, filepath.Join(repo, "firmware-samples/matrix/matrix.json"), mspec)
	// A build's ELF of the matrix spec (its path relative to the spec).
	matrixELF := filepath.Join(dir, "build", "gcc-m0plus-O0.elf")
	os.MkdirAll(filepath.Dir(matrixELF), 0o755)
	copyFile(t, sampleELF, matrixELF)
	hardSpec := filepath.Join(dir, "hard-spec.json")
	os.Link(spec, hardSpec)
	snapshot := map[string]string{}
	for _, p := range []string{in, elf, regs, spec, mspec, matrixELF} {
		b, _ := os.ReadFile(p)
		snapshot[p] = string(b)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"emulate", "--elf", elf, "-o", elf}, "is the input " + elf},
		{[]string{"emulate", "--elf", elf, "-o", hardELF}, "is the input " + elf},
		{[]string{"convert", "--to", "elfcore", "--elf", elf, in, "-o", elf}, "is the input " + elf},
		{[]string{"convert", "--to", "elfcore", "--elf", elf, in, "-o", hardELF}, "is the input " + elf},
		{[]string{"convert", "--to", "native", "--regs", regs, "--base", "0x20000000", img, "-o", regs}, "is the input " + regs},
		{[]string{"convert", "--to", "crashcatcher", "--regs", regs, "--base", "0x20000000", img, "-o", img}, "is the input " + img},
		{[]string{"regress", spec, "--junit", spec}, "is the input " + spec},
		{[]string{"regress", spec, "--junit", hardSpec}, "is the input " + spec},
		{[]string{"matrix", mspec, "-o", mspec}, "is the input " + mspec},
		{[]string{"matrix", mspec, "-o", matrixELF}, "is the input " + matrixELF},
		{[]string{"matrix", mspec, "--update-readme", mspec}, "is the input " + mspec},
		{[]string{"regress", spec, "--junit", dir}, "is a directory"},
		{[]string{"matrix", mspec, "-o", dir}, "is a directory"},
	} {
		_, errOut, code := run(t, "", tc.args...)
		if code != ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	for p, want := range snapshot {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s was overwritten", p)
		}
	}
}

// analyze --format html -o DIR: a page never replaces a dump, and the
// pages and index.html are renamed into place (no temporary file left).
func TestHTMLPagesNotInputs(t *testing.T) {
	dir := t.TempDir()
	in := outputDump(t, dir)
	page := filepath.Join(dir, "in.html")
	copyFile(t, in, page) // a dump that is named like its page would be
	_, errOut, code := run(t, "", "analyze", "--elf", sampleELF, "--format", "html", "-o", dir, in, page)
	if code != ExitUsage || !strings.Contains(errOut, "is the input "+page) {
		t.Errorf("exit %d, %q", code, errOut)
	}
	out := t.TempDir()
	if _, errOut, code := run(t, "", "analyze", "--elf", sampleELF, "--format", "html", "-o", out, in, in); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := dirNames(t, out); strings.Join(n, " ") != "in-2.html in.html index.html" {
		t.Errorf("pages: %v", n)
	}
}

// convert -o - of a region too large for a self-contained manifest that
// faultline reads back is refused before anything is written, with the
// reason; to a file, the region goes beside the manifest, which loads
// back (issue 23 item 5: it wrote a 134 MB manifest analyze refused).
func TestConvertNeverWritesUnreadable(t *testing.T) {
	dir := t.TempDir()
	regs := filepath.Join(dir, "regs.txt")
	os.WriteFile(regs, []byte("r0 0x0\nsp 0x20001000\npc 0x100\nlr 0xfffffff9\nxpsr 0x01000003\n"), 0o644)
	img := filepath.Join(dir, "ram.bin")
	size := crashdump.MaxSelfContained/2 + 1 // its hex alone is too large
	if err := os.WriteFile(img, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"convert", "--to", "native", "--regs", regs, "--base", "0x20000000", img}
	out, errOut, code := run(t, "", append(args, "-o", "-")...)
	if code != ExitUsage || out != "" || !strings.Contains(errOut, "more than the 67108864 bytes faultline reads back") {
		t.Errorf("-o -: exit %d, %d bytes out, %q", code, len(out), errOut)
	}
	man := filepath.Join(dir, "big.json")
	if _, errOut, code := run(t, "", append(args, "-o", man)...); code != 0 {
		t.Fatalf("-o FILE: exit %d: %s", code, errOut)
	}
	d, err := crashdump.Load(man)
	if err != nil || len(d.Memory) != 1 || len(d.Memory[0].Data) != size {
		t.Fatalf("reading it back: %v", err)
	}
	d.Close()
	// --max-memory bounds what reading the input may hold.
	_, errOut, code = run(t, "", append([]string{"convert", "--max-memory", "64MiB"}, append(args[1:], "-o", man)...)...)
	if code != 0 {
		t.Errorf("--max-memory 64MiB of a 32 MiB image: exit %d %s", code, errOut)
	}
	_, errOut, code = run(t, "", "convert", "--max-memory", "64MiB", "--to", "native", man, "-o", filepath.Join(dir, "again.json"))
	if code != 0 {
		t.Errorf("--max-memory 64MiB of a manifest with a mapped region file: exit %d %s", code, errOut)
	}
}

// A committed ELF with one corrupt debug section (.debug_info's size set
// to 0xfffffff0) stays usable: info, symbolize and analyze warn, naming
// the section, and still name every frame's function from the symbol
// table, with the backtrace of the intact ELF (issue 23 item 7: all three
// exited 1).
func TestCorruptDebugInfoDegrades(t *testing.T) {
	data, err := os.ReadFile(sampleELF)
	if err != nil {
		t.Fatal(err)
	}
	f, err := elfsym.NewFile(bytes.NewReader(data), "x.elf")
	if err != nil {
		t.Fatal(err)
	}
	var hdr uint32
	for _, s := range f.Sections() {
		if s.Name == ".debug_info" {
			hdr = binary.LittleEndian.Uint32(data[32:]) + uint32(s.Index)*40
		}
	}
	f.Close()
	if hdr == 0 {
		t.Fatal("no .debug_info")
	}
	bad := bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[hdr+20:], 0xfffffff0)
	elf := filepath.Join(t.TempDir(), "bad.elf")
	os.WriteFile(elf, bad, 0o644)
	dump := filepath.Join(repo, "fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	const warn = "section 5 (.debug_info) ignored: data at 0x2024 (4294967280 bytes) runs past the end of the file"
	for _, args := range [][]string{{"info", "--elf", elf}, {"symbolize", "--elf", elf, "0x1b8"}, {"analyze", "--elf", elf, dump}} {
		out, errOut, code := run(t, "", args...)
		if code != 0 || !strings.Contains(out+errOut, warn) {
			t.Errorf("%s: exit %d, %q", args[0], code, errOut)
		}
		if args[0] == "symbolize" && !strings.HasPrefix(out, "null_store\n") {
			t.Errorf("symbolize: %q", out)
		}
	}
	good, _, _ := run(t, "", "analyze", "--format", "json", "--elf", sampleELF, dump)
	got, _, _ := run(t, "", "analyze", "--format", "json", "--elf", elf, dump)
	var g, w struct {
		Frames []struct{ Function, PC string }
	}
	json.Unmarshal([]byte(good), &w)
	json.Unmarshal([]byte(got), &g)
	if len(g.Frames) < 8 || fmt.Sprint(g.Frames) != fmt.Sprint(w.Frames) {
		t.Errorf("the backtrace differs from the intact ELF's:\n%v\n%v", g.Frames, w.Frames)
	}
}
