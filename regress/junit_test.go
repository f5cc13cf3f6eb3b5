package regress

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// JUnitSuites is the JUnit XML read back, as a CI system reads it.
type JUnitSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Time       string `xml:"time,attr"`
		Timestamp  string `xml:"timestamp,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name      string `xml:"name,attr"`
			Classname string `xml:"classname,attr"`
			Time      string `xml:"time,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
				Text    string `xml:",chardata"`
			} `xml:"error"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// checkXML parses data with encoding/xml (strict) and, when python3 is
// installed, with xml.dom.minidom (expat), as CI plugins do.
func checkXML(t *testing.T, data []byte) JUnitSuites {
	t.Helper()
	var s JUnitSuites
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	if err := d.Decode(&s); err != nil {
		t.Fatalf("encoding/xml: %v\n%s", err, data)
	}
	if !utf8.Valid(data) {
		t.Error("the JUnit file is not valid UTF-8")
	}
	if py, err := exec.LookPath("python3"); err == nil {
		p := filepath.Join(t.TempDir(), "junit.xml")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(py, "-c", "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])", p).CombinedOutput()
		if err != nil {
			t.Errorf("python3 xml.dom.minidom: %v\n%s", err, out)
		}
	}
	return s
}

func TestRegressJUnitEscaping(t *testing.T) {
	nasty := "a<b>&\"c\"'d' ]]> \x00\x01\x1b[31m\x7f\ufffe \xff\xfe tab\tcr\r ok ✓ \U0001F600"
	spec := &Spec{Name: "suite <&>", Path: "specs/ci & co.json", ELF: "fw\x02.elf"}
	sc := []Scenario{{Name: "pass"}, {Name: "fail " + nasty}, {Name: "error"}}
	sum := &Summary{Spec: spec, Start: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Time: 1500 * time.Millisecond,
		Passed: 1, Failed: 1, Errors: 1, Results: []*Result{
			{Scenario: &sc[0], Status: StatusPass, Time: time.Millisecond},
			{Scenario: &sc[1], Status: StatusFail, Time: 2 * time.Millisecond, Reproduce: []string{"faultline emulate " + nasty},
				Problems: []Problem{{Kind: "backtrace", Summary: "backtrace: " + nasty + "\nsecond line", Detail: "diff " + nasty + "\n"},
					{Kind: "fault", Summary: "fault: x"}}},
			{Scenario: &sc[2], Status: StatusError, Time: 3 * time.Millisecond, ErrKind: "no-fault",
				Err: errors.New("the firmware did not fault: " + nasty)},
		}}
	var b bytes.Buffer
	if err := sum.WriteJUnit(&b); err != nil {
		t.Fatal(err)
	}
	s := checkXML(t, b.Bytes())
	if s.Tests != 3 || s.Failures != 1 || s.Errors != 1 || len(s.Suites) != 1 {
		t.Fatalf("counts: %+v", s)
	}
	su := s.Suites[0]
	if su.Name != "suite <&>" || su.Tests != 3 || su.Failures != 1 || su.Errors != 1 || su.Time != "1.500" || su.Timestamp != "2026-01-02T03:04:05" {
		t.Errorf("suite attributes: %+v", su)
	}
	if len(su.Properties) != 2 || su.Properties[0].Value != "specs/ci & co.json" || su.Properties[1].Value != "fw\ufffd.elf" {
		t.Errorf("properties: %+v", su.Properties)
	}
	if len(su.Cases) != 3 {
		t.Fatalf("cases: %+v", su.Cases)
	}
	c := su.Cases[1]
	if c.Classname != "faultline.regress.suite_<&>" || c.Time != "0.002" || c.Failure == nil || c.Error != nil {
		t.Fatalf("failing case: %+v", c)
	}
	if c.Failure.Type != "backtrace" || !strings.HasPrefix(c.Failure.Message, "backtrace: a<b>&\"c\"'d' ]]> \ufffd\ufffd\ufffd[31m") ||
		!strings.HasSuffix(c.Failure.Message, "(and 1 more)") || strings.Contains(c.Failure.Message, "second line") {
		t.Errorf("failure message %q", c.Failure.Message)
	}
	for _, want := range []string{"diff a<b>&", "]]>", "second line", "reproduce:\n  faultline emulate a<b>", "fault: x", "✓ \U0001F600"} {
		if !strings.Contains(c.Failure.Text, want) {
			t.Errorf("failure text lacks %q:\n%s", want, c.Failure.Text)
		}
	}
	if e := su.Cases[2].Error; e == nil || e.Type != "no-fault" || !strings.HasPrefix(e.Message, "the firmware did not fault") {
		t.Errorf("error case: %+v", su.Cases[2])
	}
	if su.Cases[0].Failure != nil || su.Cases[0].Error != nil {
		t.Errorf("passing case: %+v", su.Cases[0])
	}
}

func TestRegressJUnitSpecError(t *testing.T) {
	var b bytes.Buffer
	err := errors.New(`ci.json:3:5: unknown field "exepct"`)
	if e := WriteJUnitError(&b, "specs/ci.json", err, time.Now()); e != nil {
		t.Fatal(e)
	}
	s := checkXML(t, b.Bytes())
	if s.Errors != 1 || len(s.Suites) != 1 || len(s.Suites[0].Cases) != 1 {
		t.Fatalf("%+v", s)
	}
	c := s.Suites[0].Cases[0]
	if s.Suites[0].Name != "ci" || c.Name != "spec" || c.Error == nil || c.Error.Type != "spec" || c.Error.Message != err.Error() {
		t.Errorf("%+v", c)
	}
}

func TestRegressXMLSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain":           "plain",
		"a\x00b":          "a\ufffdb",
		"\t\n\r":          "\t\n\r",
		"\xff":            "\ufffd",
		"keep \ufffd":     "keep \ufffd",
		"\ufffe\uffff":    "\ufffd\ufffd",
		"\U0010FFFF":      "\U0010FFFF",
		"\ud7ff\ue000":    "\ud7ff\ue000",
		"esc\x1b[0m\x7f!": "esc\ufffd[0m\x7f!",
	} {
		if got := xmlSafe(in); got != want {
			t.Errorf("xmlSafe(%q) = %q, want %q", in, got, want)
		}
	}
}
