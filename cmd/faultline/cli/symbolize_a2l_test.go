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
