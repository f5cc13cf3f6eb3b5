package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
	"github.com/faultline-dev/faultline/unwinders/exidx"
)

// hostileDir holds the corpus of hostile inputs and expected.json.
var hostileDir = filepath.Join(repo, "fixtures/hostile")

// hostileManifest is fixtures/hostile/expected.json (faultline.hostile/1).
type hostileManifest struct {
	Schema   string                    `json:"schema"`
	About    string                    `json:"about"`
	Commands map[string]hostileCommand `json:"commands"`
	Cases    []hostileCase             `json:"cases"`
}

// hostileCommand is a command line template: {repo} is the repository
// root, {file} the case's file; with Stdin the file is standard input.
type hostileCommand struct {
	Args  []string `json:"args"`
	Stdin bool     `json:"stdin"`
	Doc   string   `json:"doc"`
}

// hostileCase is one hostile file and the answer it must get: through a
// command (exit status, then a substring of stderr or of stdout) or
// through a parser (a substring of its errors).
type hostileCase struct {
	File    string   `json:"file"`
	Command string   `json:"command"`
	Flags   []string `json:"flags"` // inserted after the subcommand
	Parser  string   `json:"parser"`
	Exit    *int     `json:"exit"`
	Error   *string  `json:"error"`
	Output  *string  `json:"output"`
	Note    string   `json:"note"`
}

func loadHostile(t *testing.T) *hostileManifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(hostileDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m hostileManifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	if m.Schema != "faultline.hostile/1" {
		t.Fatalf("expected.json: schema %q", m.Schema)
	}
	return &m
}

// TestHostileCorpus runs every file of fixtures/hostile through the
// command or parser expected.json names and checks the answer: no panic,
// the expected exit status, an error that names the file and says what is
// wrong. Every loop over the input must be bounded: a hang is caught by
// the test's own timeout, not by a timed assertion.
func TestHostileCorpus(t *testing.T) {
	m := loadHostile(t)
	root, err := filepath.Abs(repo)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for i, c := range m.Cases {
		covered[c.File] = true
		name := fmt.Sprintf("%s#%d", c.File, i)
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(hostileDir, filepath.FromSlash(c.File))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.Error == nil && c.Output == nil {
				t.Fatal("the case expects neither an error nor an output")
			}
			switch {
			case c.Parser != "" && c.Command != "":
				t.Fatal("a case names a command or a parser, not both")
			case c.Parser != "":
				runHostileParser(t, c, data)
			default:
				cmd, ok := m.Commands[c.Command]
				if !ok {
					t.Fatalf("unknown command %q", c.Command)
				}
				runHostileCommand(t, c, cmd, root, path, data)
			}
		})
	}
	// Every file of the corpus has at least one case.
	err = filepath.WalkDir(hostileDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(hostileDir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), "_") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "expected.json" || rel == "README.md" {
			return nil
		}
		if !covered[rel] {
			t.Errorf("%s has no case in expected.json", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runHostileCommand(t *testing.T, c hostileCase, cmd hostileCommand, root, path string, data []byte) {
	t.Helper()
	if c.Exit == nil {
		t.Fatal("a command case needs an exit status")
	}
	var args []string
	for i, a := range cmd.Args {
		a = strings.ReplaceAll(a, "{repo}", root)
		a = strings.ReplaceAll(a, "{file}", path)
		args = append(args, a)
		if i == 0 {
			args = append(args, c.Flags...)
		}
	}
	var stdin []byte
	if cmd.Stdin {
		stdin = data
	}
	var stdout, stderr bytes.Buffer
	code := func() (code int) {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("faultline %s: panic: %v\n%s", strings.Join(args, " "), p, debug.Stack())
			}
		}()
		return Run(args, bytes.NewReader(stdin), &stdout, &stderr)
	}()
	show := func() string {
		return fmt.Sprintf("faultline %s\nstderr:\n%.2000s\nstdout:\n%.2000s", strings.Join(args, " "), stderr.String(), stdout.String())
	}
	if code != *c.Exit {
		t.Fatalf("exit %d, want %d\n%s", code, *c.Exit, show())
	}
	if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("stderr shows a panic\n%s", show())
	}
	if code != ExitOK {
		// The error names the file (standard input has no name).
		if !cmd.Stdin && !strings.Contains(stderr.String(), path) {
			t.Errorf("the error does not name %s\n%s", path, show())
		}
		if c.Error == nil || !strings.Contains(stderr.String(), *c.Error) {
			t.Errorf("stderr lacks %q\n%s", deref(c.Error), show())
		}
		return
	}
	if c.Output == nil || !strings.Contains(stdout.String(), *c.Output) {
		t.Errorf("stdout lacks %q\n%s", deref(c.Output), show())
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nothing expected>"
	}
	return *s
}

// runHostileParser runs a raw section through its parser and everything
// that decodes it further; the errors, joined, must hold c.Error.
func runHostileParser(t *testing.T, c hostileCase, data []byte) {
	t.Helper()
	if c.Error == nil {
		t.Fatal("a parser case needs an error")
	}
	var errs []error
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("%s: panic: %v\n%s", c.Parser, p, debug.Stack())
			}
		}()
		switch c.Parser {
		case "cfi":
			kind := frame.DebugFrame
			if strings.HasSuffix(c.File, ".eh_frame") {
				kind = frame.EHFrame
			}
			s, err := frame.Parse(kind, 0x1000, data)
			errs = append(errs, err)
			if s == nil {
				t.Fatal("frame.Parse returned no section")
			}
			for _, cie := range s.CIEs {
				_, err := cie.InitialRow()
				errs = append(errs, err)
			}
			for _, fde := range s.FDEs {
				_, err := fde.Rows()
				errs = append(errs, err)
			}
			_ = frame.NewIndex(s.FDEs, frame.IndexOptions{})
		case "exidx":
			// The section as it sits in the sample firmware, with an
			// empty .ARM.extab of the usual size after it.
			tab, err := exidx.ParseTable(0x720, data, 0x630, make([]byte, 0xf0), nil)
			errs = append(errs, err)
			if tab != nil {
				for _, e := range tab.Entries() {
					errs = append(errs, e.Err)
				}
			}
		case "zephyr-threads":
			errs = append(errs, hostileZephyrThreads(t, c.File, data)...)
		default:
			t.Fatalf("unknown parser %q", c.Parser)
		}
	}()
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	sort.Strings(msgs)
	all := strings.Join(msgs, "\n")
	if *c.Error == "" {
		if all != "" {
			t.Errorf("%s: errors, none expected:\n%s", c.Parser, all)
		}
		return
	}
	if !strings.Contains(all, *c.Error) {
		t.Errorf("%s: errors lack %q:\n%.3000s", c.Parser, *c.Error, all)
	}
}

// hostileZephyrThreads decodes a Zephyr coredump of the Zephyr-like
// kernel (firmware-samples/rtos-zephyr gcc-m3-O2), places its threads
// block at _kernel and lists the threads (rtos.Discover): the errors are
// the decoder's, the placement's and discovery's warnings, and one line per
// thread with its name, state, error and diagnoses.
func hostileZephyrThreads(t *testing.T, name string, data []byte) []error {
	t.Helper()
	d, err := crashdump.Parse(data, name, nil)
	if err != nil {
		return []error{err}
	}
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/rtos-zephyr/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	defer elf.Close()
	var errs []error
	for _, w := range d.PlaceSymbolRegions(rtos.SymbolLookup(elf)) {
		errs = append(errs, errors.New(w))
	}
	im := &unwinders.Image{}
	if err := im.AddLayer(elf.Segments()...); err != nil {
		t.Fatal(err)
	}
	if err := im.AddLayer(d.Memory...); err != nil {
		return append(errs, err)
	}
	k, err := rtos.Discover(rtos.Input{ELF: elf, Mem: im, Regs: d.Regs})
	if err != nil || k == nil {
		return append(errs, fmt.Errorf("no kernel: %v", err))
	}
	for _, w := range k.Warnings {
		errs = append(errs, errors.New(w))
	}
	for _, th := range k.Threads {
		errs = append(errs, fmt.Errorf("thread \"%s\" (%s) err %v diagnosis %q", th.Name, th.State, th.Err, th.Diagnosis))
	}
	return errs
}
