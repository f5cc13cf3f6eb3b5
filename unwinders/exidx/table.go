package exidx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Errors returned by Table and Unwinder. Step wraps the ones that mean
// "this strategy has no evidence" together with unwinders.ErrNotApplicable.
var (
	// ErrNoTable: the program has no .ARM.exidx section.
	ErrNoTable = errors.New("exidx: no .ARM.exidx section")
	// ErrNoEntry: no index entry covers the address.
	ErrNoEntry = errors.New("exidx: no unwind entry covers the address")
	// ErrCantUnwind: the entry is EXIDX_CANTUNWIND (EHABI 6).
	ErrCantUnwind = errors.New("exidx: EXIDX_CANTUNWIND")
	// ErrRefused: the opcodes hold the refuse-to-unwind instruction.
	ErrRefused = errors.New("exidx: refuse-to-unwind opcode")
	// ErrBadOpcode: a spare, reserved, iWMMXt or malformed instruction.
	ErrBadOpcode = errors.New("exidx: unusable unwinding instruction")
	// ErrBadEntry: the entry cannot be decoded (see the wrapped
	// *FormatError).
	ErrBadEntry = errors.New("exidx: malformed table entry")
	// ErrUnknownPersonality: a generic-model entry names a personality
	// routine whose data layout is not known.
	ErrUnknownPersonality = errors.New("exidx: unknown personality routine")
	// ErrRegisterUnknown: an instruction needs a register the frame does
	// not know (vsp = r[n], or LR for the return address).
	ErrRegisterUnknown = errors.New("exidx: register not known")
)

// FormatError reports malformed table data: which section, at which byte
// offset, and what was wrong (in the manner of debug/elf.FormatError).
type FormatError struct {
	Section string // ".ARM.exidx" or ".ARM.extab"
	Offset  int64  // byte offset inside the section, -1 if outside it
	Msg     string
}

func (e *FormatError) Error() string {
	if e.Offset < 0 {
		return fmt.Sprintf("exidx: %s: %s", e.Section, e.Msg)
	}
	return fmt.Sprintf("exidx: %s at offset 0x%x: %s", e.Section, e.Offset, e.Msg)
}

// Kind classifies an index entry (EHABI 6 and 7).
type Kind uint8

const (
	CantUnwind Kind = iota + 1 // second word 0x1: EXIDX_CANTUNWIND
	Inline                     // second word has bit 31 set: compact model, personality 0, inline
	Compact                    // .ARM.extab entry, compact model (personality 0, 1 or 2)
	Generic                    // .ARM.extab entry, generic model (prel31 personality routine)
)

func (k Kind) String() string {
	switch k {
	case CantUnwind:
		return "cantunwind"
	case Inline:
		return "inline"
	case Compact:
		return "compact"
	case Generic:
		return "generic"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// knownPersonalities are the generic-model personality routines whose data
// starts with GCC's unwinding-instruction layout (libgcc
// __gnu_unwind_frame): a count byte N in bits 31:24 of the word after the
// routine's address, three opcode bytes in bits 23:0, then N more words.
// readelf decodes the same set.
var knownPersonalities = map[string]bool{
	"__gcc_personality_v0":      true,
	"__gxx_personality_v0":      true,
	"__gcj_personality_v0":      true,
	"__gnu_objc_personality_v0": true,
}

// Entry is one decoded .ARM.exidx entry and, for Compact and Generic
// entries, the start of the .ARM.extab entry it points to.
type Entry struct {
	Index int    // position in .ARM.exidx
	Addr  uint32 // address of the index entry
	// Start is the function start decoded from the first word, as written
	// (GNU as sets the Thumb bit for assembler functions); FuncStart clears
	// it.
	Start uint32
	// End is the next entry's function start (Thumb bit clear); Bounded is
	// false for the last entry, which has no upper bound (EHABI 6).
	End     uint32
	Bounded bool
	Word    uint32 // the raw second word
	Kind    Kind
	// Extab is the address of the .ARM.extab entry (Compact, Generic).
	Extab uint32
	// Personality is the compact model's personality routine index 0-2
	// (Inline: 0), -1 for Generic and CantUnwind.
	Personality int
	// PersonalityAddr is a Generic entry's routine address as decoded
	// (Thumb bit kept); PersonalityName its symbol, "" if unknown.
	PersonalityAddr uint32
	PersonalityName string
	// InheritedBy is set by Lookup when the address lies in a function that
	// starts above the entry (Thumb bit clear): GNU ld merges consecutive
	// identical entries (--merge-exidx-entries, its default), and it may
	// also omit the EXIDX_CANTUNWIND terminator after the last function
	// with unwind information. The two cannot be told apart from the table,
	// so such an entry is only trusted when the function's own prologue
	// proves the frame the entry describes.
	InheritedBy uint32
	// Err is set when the entry cannot be decoded: an .ARM.extab pointer
	// outside the section, an extra-word count past its end. It wraps a
	// *FormatError.
	Err error

	stream []byte // the opcode stream (nil when there is none)
}

// FuncStart returns the first instruction the entry covers (Thumb bit
// clear).
func (e *Entry) FuncStart() uint32 { return e.Start &^ 1 }

// Stream returns the entry's unwinding-instruction bytes in execution order
// (most significant byte of each word first, EHABI 10.2). It is nil for
// CantUnwind entries, Generic entries of unknown personality routines and
// malformed entries. The caller must not modify it.
func (e *Entry) Stream() []byte { return e.stream }

// Opcodes decodes the entry's unwinding instructions, including the padding
// after the first finish (as readelf lists them).
func (e *Entry) Opcodes() []Opcode { return Decode(e.stream) }

// String describes the entry on one line per instruction, like readelf -u.
func (e *Entry) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "0x%x: ", e.Start)
	switch e.Kind {
	case CantUnwind:
		b.WriteString("0x1 [cantunwind]")
	case Inline:
		fmt.Fprintf(&b, "0x%08x\n  Compact model index: 0", e.Word)
	case Compact:
		fmt.Fprintf(&b, "@0x%x\n  Compact model index: %d", e.Extab, e.Personality)
	case Generic:
		fmt.Fprintf(&b, "@0x%x\n  Personality routine: 0x%x", e.Extab, e.PersonalityAddr)
		if e.PersonalityName != "" {
			fmt.Fprintf(&b, " <%s>", e.PersonalityName)
		}
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "\n  error: %v", e.Err)
	}
	for _, op := range e.Opcodes() {
		b.WriteString("\n  ")
		b.WriteString(op.String())
	}
	return b.String()
}

// Table is a decoded, sorted .ARM.exidx index. Build it once with NewTable
// or ParseTable; Lookup is then a binary search. A Table is immutable and
// safe for concurrent use.
type Table struct {
	entries []Entry
	prog    unwinders.Program
}

// NewTable decodes the .ARM.exidx and .ARM.extab sections of prog. It
// returns ErrNoTable when there is no .ARM.exidx section.
func NewTable(prog unwinders.Program) (*Table, error) {
	xa, x, ok := prog.Section(".ARM.exidx")
	if !ok {
		return nil, ErrNoTable
	}
	ta, t, _ := prog.Section(".ARM.extab")
	return ParseTable(xa, x, ta, t, prog)
}

// prel31 decodes a place-relative 31-bit offset stored at addr (EHABI 6:
// bits 30:0 sign-extended, added to the word's own address).
func prel31(word, addr uint32) uint32 {
	off := word & 0x7FFFFFFF
	if off&0x40000000 != 0 {
		off |= 0x80000000
	}
	return addr + off
}

// maxExtraWords is the largest extra-word count an entry can encode (an
// 8-bit field, EHABI 10.2 and libgcc's layout).
const maxExtraWords = 255

// ParseTable decodes an index section at exidxAddr and the exception
// handling table section at extabAddr (extab may be nil). prog, if not nil,
// names generic personality routines and bounds entries by function (see
// Lookup). The whole index is checked: a size that is not a multiple of 8,
// an entry with bit 31 set in its first word, or entries out of order give
// a *FormatError. Problems of a single entry (an .ARM.extab pointer outside
// the section, a count past its end) are recorded in that Entry's Err, so
// the rest of the table stays usable. Cost: linear in the section sizes.
func ParseTable(exidxAddr uint32, exidx []byte, extabAddr uint32, extab []byte, prog unwinders.Program) (*Table, error) {
	if len(exidx)%8 != 0 {
		return nil, &FormatError{".ARM.exidx", int64(len(exidx) &^ 7), fmt.Sprintf("section size %d is not a multiple of 8", len(exidx))}
	}
	if uint64(exidxAddr)+uint64(len(exidx)) > 1<<32 || uint64(extabAddr)+uint64(len(extab)) > 1<<32 {
		return nil, &FormatError{".ARM.exidx", -1, "section runs past the end of the address space"}
	}
	n := len(exidx) / 8
	tab := &Table{entries: make([]Entry, n), prog: prog}
	for i := 0; i < n; i++ {
		off := 8 * i
		addr := exidxAddr + uint32(off)
		w0 := binary.LittleEndian.Uint32(exidx[off:])
		w1 := binary.LittleEndian.Uint32(exidx[off+4:])
		if w0&0x80000000 != 0 {
			return nil, &FormatError{".ARM.exidx", int64(off), fmt.Sprintf("entry %d: first word 0x%08x has bit 31 set", i, w0)}
		}
		e := Entry{Index: i, Addr: addr, Start: prel31(w0, addr), Word: w1, Personality: -1}
		if i > 0 && e.FuncStart() < tab.entries[i-1].FuncStart() {
			return nil, &FormatError{".ARM.exidx", int64(off), fmt.Sprintf("entries are not sorted: entry %d starts at 0x%08x, below entry %d at 0x%08x", i, e.FuncStart(), i-1, tab.entries[i-1].FuncStart())}
		}
		switch {
		case w1 == 1:
			e.Kind = CantUnwind
		case w1&0x80000000 != 0:
			e.Kind = Inline
			e.Personality = 0
			if idx := w1 >> 24 & 0x0F; w1&0x70000000 != 0 || idx != 0 {
				e.Err = &FormatError{".ARM.exidx", int64(off + 4), fmt.Sprintf("inline entry 0x%08x is not personality routine 0", w1)}
				break
			}
			e.stream = []byte{byte(w1 >> 16), byte(w1 >> 8), byte(w1)}
		default:
			e.Extab = prel31(w1, addr+4)
			tab.decodeExtab(&e, extabAddr, extab)
		}
		tab.entries[i] = e
	}
	for i := 0; i+1 < n; i++ {
		tab.entries[i].End = tab.entries[i+1].FuncStart()
		tab.entries[i].Bounded = true
	}
	return tab, nil
}

// decodeExtab decodes the .ARM.extab entry e points to (EHABI 7.2 and
// 10.2): compact model (bit 31 set) with personality index 0 (three opcode
// bytes) or 1/2 (bits 23:16 = N extra words, opcodes from bits 15:8), or
// the generic model (a prel31 personality routine, then for GCC's routines
// a count byte and opcodes like pr1/pr2).
func (tab *Table) decodeExtab(e *Entry, extabAddr uint32, extab []byte) {
	if e.Extab < extabAddr || uint64(e.Extab)+4 > uint64(extabAddr)+uint64(len(extab)) {
		e.Kind = Compact
		e.Err = &FormatError{".ARM.exidx", int64(e.Index*8 + 4), fmt.Sprintf("entry %d points to 0x%08x, outside .ARM.extab (0x%08x, %d bytes)", e.Index, e.Extab, extabAddr, len(extab))}
		return
	}
	off := int(e.Extab - extabAddr)
	word := func(k int) uint32 { return binary.LittleEndian.Uint32(extab[off+4*k:]) }
	words := (len(extab) - off) / 4 // whole words available from the entry on
	w := word(0)
	// streamFrom collects the opcodes: the low three bytes of word first
	// (skipping skip leading bytes), then extra words, most significant
	// byte first.
	streamFrom := func(first, extra int, skip int) {
		if first+extra >= words {
			e.Err = &FormatError{".ARM.extab", int64(off + 4*first), fmt.Sprintf("entry at 0x%08x: %d extra opcode words run past the end of the section", e.Extab, extra)}
			return
		}
		s := make([]byte, 0, 3-skip+4*extra)
		v := word(first)
		for b := 2 - skip; b >= 0; b-- {
			s = append(s, byte(v>>(8*b)))
		}
		for k := 1; k <= extra; k++ {
			v := word(first + k)
			s = append(s, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
		}
		e.stream = s
	}
	if w&0x80000000 != 0 {
		e.Kind = Compact
		idx := int(w >> 24 & 0x0F)
		e.Personality = idx
		if w&0x70000000 != 0 {
			e.Err = &FormatError{".ARM.extab", int64(off), fmt.Sprintf("compact model word 0x%08x has bits 30:28 set", w)}
			return
		}
		switch idx {
		case 0:
			streamFrom(0, 0, 0)
		case 1, 2:
			streamFrom(0, int(w>>16&0xFF), 1)
		default:
			e.Err = &FormatError{".ARM.extab", int64(off), fmt.Sprintf("compact model personality index %d is reserved", idx)}
		}
		return
	}
	e.Kind = Generic
	e.PersonalityAddr = prel31(w, e.Extab)
	if tab.prog != nil {
		if fn, ok := tab.prog.FuncAt(e.PersonalityAddr &^ 1); ok && fn.Start == e.PersonalityAddr&^1 {
			e.PersonalityName = fn.Name
		}
	}
	if !knownPersonalities[e.PersonalityName] {
		return
	}
	if words < 2 {
		e.Err = &FormatError{".ARM.extab", int64(off + 4), fmt.Sprintf("entry at 0x%08x: the opcode word is past the end of the section", e.Extab)}
		return
	}
	streamFrom(1, int(word(1)>>24), 0)
}

// Len returns the number of index entries.
func (tab *Table) Len() int { return len(tab.entries) }

// At returns entry i (0 <= i < Len) in index order.
func (tab *Table) At(i int) Entry { return tab.entries[i] }

// Entries returns all entries in index order. The caller must not modify
// the slice.
func (tab *Table) Entries() []Entry { return tab.entries }

// Lookup returns the entry covering pc (Thumb bit ignored): the last entry
// whose function start is at or below pc (EHABI 6: each entry covers up to
// the next one's start; the last one has no upper bound). With a Program,
// an address in a function that starts above the entry is returned with
// InheritedBy set to that function's start (a merged entry or a missing
// terminator: see Entry.InheritedBy), and an address past the end of the
// entry's own function and in no other function is not covered. Lookup
// returns ErrNoEntry (wrapped) when nothing covers pc; a CantUnwind entry is
// returned as found. Cost: O(log n).
func (tab *Table) Lookup(pc uint32) (Entry, error) {
	pc &^= 1
	i := sort.Search(len(tab.entries), func(i int) bool { return tab.entries[i].FuncStart() > pc }) - 1
	if i < 0 {
		return Entry{}, fmt.Errorf("%w: 0x%08x is below the first entry", ErrNoEntry, pc)
	}
	e := tab.entries[i]
	if tab.prog != nil {
		start := e.FuncStart()
		if fn, ok := tab.prog.FuncAt(pc); ok && fn.Start > start {
			e.InheritedBy = fn.Start
			return e, nil
		}
		if fn, ok := tab.prog.FuncAt(start); ok && fn.End > fn.Start && fn.Start <= start && pc >= fn.End {
			return Entry{}, fmt.Errorf("%w: 0x%08x is past the end of %s (0x%08x-0x%08x), which entry %d covers", ErrNoEntry, pc, funcName(fn), fn.Start, fn.End, e.Index)
		}
	}
	return e, nil
}

func funcName(fn unwinders.Function) string {
	if fn.Name == "" {
		return fmt.Sprintf("the function at 0x%08x", fn.Start)
	}
	return fn.Name
}
