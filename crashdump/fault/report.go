package fault

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// reportJSON is the wire form of Report: the "fault" object of
// faultline.analysis/1.
type reportJSON struct {
	Exception string  `json:"exception"`
	Number    int     `json:"number"`
	Causes    []Cause `json:"causes"`
	Address   *string `json:"address,omitempty"`
}

// MarshalJSON writes the "fault" object of faultline.analysis/1:
// {"exception", "number", "causes", "address"}. Causes is always an array;
// address is a "0x%08x" string and is left out when there is none. Notes are
// not part of the object.
func (r Report) MarshalJSON() ([]byte, error) {
	j := reportJSON{Exception: r.Exception, Number: r.Number, Causes: r.Causes}
	if j.Causes == nil {
		j.Causes = []Cause{}
	}
	if r.Address != nil {
		s := fmt.Sprintf("0x%08x", *r.Address)
		j.Address = &s
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes. Notes are left empty.
func (r *Report) UnmarshalJSON(b []byte) error {
	var j reportJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Report{Exception: j.Exception, Number: j.Number, Causes: j.Causes}
	if j.Address != nil {
		s := *j.Address
		if !strings.HasPrefix(s, "0x") {
			return fmt.Errorf("fault: address %q: want a 0x hex string", s)
		}
		v, err := strconv.ParseUint(s[2:], 16, 32)
		if err != nil {
			return fmt.Errorf("fault: address %q: want a 32-bit 0x hex string", s)
		}
		a := uint32(v)
		r.Address = &a
	}
	return nil
}

// String renders the report as text: the exception, one line per cause,
// the address and the notes.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", r.Exception)
	if r.Number != 0 {
		fmt.Fprintf(&b, " (exception %d)", r.Number)
	}
	if r.Address != nil {
		fmt.Fprintf(&b, " at 0x%08x", *r.Address)
	}
	b.WriteByte('\n')
	for _, c := range r.Causes {
		fmt.Fprintf(&b, "  %s.%s: %s\n", c.Register, c.Bit, c.Text)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}
