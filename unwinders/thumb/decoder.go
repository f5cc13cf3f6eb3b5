package thumb

import (
	"io"

	"github.com/faultline-dev/faultline/unwinders"
)

// A Decoder decodes the straight-line code of an address range in order,
// reading it through a Memory and tracking IT blocks (ITState), like a
// linear-sweep disassembler. It is for prologue and epilogue scans: it does
// not follow branches and cannot tell literal pools from code.
type Decoder struct {
	mem     unwinders.Memory
	pc, end uint32
	it      ITState
	err     error
	buf     [4]byte
}

// NewDecoder returns a Decoder for the instructions in [start, end).
func NewDecoder(m unwinders.Memory, start, end uint32) *Decoder {
	return &Decoder{mem: m, pc: start, end: end}
}

// Next decodes the next instruction into i. It returns io.EOF once the
// next instruction would start at or beyond end, and the read or decode
// error of DecodeAt otherwise; after an error every call returns it. An
// instruction that starts before end but extends past it is still decoded.
func (d *Decoder) Next(i *Inst) error {
	if d.err != nil {
		return d.err
	}
	if d.pc >= d.end {
		d.err = io.EOF
		return d.err
	}
	in, err := decodeAt(d.mem, d.pc, d.buf[:])
	if err != nil {
		d.err = err
		return err
	}
	d.it.Apply(&in)
	*i = in
	next := d.pc + uint32(in.Len)
	if next < d.pc { // wrapped around the address space
		d.err = io.EOF
	}
	d.pc = next
	return nil
}

// PC returns the address of the next instruction Next will decode.
func (d *Decoder) PC() uint32 { return d.pc }

// ITState returns the IT state in effect for the next instruction.
func (d *Decoder) ITState() ITState { return d.it }
