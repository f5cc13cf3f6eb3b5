package matrix

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// KnownEntry is one line of a known-failures file:
//
//	BUILD-GLOB SCENARIO-GLOB STRATEGY-GLOB: reason
//
// Each glob is a path.Match pattern.
type KnownEntry struct {
	Build, Scenario, Strategy string
	Reason                    string
	File                      string
	Line                      int
}

// String is the entry's location and patterns, for messages.
func (e KnownEntry) String() string {
	return fmt.Sprintf("%s:%d: %s %s %s", e.File, e.Line, e.Build, e.Scenario, e.Strategy)
}

// Matches reports whether the entry covers the strategy on the case.
func (e KnownEntry) Matches(build, scenario, strategy string) bool {
	m := func(pat, s string) bool { ok, err := path.Match(pat, s); return err == nil && ok }
	return m(e.Build, build) && m(e.Scenario, scenario) && m(e.Strategy, strategy)
}

// Known is a parsed known-failures file.
type Known struct {
	File    string
	Entries []KnownEntry
}

// LoadKnown reads a known-failures file; strategies are the names a
// strategy pattern without glob characters must be one of.
func LoadKnown(file string, strategies []string) (*Known, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return ParseKnown(file, data, strategies)
}

// ParseKnown parses a known-failures file. One entry per line; empty lines
// and lines whose first non-blank character is '#' are ignored (a '#'
// later on a line is part of the reason). Errors are *SpecError values
// naming the line.
func ParseKnown(file string, data []byte, strategies []string) (*Known, error) {
	k := &Known{File: file}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		bad := func(format string, args ...any) error {
			return &SpecError{File: file, Line: n, What: fmt.Sprintf(format, args...)}
		}
		head, reason, ok := strings.Cut(line, ":")
		f := strings.Fields(head)
		if !ok || len(f) != 3 {
			return nil, bad("want BUILD-GLOB SCENARIO-GLOB STRATEGY: reason")
		}
		reason = strings.TrimSpace(reason)
		if reason == "" {
			return nil, bad("%s %s %s: no reason after the ':'", f[0], f[1], f[2])
		}
		for _, p := range f {
			if _, err := path.Match(p, ""); err != nil {
				return nil, bad("pattern %q: %v", p, err)
			}
		}
		if !strings.ContainsAny(f[2], "*?[\\") && len(strategies) > 0 && !slices.Contains(strategies, f[2]) {
			return nil, bad("unknown strategy %q (want one of %s, or a glob)", f[2], strings.Join(strategies, ", "))
		}
		k.Entries = append(k.Entries, KnownEntry{Build: f[0], Scenario: f[1], Strategy: f[2], Reason: reason, File: file, Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, &SpecError{File: file, Line: n + 1, What: err.Error()}
	}
	return k, nil
}

// Match returns the index of the first entry that covers the strategy on
// the case, or -1.
func (k *Known) Match(build, scenario, strategy string) int {
	if k == nil {
		return -1
	}
	for i, e := range k.Entries {
		if e.Matches(build, scenario, strategy) {
			return i
		}
	}
	return -1
}
