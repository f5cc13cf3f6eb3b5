package report

import (
	"strings"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// Version is faultline's version, reported in faultline.analysis/1
// ("faultline") and by faultline --version.
const Version = "0.9.0"

// ELFJSON is the "elf" object of faultline.analysis/1: which firmware the
// dump was decoded with.
type ELFJSON struct {
	Path    string `json:"path"`
	BuildID string `json:"build_id,omitempty"`
	CPU     string `json:"cpu,omitempty"` // from the ELF's build attributes
}

// HexRegs is a set of named register values that marshals as a JSON
// object of hex strings in a fixed order (the order it was built in),
// holding only known values.
type HexRegs struct {
	names  []string        // the names; nil when regs names the values
	regs   []unwinders.Reg // RegistersJSON's: named by their lower-case names
	values []uint32
}

func (h *HexRegs) add(name string, v uint32) {
	h.names = append(h.names, name)
	h.values = append(h.values, v)
}

// name is the name of value i.
func (h *HexRegs) name(i int) string {
	if h.names != nil {
		return h.names[i]
	}
	return strings.ToLower(h.regs[i].String())
}

// Len returns the number of values.
func (h *HexRegs) Len() int { return len(h.values) }

// MarshalJSON writes {"r0": "0x00000000", ...}.
func (h HexRegs) MarshalJSON() ([]byte, error) {
	return h.AppendJSON(make([]byte, 0, 2+len(h.values)*22)), nil
}

// AppendJSON appends what MarshalJSON returns to b.
func (h *HexRegs) AppendJSON(b []byte) []byte {
	const digits = "0123456789abcdef"
	b = append(b, '{')
	for i := range h.values {
		n := h.name(i)
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, n...)
		b = append(b, `":"0x`...)
		v := h.values[i]
		for sh := 28; sh >= 0; sh -= 4 {
			b = append(b, digits[v>>uint(sh)&0xf])
		}
		b = append(b, '"')
	}
	return append(b, '}')
}

// RegistersJSON lists the dump's known registers, core and special ones
// first, then the FP registers.
func RegistersJSON(r *unwinders.Registers) *HexRegs {
	// Registers, not their names: one byte each where a name is sixteen.
	n := 0
	r.Each(func(unwinders.Reg, uint32) { n++ })
	if n == 0 {
		return nil
	}
	h := &HexRegs{regs: make([]unwinders.Reg, 0, n), values: make([]uint32, 0, n)}
	r.Each(func(reg unwinders.Reg, v uint32) {
		h.regs = append(h.regs, reg)
		h.values = append(h.values, v)
	})
	return h
}

// FaultRegistersJSON lists the known SCB fault registers.
func FaultRegistersJSON(s fault.SCB) *HexRegs {
	h := new(HexRegs)
	s.Each(func(name string, v uint32) { h.add(strings.ToLower(name), v) })
	if h.Len() == 0 {
		return nil
	}
	return h
}
