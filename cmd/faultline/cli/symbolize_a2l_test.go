package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const a2lDir = "testdata/addr2line"

// a2lFlagSets are the addr2line flag combinations recorded by
// testdata/addr2line/gen.sh.
var a2lFlagSets = []string{"", "-f", "-i", "-a", "-p", "-f -i", "-p -i", "-p -f", "-p -f -i", "-a -p -f -i", "-a -f -i -C", "-a -p -f -i -C"}

// TestSymbolizeAddr2LineFlags: with addr2line's flags, symbolize prints
// byte for byte what arm-none-eabi-addr2line printed for the same flags
// and addresses (recorded in testdata/addr2line; compared live as well
// when the tool is installed), C and C++ (-C) firmware.
func TestSymbolizeAddr2LineFlags(t *testing.T) {
	live, _ := exec.LookPath("arm-none-eabi-addr2line")
	for _, elf := range []string{repo + "/firmware-samples/build/gcc-m3-O2.elf", repo + "/elfsym/testdata/cxx/build/gcc-cxx-O2.elf"} {
		name := strings.TrimSuffix(filepath.Base(elf), ".elf")
		addrs, err := os.ReadFile(filepath.Join(a2lDir, name+".addresses"))
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range a2lFlagSets {
			file := filepath.Join(a2lDir, name+strings.ReplaceAll(flags, " ", "")+".txt")
			rec, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, want, _ := strings.Cut(string(rec), "\n") // the header line
			args := append([]string{"symbolize"}, strings.Fields(flags)...)
			args = append(args, "-e", elf)
			got, stderr, code := run(t, string(addrs), args...)
			if code != 0 {
				t.Errorf("%s %q: exit %d: %s", name, flags, code, stderr)
			}
			if got != want {
				t.Errorf("%s %q: differs from %s:\n%s", name, flags, file, firstDiff(got, want))
			}
			if live != "" {
				cmd := exec.Command(live, append(strings.Fields(flags), "-e", elf)...)
				cmd.Stdin = strings.NewReader(string(addrs))
				out, err := cmd.Output()
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != got {
					t.Errorf("%s %q: differs from the installed addr2line:\n%s", name, flags, firstDiff(got, string(out)))
				}
			}
		}
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  got  " + a + "\n  want " + b
		}
	}
	return "(same lines)"
}

// TestSymbolizeUnreadable: an unreadable token is answered with
// addr2line's "??" form, reported on stderr, and the stream goes on; the
// exit status says something was unreadable.
func TestSymbolizeUnreadable(t *testing.T) {
	elf := filepath.Join(repo, "elfsym/testdata/gcc-inline-O2.elf")
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{nil, "outer\n./src/inline.c:27\ncompute\n./src/inline.c:34\n??\n??:0\nouter\n./src/inline.c:27\ncompute\n./src/inline.c:34\n"},
		{[]string{"-e", elf}, "./src/inline.c:27\n??:0\n./src/inline.c:27\n"},
		{[]string{"-a", "-p", "-f", "-i"}, "0x000000b6: outer at ./src/inline.c:27\n (inlined by) compute at ./src/inline.c:34\n??: ?? ??:0\n0x000000b6: outer at ./src/inline.c:27\n (inlined by) compute at ./src/inline.c:34\n"},
	} {
		args := append([]string{"symbolize"}, c.flags...)
		if len(c.flags) == 0 || c.flags[0] != "-e" {
			args = append(args, "--elf", elf)
		}
		stdout, stderr, code := run(t, "0xb6\nzzz\n0xb6\n", args...)
		if code != ExitInput || stdout != c.want || !strings.Contains(stderr, `"zzz"`) || !strings.Contains(stderr, "1 unreadable address") {
			t.Errorf("%v: exit %d\nstdout %q\nwant   %q\nstderr %q", c.flags, code, stdout, c.want, stderr)
		}
		// The same as arguments.
		stdout, _, code = run(t, "", append(args, "0xb6", "zzz", "0xb6")...)
		if code != ExitInput || stdout != c.want {
			t.Errorf("%v (arguments): exit %d, %q", c.flags, code, stdout)
		}
	}
	if _, stderr, code := run(t, "", "symbolize", "--elf", elf, "-e", repo+"/firmware-samples/build/gcc-m3-O2.elf", "0x1"); code != ExitUsage {
		t.Errorf("--elf and another -e: exit %d %s", code, stderr)
	}
	if _, stderr, code := run(t, "", "symbolize", "-e", elf, "--format", "json", "0x1"); code != ExitUsage {
		t.Errorf("-e with --format json: exit %d %s", code, stderr)
	}
}

// TestSymbolizeStdinLines: read from standard input, symbolize answers
// each line once, as arm-none-eabi-addr2line does (recorded in
// testdata/addr2line/stdin-lines*.txt for stdin-lines.input): the first
// field is the address and the rest of the line is ignored, a blank line
// is address 0, CRLF and 0X are accepted. At address 0 addr2line reads the
// DWARF of code --gc-sections removed (relocated there); faultline never
// does (a documented difference) and answers "??:0". A line of 100,000
// bytes is one line, answered once (addr2line, reading 99 bytes at a time,
// answers each piece).
func TestSymbolizeStdinLines(t *testing.T) {
	elf := filepath.Join(repo, "firmware-samples/build/gcc-m3-O2.elf")
	input, err := os.ReadFile(filepath.Join(a2lDir, "stdin-lines.input"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(input), "\n"), "\n")
	for _, c := range []struct {
		flags, file string
		per         int // output lines per answer
	}{{"", "stdin-lines.txt", 1}, {"-a -f", "stdin-lines-af.txt", 3}} {
		rec, err := os.ReadFile(filepath.Join(a2lDir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSuffix(string(rec), "\n"), "\n")[1:] // the version comment
		stdout, stderr, code := run(t, string(input), append([]string{"symbolize", "-e", elf}, strings.Fields(c.flags)...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", c.flags, code, stderr)
		}
		got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		if len(got) != len(lines)*c.per || len(want) != len(lines)*c.per {
			t.Fatalf("%q: %d lines of output, addr2line %d, for %d input lines:\n%s", c.flags, len(got), len(want), len(lines), stdout)
		}
		for i, line := range lines {
			g, w := got[i*c.per:(i+1)*c.per], want[i*c.per:(i+1)*c.per]
			if strings.Join(g, "\n") == strings.Join(w, "\n") {
				continue
			}
			if strings.TrimSpace(line) == "" && g[len(g)-1] == "??:0" && (c.per == 1 || g[0] == "0x00000000" && g[1] == "??") {
				continue // address 0: the documented difference
			}
			t.Errorf("%q: line %d %q: got %q, addr2line %q", c.flags, i+1, line, g, w)
		}
	}
	long := "0x1b2" + strings.Repeat(" ", 100000) + "0x1c0\n0x1c0\n"
	stdout, stderr, code := run(t, long, "symbolize", "-e", elf)
	if code != 0 || stdout != "./src/main.c:56\n./src/main.c:61\n" {
		t.Errorf("a 100 kB line: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
