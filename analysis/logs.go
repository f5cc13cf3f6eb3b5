package analysis

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/logs"
	"github.com/faultline-dev/faultline/unwinders"
)

// findLogs collects the logs left in the dump's RAM: every SEGGER RTT
// control block's up buffers, Zephyr's log buffer, and the --log symbols. Problems go to
// warnings.
func findLogs(elf *elfsym.File, t *unwinders.Target, d *crashdump.Dump, syms []string, threads []report.ThreadJSON, warnings []string) ([]logs.Log, []string) {
	if t == nil || t.Mem == nil {
		return nil, warnings
	}
	out, warns := logs.FindRTT(t.Mem, rttRanges(elf, d))
	warnings = append(warnings, warns...)
	// Zephyr's log thread prefix names threads as the kernel's list does.
	names := map[string]string{}
	for _, th := range threads {
		names[th.ID] = th.Name
	}
	threadName := func(id uint32) (string, bool) {
		n, ok := names[fmt.Sprintf("0x%08x", id)]
		return n, ok
	}
	if zl, ok, err := logs.FindZephyr(elf, t.Mem, threadName); err != nil {
		warnings = append(warnings, err.Error())
	} else if ok {
		out = append(out, zl)
	}
	for _, spec := range syms {
		l, err := symbolLog(elf, t.Mem, spec)
		if err != nil {
			warnings = append(warnings, "--log "+spec+": "+err.Error())
			continue
		}
		out = append(out, l)
	}
	return out, warnings
}

// symbolLog reads --log SYMBOL or SYMBOL:INDEX_SYMBOL.
func symbolLog(elf *elfsym.File, mem unwinders.Memory, spec string) (logs.Log, error) {
	if elf == nil {
		return logs.Log{}, fmt.Errorf("needs the ELF's symbols")
	}
	name, idxName, ring := strings.Cut(spec, ":")
	addr, ok := elf.Symbol(name)
	if !ok {
		return logs.Log{}, fmt.Errorf("no symbol %q in %s", name, elf.Name())
	}
	var size uint32
	if ref, ok := elf.SymbolFor(addr); ok && ref.Start == addr && ref.Name == name {
		size = ref.Size
	}
	var idx uint32
	if ring {
		ia, ok := elf.Symbol(idxName)
		if !ok {
			return logs.Log{}, fmt.Errorf("no symbol %q in %s", idxName, elf.Name())
		}
		v, err := unwinders.ReadU32(mem, ia)
		if err != nil {
			return logs.Log{}, fmt.Errorf("the write index %s is not in the dump: %v", idxName, err)
		}
		idx = v
		if size == 0 {
			return logs.Log{}, fmt.Errorf("%s has no size: a ring buffer needs one", name)
		}
	}
	return logs.Symbol(mem, name, addr, size, idx, ring)
}

// rttRanges is where a control block may be: the ELF's writable sections
// (it is a static variable), then the first MiB of each of the dump's
// memory regions (a dump may map gigabytes; the scan must not read them
// all).
func rttRanges(elf *elfsym.File, d *crashdump.Dump) []unwinders.Range {
	var out []unwinders.Range
	if elf != nil {
		// Only the part of each section the dump holds.
		for _, s := range elf.Sections() {
			if !s.Alloc || !s.Write || s.Exec || s.Size == 0 {
				continue
			}
			lo, hi := uint64(s.Addr), uint64(s.Addr)+uint64(s.Size)
			for _, r := range d.Memory {
				rlo, rhi := uint64(r.Addr), uint64(r.Addr)+uint64(len(r.Data))
				if l, h := max(lo, rlo), min(hi, rhi, 0xffffffff); l < h {
					out = append(out, unwinders.Range{Lo: uint32(l), Hi: uint32(h)})
				}
			}
		}
	}
	for _, r := range d.Memory {
		h := min(uint64(r.Addr)+uint64(min(len(r.Data), 1<<20)), 0xffffffff)
		out = append(out, unwinders.Range{Lo: r.Addr, Hi: uint32(h)})
	}
	return out
}
