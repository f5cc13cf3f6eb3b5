package report

import (
	"fmt"
	"strings"
)

// MessageJSON is the crash's own message (design.md, "Arguments, locals,
// messages, logs"): what the firmware's reporting path was told, and
// where it was read from.
type MessageJSON struct {
	Text     string `json:"text"`
	File     string `json:"file,omitempty"`
	Line     *int64 `json:"line,omitempty"`
	Function string `json:"function,omitempty"`
	Source   string `json:"source"`
	// Frame and PC: the frame of the reporting function the message was
	// read from (absent for a coredump header or a --message symbol).
	Frame *int   `json:"frame,omitempty"`
	PC    string `json:"pc,omitempty"`
	// Address: where a --message symbol's text was read.
	Address string `json:"address,omitempty"`
	// Args: each value the message was built from, where it was read.
	Args []MessageArg `json:"args,omitempty"`
	// Truncated: the text was cut at its bound (no NUL within it).
	Truncated bool `json:"truncated,omitempty"`
	// Note says what could not be read, and why.
	Note string `json:"note,omitempty"`
}

// MessageArg is one value of a message: an argument of the reporting
// function (or the --message symbol), its value, the address of the
// string it points at, and how it was known.
type MessageArg struct {
	Name    string `json:"name"`
	Value   string `json:"value,omitempty"`
	Address string `json:"address,omitempty"`
	From    string `json:"from,omitempty"`
	Note    string `json:"note,omitempty"`
}

// Summary is the message as the text and HTML reports show it: the text
// (or "not captured" and why), then where the assertion was, when the
// reporting function was told.
func (m *MessageJSON) Summary() string {
	s := m.Text
	if s == "" {
		s = "<unknown>"
		if strings.Contains(m.Note, "not captured") {
			s = "<not captured>"
		}
	}
	if strings.HasSuffix(m.Source, " arguments") && m.Source != "Zephyr coredump reason" {
		switch {
		case m.File != "" && m.Line != nil:
			s += fmt.Sprintf(" at %s:%d", m.File, *m.Line)
		case m.File != "":
			s += " in file " + m.File
		case m.Line != nil:
			s += fmt.Sprintf(" at line %d", *m.Line)
		}
		if m.Function != "" {
			s += " in " + m.Function
		}
	}
	return s
}

// Where says where the message was read from.
func (m *MessageJSON) Where() string {
	s := m.Source
	switch {
	case m.Frame != nil:
		s += fmt.Sprintf(", frame #%d at %s", *m.Frame, m.PC)
		// The strings' addresses, and which values only the caller's
		// code proved.
		var at []string
		for _, a := range m.Args {
			if a.Address != "" && a.Note == "" {
				at = append(at, a.Name+" "+a.Address)
			}
		}
		if len(at) > 0 {
			s += ": " + strings.Join(at, ", ")
		}
		var proven []string
		for _, a := range m.Args {
			if strings.HasSuffix(a.From, "(the caller's code)") {
				proven = append(proven, a.Name)
			}
		}
		if len(proven) > 0 {
			s += "; " + strings.Join(proven, ", ") + " proven from the caller's code"
		}
	case m.Address != "" && len(m.Args) > 0:
		s += fmt.Sprintf(" at %s, pointing at %s", m.Args[0].Address, m.Address)
	case m.Address != "":
		s += " at " + m.Address
	}
	return s
}
