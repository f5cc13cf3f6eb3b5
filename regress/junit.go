package regress

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"
)

// JUnit XML, as Jenkins (junit-10.xsd), GitLab and most CI systems read
// it: <testsuites> holding one <testsuite> per spec, one <testcase> per
// scenario, with a <failure> (the scenario ran and differs) or an <error>
// (it could not run) whose text is the readable diff.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// maxMessage bounds the message attribute (the one-line summary CI
// systems show in their lists); the full text is the element's content.
const maxMessage = 300

// xmlSafe replaces what XML 1.0 cannot carry (invalid UTF-8, control
// characters other than tab, newline and carriage return, U+FFFE/U+FFFF)
// with U+FFFD. encoding/xml escapes &, <, > and quotes.
func xmlSafe(s string) string {
	ok := func(r rune) bool {
		return r == '\t' || r == '\n' || r == '\r' || (r >= 0x20 && r <= 0xD7FF) ||
			(r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
	}
	clean := true
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if !ok(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

// message makes the one-line message attribute: the first line, tabs and
// carriage returns as spaces, at most maxMessage characters.
func message(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.NewReplacer("\t", " ", "\r", " ").Replace(s)
	return xmlSafe(abbreviate(s, maxMessage))
}

func junitTime(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "localhost"
}

// classname is the testcase class: "faultline.regress.<suite>", with the
// characters that CI systems split class names on replaced.
func classname(suite string) string {
	return "faultline.regress." + strings.Map(func(r rune) rune {
		if r == '.' || r == '/' || r == '\\' || r == ' ' {
			return '_'
		}
		return r
	}, suite)
}

// WriteJUnit writes the run as JUnit XML.
func (s *Summary) WriteJUnit(w io.Writer) error {
	suite := junitSuite{
		Name: xmlSafe(s.Spec.Name), Tests: len(s.Results), Failures: s.Failed, Errors: s.Errors,
		Time: junitTime(s.Time), Timestamp: s.Start.UTC().Format("2006-01-02T15:04:05"), Hostname: hostname(),
		Properties: []junitProperty{{"spec", xmlSafe(s.Spec.Path)}},
	}
	if s.Spec.ELF != "" {
		suite.Properties = append(suite.Properties, junitProperty{"elf", xmlSafe(s.Spec.ELF)})
	}
	cls := xmlSafe(classname(s.Spec.Name))
	for _, r := range s.Results {
		c := junitCase{Name: xmlSafe(r.Scenario.Name), Classname: cls, Time: junitTime(r.Time)}
		switch r.Status {
		case StatusFail:
			msg, _, _ := strings.Cut(r.Problems[0].Summary, "\n")
			if n := len(r.Problems); n > 1 {
				msg += fmt.Sprintf(" (and %d more)", n-1)
			}
			c.Failure = &junitProblem{Message: message(msg), Type: r.Problems[0].Kind, Text: xmlSafe(r.Details())}
		case StatusError:
			c.Error = &junitProblem{Message: message(r.Err.Error()), Type: r.ErrKind, Text: xmlSafe(r.Details())}
		}
		suite.Cases = append(suite.Cases, c)
	}
	return writeXML(w, junitSuites{Name: "faultline regress", Tests: suite.Tests, Failures: suite.Failures,
		Errors: suite.Errors, Time: suite.Time, Suites: []junitSuite{suite}})
}

// WriteJUnitError writes JUnit XML for a spec that could not be loaded:
// one testcase "spec" with the error, so that a CI system that expects
// the report shows the problem instead of a missing file.
func WriteJUnitError(w io.Writer, specPath string, err error, start time.Time) error {
	name := strings.TrimSuffix(baseName(specPath), ".json")
	suite := junitSuite{
		Name: xmlSafe(name), Tests: 1, Errors: 1, Time: junitTime(0),
		Timestamp: start.UTC().Format("2006-01-02T15:04:05"), Hostname: hostname(),
		Properties: []junitProperty{{"spec", xmlSafe(specPath)}},
		Cases: []junitCase{{Name: "spec", Classname: xmlSafe(classname(name)), Time: junitTime(0),
			Error: &junitProblem{Message: message(err.Error()), Type: "spec", Text: xmlSafe(err.Error() + "\n")}}},
	}
	return writeXML(w, junitSuites{Name: "faultline regress", Tests: 1, Errors: 1, Time: suite.Time, Suites: []junitSuite{suite}})
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

func writeXML(w io.Writer, v any) error {
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
