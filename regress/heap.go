package regress

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu/heap"
)

// heapProbe returns the heap tracker a scenario with expect.heap runs with.
func heapProbe(h *HeapExpect) *heap.Tracker {
	funcs := heap.KnownFuncs()
	if h.Alloc != "" {
		funcs = heap.CustomFuncs(h.Alloc, h.Free, 0)
	}
	return heap.New(heap.Options{Funcs: funcs})
}

// siteFunctions names every function (inlined levels included) of an
// allocation stack.
func siteFunctions(f *elfsym.File, s heap.Stack) []string {
	var out []string
	for _, pc := range s.PCs {
		if pc == 0 {
			continue
		}
		locs, _ := f.Symbolize(pc - 1)
		for _, l := range locs {
			out = append(out, l.Function)
			if l.Symbol != "" && l.Symbol != l.Function {
				out = append(out, l.Symbol)
			}
		}
	}
	return out
}

// compareHeap checks the heap at the end of the run against want.
func compareHeap(want *HeapExpect, rep *heap.Report, f *elfsym.File) []Problem {
	var out []Problem
	describe := func(n int) string {
		var b strings.Builder
		for i, s := range rep.Sites {
			if i == n {
				fmt.Fprintf(&b, "  ... %d more sites\n", len(rep.Sites)-n)
				break
			}
			fn := siteFunctions(f, s.Stack)
			fmt.Fprintf(&b, "  %d bytes in %d blocks allocated from %s\n", s.Bytes, s.Blocks, strings.Join(first(fn, 4), " < "))
		}
		return b.String()
	}
	if want.LeakedBytes != nil && rep.LiveBytes > *want.LeakedBytes {
		out = append(out, Problem{Kind: "heap", Summary: fmt.Sprintf("heap: %d bytes still allocated at the end (in %d blocks), expected at most %d", rep.LiveBytes, rep.LiveBlocks, *want.LeakedBytes), Detail: describe(8)})
	}
	if want.LeakedBlocks != nil && rep.LiveBlocks > *want.LeakedBlocks {
		out = append(out, Problem{Kind: "heap", Summary: fmt.Sprintf("heap: %d blocks still allocated at the end, expected at most %d", rep.LiveBlocks, *want.LeakedBlocks), Detail: describe(8)})
	}
	maxErr := 0
	if want.Errors != nil {
		maxErr = *want.Errors
	}
	if len(rep.Errors) > maxErr {
		var b strings.Builder
		for i, e := range rep.Errors {
			if i == 8 {
				break
			}
			fmt.Fprintf(&b, "  %s: %s\n", e.Kind, e.Detail)
		}
		out = append(out, Problem{Kind: "heap", Summary: fmt.Sprintf("heap: %d heap errors (first: %s), expected at most %d", len(rep.Errors), rep.Errors[0].Kind, maxErr), Detail: b.String()})
	}
	for _, st := range want.Sites {
		var bytes uint64
		for _, s := range rep.Sites {
			for _, fn := range siteFunctions(f, s.Stack) {
				if fn == st.Function {
					bytes += s.Bytes
					break
				}
			}
		}
		if bytes > st.MaxBytes {
			out = append(out, Problem{Kind: "heap", Summary: fmt.Sprintf("heap: %d bytes allocated from %s still live at the end, expected at most %d", bytes, st.Function, st.MaxBytes), Detail: describe(8)})
		}
	}
	return out
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
