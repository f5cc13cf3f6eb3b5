package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// The README's examples and the docs are tested so that they cannot drift
// from what faultline does.
//
// In README.md, an HTML comment right before a fenced block marks it:
//
//	<!-- example: faultline ARGS... -->      the block is a file ({file} in
//	                                         ARGS); the command must succeed
//	<!-- example-output: faultline ARGS... --> the command's stdout must be
//	                                         the block, byte for byte
//
// Commands run in-process from the repository root; an {file} lives in a
// temporary directory that links the repository's top-level directories,
// so that paths relative to it work as from the root.

type readmeExample struct {
	line   int
	output bool // example-output
	args   []string
	block  string
}

var exampleRE = regexp.MustCompile(`^<!-- example(-output)?: faultline (.*) -->$`)

func readmeExamples(t *testing.T) []readmeExample {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []readmeExample
	for i := 0; i < len(lines); i++ {
		m := exampleRE.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.Contains(lines[i], "<!-- example") {
				t.Errorf("README.md:%d: malformed example marker %q", i+1, lines[i])
			}
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Errorf("README.md:%d: an example marker must be followed by a fenced block", i+1)
			continue
		}
		var block []string
		j := i + 2
		for ; j < len(lines) && !strings.HasPrefix(lines[j], "```"); j++ {
			block = append(block, lines[j])
		}
		if j == len(lines) {
			t.Fatalf("README.md:%d: unterminated block", i+2)
		}
		out = append(out, readmeExample{line: i + 1, output: m[1] != "", args: strings.Fields(m[2]), block: strings.Join(block, "\n") + "\n"})
		i = j
	}
	return out
}

func TestReadmeExamples(t *testing.T) {
	examples := readmeExamples(t)
	if len(examples) < 2 {
		t.Fatalf("%d README examples found, want the demo output and the regress spec at least", len(examples))
	}
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	tops, _ := os.ReadDir(root)
	for _, e := range tops {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			os.Symlink(filepath.Join(root, e.Name()), filepath.Join(files, e.Name()))
		}
	}
	t.Chdir(root)
	for _, ex := range examples {
		if ex.args[0] == "regress" || ex.args[0] == "emulate" {
			skipWithoutEmulator(t)
		}
		args := make([]string, len(ex.args))
		for i, a := range ex.args {
			if a == "{file}" {
				a = filepath.Join(files, "example-"+strconv.Itoa(ex.line)+".json")
				if err := os.WriteFile(a, []byte(ex.block), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args[i] = a
		}
		stdout, stderr, code := run(t, "", args...)
		if code != 0 {
			t.Errorf("README.md:%d: faultline %s: exit %d\n%s%s", ex.line, strings.Join(ex.args, " "), code, stdout, stderr)
			continue
		}
		if ex.output && stdout != ex.block {
			t.Errorf("README.md:%d: faultline %s prints something else than the README shows:\n%s", ex.line, strings.Join(ex.args, " "), firstDiff(stdout, ex.block))
		}
	}
}

// linkRE finds Markdown link targets and HTML href/src attributes.
var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)|(?:href|src)="([^"]+)"`)

// TestDocsLinksStayInRepository: every relative link of README.md and
// docs/*.md names a file of this repository (a fresh clone has nothing
// beside it).
func TestDocsLinksStayInRepository(t *testing.T) {
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		for _, m := range linkRE.FindAllStringSubmatch(string(data), -1) {
			target := m[1] + m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			p := filepath.Clean(filepath.Join(filepath.Dir(f), filepath.FromSlash(target)))
			if r, err := filepath.Rel(root, p); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				t.Errorf("%s: link %q leaves the repository", rel, m[1]+m[2])
				continue
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: link %q: %v", rel, m[1]+m[2], err)
			}
		}
		if strings.Contains(string(data), "shared/docs") {
			t.Errorf("%s: refers to shared/docs, which a clone does not have", rel)
		}
	}
}

// TestDocsListEveryFlag: docs/cli.md has a section for every command and
// names every one of its flags, so the reference stays current.
func TestDocsListEveryFlag(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repo, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	var sb, eb strings.Builder
	root := NewRoot(strings.NewReader(""), &sb, &eb)
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			continue
		}
		i := strings.Index(doc, "\n## "+c.Name()+"\n")
		if i < 0 {
			t.Errorf("docs/cli.md: no section for %s", c.Name())
			continue
		}
		section := doc[i+1:]
		if j := strings.Index(section[3:], "\n## "); j >= 0 {
			section = section[:j+3]
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(section, "--"+f.Name+"`") && !strings.Contains(section, "--"+f.Name+" ") && !strings.Contains(section, "`--"+f.Name) {
				t.Errorf("docs/cli.md: %s: flag --%s is not documented", c.Name(), f.Name)
			}
		})
	}
}
