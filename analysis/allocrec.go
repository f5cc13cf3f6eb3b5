package analysis

import (
	"debug/elf"
	"fmt"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump/allocrec"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// allocrecLayout reads the table's entry layout from the firmware's debug
// types: the variable fl_allocrec, a struct {h, entries[]} whose entries
// are {addr, size, ret[]}. nil when the DWARF does not describe it. Read
// once per ELF (indexing the types is linear in the DWARF), then shared
// by every dump of it.
func allocrecLayout(f *elfsym.File) *allocrec.Layout {
	l, _ := f.Memo("analysis.allocrec.layout", func() any { return readAllocrecLayout(f) }).(*allocrec.Layout)
	if l == nil {
		return nil
	}
	c := *l
	return &c
}

func readAllocrecLayout(f *elfsym.File) *allocrec.Layout {
	d := f.DWARF()
	if d == nil {
		return nil
	}
	ts := rtos.NewTypes(d)
	t, err := ts.Variable(allocrec.Symbol)
	if err != nil || t.Kind != "struct" {
		return nil
	}
	ents, ok := t.Member("entries")
	if !ok || ents.Count <= 0 {
		return nil
	}
	at, err := ts.At(ents.Type)
	if err != nil || at.Elem == 0 {
		return nil
	}
	et, err := ts.At(at.Elem)
	if err != nil || et.Kind != "struct" {
		return nil
	}
	addr, ok1 := et.Member("addr")
	size, ok2 := et.Member("size")
	ret, ok3 := et.Member("ret")
	if !ok1 || !ok2 || !ok3 || ret.Count <= 0 {
		return nil
	}
	return &allocrec.Layout{Entries: ents.Offset, EntrySize: et.Size, AddrOff: addr.Offset, SizeOff: size.Offset,
		RetOff: ret.Offset, Depth: ret.Count, Capacity: ents.Count}
}

// ramCheck says whether a block can be heap memory: not in the ELF's
// read-only sections, and in the architecture's SRAM (0x20000000-
// 0x3fffffff) or external RAM (0x60000000-0x9fffffff) regions or in a
// writable section or segment of the ELF (RAM elsewhere, such as a CCM).
func ramCheck(f *elfsym.File) func(addr, size uint32) bool {
	type span struct{ lo, hi uint64 }
	var ro, rw []span
	for _, s := range f.Sections() {
		if !s.Alloc || s.Size == 0 {
			continue
		}
		sp := span{uint64(s.Addr), uint64(s.Addr) + uint64(s.Size)}
		if s.Write {
			rw = append(rw, sp)
		} else {
			ro = append(ro, sp)
		}
	}
	for _, p := range f.Progs() {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 {
			rw = append(rw, span{uint64(p.Vaddr), uint64(p.Vaddr) + uint64(p.Memsz)})
		}
	}
	return func(addr, size uint32) bool {
		lo, hi := uint64(addr), uint64(addr)+uint64(size)
		for _, s := range ro {
			if lo < s.hi && hi > s.lo {
				return false
			}
		}
		if (lo >= 0x20000000 && hi <= 0x40000000) || (lo >= 0x60000000 && hi <= 0xa0000000) {
			return true
		}
		for _, s := range rw {
			if lo >= s.lo && hi <= s.hi {
				return true
			}
		}
		return false
	}
}

// recordedAllocations decodes the recorder's table when the firmware has
// one; problems with the table and disagreements with the heap walk are
// also warnings.
func recordedAllocations(f *elfsym.File, t *unwinders.Target, r *report.Report) *report.AllocationsJSON {
	addr, ok := f.Symbol(allocrec.Symbol)
	if !ok {
		return nil
	}
	var size uint32
	if ref, ok := f.SymbolFor(addr); ok && ref.Start == addr && ref.Name == allocrec.Symbol {
		size = ref.Size
	}
	out := &report.AllocationsJSON{Symbol: allocrec.Symbol, Address: report.Hex(addr), Sites: []report.AllocSiteJSON{}}
	tab, err := allocrec.Read(t.Mem, allocrec.Input{Addr: addr, SymbolSize: size, DWARF: allocrecLayout(f), InRAM: ramCheck(f)})
	if err != nil {
		out.Error = err.Error()
		r.Warnings = append(r.Warnings, "allocation recorder: "+out.Error)
		return out
	}
	out.Version, out.Layout = tab.Version, tab.Layout.Source
	out.Capacity, out.Depth, out.Count = tab.Capacity, tab.Layout.Depth, tab.Count
	out.Dropped, out.UnknownFrees, out.StackScan = tab.Dropped, tab.UnknownFrees, tab.Scan
	out.LiveBytes, out.LiveBlocks = tab.LiveBytes(), len(tab.Entries)
	out.Problems = tab.Problems
	for _, p := range tab.Problems {
		r.Warnings = append(r.Warnings, "allocation recorder: "+p)
	}
	if tab.Dropped > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%s not recorded: the table was full (capacity %d)", report.Plural(int(tab.Dropped), "allocation was", "allocations were"), tab.Capacity))
	}
	warns, notes := tab.Check(r.Heap)
	for _, w := range warns {
		r.Warnings = append(r.Warnings, "allocation recorder: "+w)
	}
	out.Problems = append(out.Problems, warns...)
	out.Notes = append(out.Notes, notes...)
	for _, s := range tab.Sites() {
		js := report.AllocSiteJSON{Bytes: s.Bytes, Blocks: len(s.Entries)}
		var frames []unwinders.Frame
		for i, ret := range s.Entries[0].Returns {
			fr := unwinders.Frame{PC: ret &^ 1, ReturnAddress: true, Kind: unwinders.KindNormal,
				Method: "lr", Confidence: unwinders.ConfidenceHigh}
			if i > 0 {
				fr.Method, fr.Confidence = "stack-scan", unwinders.ConfidenceLow
			}
			frames = append(frames, fr)
		}
		js.Stack, _ = symbolizeFrames(f, frames)
		for i := range js.Stack {
			js.Stack[i].Index = i
		}
		if len(js.Stack) > 0 {
			js.Function, js.File, js.Line = js.Stack[0].Function, js.Stack[0].File, js.Stack[0].Line
		}
		for _, e := range s.Entries {
			bj := report.AllocBlockJSON{Address: report.Hex(e.Addr), Size: e.Size, Returns: []string{}}
			for _, r := range e.Returns {
				bj.Returns = append(bj.Returns, report.Hex(r&^1))
			}
			js.List = append(js.List, bj)
		}
		out.Sites = append(out.Sites, js)
	}
	return out
}
