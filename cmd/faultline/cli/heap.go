package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/heap"
	"github.com/faultline-dev/faultline/emu/uc"
)

// maxHeapHeader bounds --header: allocators keep a few words of
// bookkeeping before a block (newlib and FreeRTOS heap_4 8 bytes, TLSF 8-16,
// debug allocators with guard words a few dozen).
const maxHeapHeader = 256

type heapFlags struct {
	emulateFlags
	format string
	alloc  string
	free   string
	header uint32
}

func newHeap() *cobra.Command {
	var f heapFlags
	cmd := &cobra.Command{
		Use:   "heap --elf FW.elf [emulate flags]",
		Short: "Run firmware in the emulator with the allocator hooked: leaks by call site, double frees, uses after free, overflows",
		Long: `heap runs the firmware in the Unicorn emulator like emulate (same
--set, --call, --irq, --max-insns...), with its allocator hooked: newlib
(malloc, free, realloc, calloc, memalign and their _r forms), FreeRTOS
(pvPortMalloc, vPortFree), C++ operator new and delete (every mangled
form), or the pair named with --alloc and --free. Each live block keeps its
size and the call stack that allocated it (the emulator's shadow call
stack). When the run ends (the firmware exits, faults, or reaches a bound)
it reports the live blocks grouped by allocation call stack, most bytes
first, the peak and when it was reached, and the errors seen on the way,
each with its call stack and where the block was allocated and freed:
double free, free of a pointer never allocated, a read or write into a
freed block (use after free), a write past a block's end into the
allocator's bookkeeping or padding (overflow).

Exit status 0 whatever the run found (use regress to fail on leaks).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHeap(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.elf, "elf", "", "firmware ELF file (required)")
	fl.StringVar(&f.cpu, "cpu", "", "cortex-m0|m0plus|m3|m4|m7|m33 (default: from the ELF attributes, else m4)")
	fl.StringArrayVar(&f.sets, "set", nil, "SYMBOL=VALUE: write a global before running (repeatable)")
	fl.StringVar(&f.call, "call", "", "start at FUNCTION instead of the reset vector")
	fl.Uint64Var(&f.maxInsns, "max-insns", emu.DefaultMaxInsns, "stop after exactly this many guest instructions")
	fl.DurationVar(&f.timeout, "timeout", emu.DefaultTimeout, "stop after this much wall-clock time")
	fl.StringArrayVar(&f.irqs, "irq", nil, "N@INSN: raise exception N after INSN instructions (repeatable)")
	fl.StringArrayVar(&f.maps, "map", nil, "ADDR:SIZE[:rw|rx|zero]: map extra memory (repeatable)")
	fl.BoolVar(&f.imprecise, "imprecise-stores", false, "make a store to unmapped memory an imprecise bus fault")
	fl.StringVar(&f.format, "format", "text", "output format: text|json|html")
	fl.StringVar(&f.alloc, "alloc", "", "hook this function as the allocator, FUNC(size) -> pointer (with --free)")
	fl.StringVar(&f.free, "free", "", "hook this function as the deallocator, FUNC(pointer) (with --alloc)")
	fl.Uint32Var(&f.header, "header", 0, "with --alloc/--free: bytes of allocator bookkeeping just before each block (checked for overflows)")
	return cmd
}

// HeapRun is the outcome of a heap run: the report and how the run ended.
type HeapRun struct {
	Report *heap.Report
	Ended  string      // how the run ended, in words
	Fault  bool        // it ended in a fault
	Result *emu.Result // the fault's state (nil without a fault)
	Insns  uint64
}

// RunHeap runs cfg with the allocator hooked.
func RunHeap(cmd *cobra.Command, cfg emu.Config, funcs []heap.Func) (*HeapRun, error) {
	t := heap.New(heap.Options{Funcs: funcs})
	cfg.Probe = t
	res, err := emu.Run(cmd.Context(), cfg)
	run := &HeapRun{}
	var nf *emu.NoFaultError
	switch {
	case errors.Is(err, uc.ErrUnavailable):
		return nil, fmt.Errorf("heap: %w", err)
	case errors.Is(err, emu.ErrConfig):
		return nil, usageError{err}
	case errors.As(err, &nf):
		run.Ended, run.Insns = nf.Reason, nf.Insns
	case err != nil:
		return nil, err
	default:
		run.Fault, run.Result, run.Insns = true, res, res.Insns
		run.Ended = fmt.Sprintf("%s at pc 0x%08x: %s", excName(res.Exception), res.Cause.PC, res.Cause.Detail)
	}
	rep, err := t.Report()
	if err != nil {
		return nil, fmt.Errorf("heap: %w", err)
	}
	run.Report = rep
	return run, nil
}

func runHeap(cmd *cobra.Command, f *heapFlags) error {
	if f.elf == "" {
		return usagef("--elf is required")
	}
	switch f.format {
	case "text", "json", "html":
	default:
		return usagef("--format %q: want one of text, json, html", f.format)
	}
	if (f.alloc == "") != (f.free == "") {
		return usagef("--alloc and --free go together")
	}
	if f.alloc != "" && f.alloc == f.free {
		return usagef("--alloc and --free name the same function %q: one function cannot be both the allocator and the deallocator", f.alloc)
	}
	if cmd.Flags().Changed("header") {
		if f.alloc == "" {
			return usagef("--header goes with --alloc and --free (the known allocators' bookkeeping sizes are built in)")
		}
		if f.header > maxHeapHeader {
			return usagef("--header %d: want 0 to %d (the bytes of bookkeeping just before each block)", f.header, maxHeapHeader)
		}
	}
	cfg, err := f.emuConfig()
	if err != nil {
		return err
	}
	funcs := heap.KnownFuncs()
	if f.alloc != "" {
		funcs = heap.CustomFuncs(f.alloc, f.free, f.header)
	}
	run, err := RunHeap(cmd, cfg, funcs)
	if err != nil {
		return err
	}
	sym, err := elfsym.Open(f.elf)
	if err != nil {
		return err
	}
	defer sym.Close()
	doc := HeapJSON(run, sym, f.elf)
	w := cmd.OutOrStdout()
	switch f.format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	case "html":
		return writeHeapHTML(w, doc)
	}
	writeHeapText(w, doc)
	return nil
}

// HeapFrame is one frame of a heap call stack in faultline.heap/1.
type HeapFrame struct {
	PC       string `json:"pc"`
	Function string `json:"function,omitempty"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Inlined  bool   `json:"inlined,omitempty"`
}

// HeapSite is a group of live blocks with one allocation stack.
type HeapSite struct {
	Bytes  uint64      `json:"bytes"`
	Blocks int         `json:"blocks"`
	Via    string      `json:"via"`
	Addrs  []string    `json:"addresses"`
	Frames []HeapFrame `json:"frames"`
	// Reach: "definitely-lost", "indirectly-lost", "possibly-lost" or
	// "still-reachable" (a site's blocks of different reachability are
	// separate sites); absent when not known.
	Reach string `json:"reachability,omitempty"`
}

// HeapLeak is the live bytes and blocks of one reachability class.
type HeapLeak struct {
	Bytes  uint64 `json:"bytes"`
	Blocks int    `json:"blocks"`
}

// HeapLeakSummary sums the live blocks by reachability, as valgrind's
// leak summary.
type HeapLeakSummary struct {
	DefinitelyLost HeapLeak `json:"definitely_lost"`
	IndirectlyLost HeapLeak `json:"indirectly_lost"`
	PossiblyLost   HeapLeak `json:"possibly_lost"`
	StillReachable HeapLeak `json:"still_reachable"`
}

// HeapError is a heap error in faultline.heap/1.
type HeapError struct {
	Kind        string      `json:"kind"`
	Address     string      `json:"address"`
	Size        int         `json:"size,omitempty"`
	Write       bool        `json:"write,omitempty"`
	Detail      string      `json:"detail"`
	Insn        uint64      `json:"insn"`
	Frames      []HeapFrame `json:"frames"`
	Block       string      `json:"block,omitempty"`
	BlockSize   uint32      `json:"block_size,omitempty"`
	AllocatedAt []HeapFrame `json:"allocated_at,omitempty"`
	FreedAt     []HeapFrame `json:"freed_at,omitempty"`
}

// HeapDoc is a faultline.heap/1 document.
type HeapDoc struct {
	Schema     string      `json:"schema"`
	ELF        string      `json:"elf"`
	Allocator  string      `json:"allocator"`
	Hooked     []string    `json:"hooked"`
	Ended      string      `json:"ended"`
	Fault      bool        `json:"fault"`
	Insns      uint64      `json:"insns"`
	PeakBytes  uint64      `json:"peak_bytes"`
	PeakInsn   uint64      `json:"peak_insn"`
	PeakAt     []HeapFrame `json:"peak_at,omitempty"`
	LiveBytes  uint64      `json:"live_bytes"`
	LiveBlocks int         `json:"live_blocks"`
	Allocs     uint64      `json:"allocations"`
	Frees      uint64      `json:"frees"`
	Sites      []HeapSite  `json:"sites"`
	Errors     []HeapError `json:"errors"`
	Dropped    int         `json:"errors_dropped,omitempty"`
	Pending    []string    `json:"pending,omitempty"`
	// Leaks is absent when nothing was live at the end, or when the
	// memory could not be scanned (ReachNote says why).
	Leaks     *HeapLeakSummary `json:"leak_summary,omitempty"`
	ReachNote string           `json:"reachability_note,omitempty"`
}

// HeapJSON turns a run into faultline.heap/1, symbolized with sym.
func HeapJSON(run *HeapRun, sym *elfsym.File, elfPath string) *HeapDoc {
	r := run.Report
	d := &HeapDoc{Schema: "faultline.heap/1", ELF: elfPath, Allocator: r.Allocator, Hooked: r.Hooked,
		Ended: run.Ended, Fault: run.Fault, Insns: run.Insns,
		PeakBytes: r.PeakBytes, PeakInsn: r.PeakInsn, LiveBytes: r.LiveBytes, LiveBlocks: r.LiveBlocks,
		Allocs: r.Allocs, Frees: r.Frees, Sites: []HeapSite{}, Errors: []HeapError{}, Dropped: r.ErrorsDropped}
	if r.PeakBlock != nil {
		d.PeakAt = heapFrames(sym, r.PeakBlock.Alloc)
	}
	for _, s := range r.Sites {
		hs := HeapSite{Bytes: s.Bytes, Blocks: s.Blocks, Via: s.Via, Frames: heapFrames(sym, s.Stack), Reach: s.Reach}
		for _, a := range s.Addrs {
			hs.Addrs = append(hs.Addrs, fmt.Sprintf("0x%08x", a))
		}
		d.Sites = append(d.Sites, hs)
	}
	for _, e := range r.Errors {
		he := HeapError{Kind: e.Kind, Address: fmt.Sprintf("0x%08x", e.Addr), Size: e.Size, Write: e.Write,
			Detail: e.Detail, Insn: e.Insn, Frames: heapFrames(sym, e.Stack)}
		if b := e.Block; b != nil {
			he.Block = fmt.Sprintf("0x%08x", b.Addr)
			he.BlockSize = b.Size
			he.AllocatedAt = heapFrames(sym, b.Alloc)
			if b.FreedBy != "" {
				he.FreedAt = heapFrames(sym, b.Free)
			}
		}
		d.Errors = append(d.Errors, he)
	}
	for _, p := range r.Pending {
		d.Pending = append(d.Pending, fmt.Sprintf("%s(ptr 0x%08x, size %d) had not returned", p.Func, p.Ptr, p.Size))
	}
	d.ReachNote = r.ReachNote
	if r.Leaks != nil && len(r.Live) > 0 {
		l := &HeapLeakSummary{}
		for k, s := range r.Leaks {
			v := HeapLeak{Bytes: s.Bytes, Blocks: s.Blocks}
			switch k {
			case heap.DefinitelyLost:
				l.DefinitelyLost = v
			case heap.IndirectlyLost:
				l.IndirectlyLost = v
			case heap.PossiblyLost:
				l.PossiblyLost = v
			case heap.StillReachable:
				l.StillReachable = v
			}
		}
		d.Leaks = l
	}
	return d
}

// heapFrames symbolizes a stack: return addresses are looked up at the
// call (pc-1), an exact first frame at its own address; each inlined level
// is a frame of its own, innermost first.
func heapFrames(sym *elfsym.File, s heap.Stack) []HeapFrame {
	out := []HeapFrame{}
	for i, pc := range s.PCs {
		look := pc
		if (i > 0 || !s.Exact) && pc > 0 {
			look = pc - 1
		}
		locs, _ := sym.Symbolize(look)
		if len(locs) == 0 {
			out = append(out, HeapFrame{PC: fmt.Sprintf("0x%08x", pc)})
			continue
		}
		for _, l := range locs {
			out = append(out, HeapFrame{PC: fmt.Sprintf("0x%08x", pc), Function: l.Function, File: l.File, Line: l.Line, Inlined: l.Inlined})
		}
	}
	return out
}

func frameText(f HeapFrame) string {
	fn := f.Function
	if fn == "" {
		fn = "??"
	}
	s := fmt.Sprintf("%s in %s", f.PC, fn)
	if f.File != "" {
		s += fmt.Sprintf(" at %s:%d", f.File, f.Line)
	}
	if f.Inlined {
		s += " (inlined)"
	}
	return s
}

func writeFrames(b *strings.Builder, indent string, fr []HeapFrame) {
	for _, f := range fr {
		fmt.Fprintf(b, "%s%s\n", indent, frameText(f))
	}
}

func writeHeapText(w io.Writer, d *HeapDoc) {
	var b strings.Builder
	fmt.Fprintf(&b, "Heap of %s (allocator: %s)\n", d.ELF, d.Allocator)
	fmt.Fprintf(&b, "Run ended after %s: %s\n", plural(int(min(d.Insns, 1<<62)), "instruction"), d.Ended)
	fmt.Fprintf(&b, "%s, %s; peak %d bytes at instruction %d", plural(int(min(d.Allocs, 1<<62)), "allocation"), plural(int(min(d.Frees, 1<<62)), "free"), d.PeakBytes, d.PeakInsn)
	if len(d.PeakAt) > 0 {
		fmt.Fprintf(&b, " (allocation from %s)", frameText(d.PeakAt[0]))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "\nErrors: %d\n", len(d.Errors))
	for i, e := range d.Errors {
		fmt.Fprintf(&b, "\n#%d %s at instruction %d: %s\n", i+1, e.Kind, e.Insn, e.Detail)
		writeFrames(&b, "    ", e.Frames)
		if len(e.AllocatedAt) > 0 {
			fmt.Fprintf(&b, "  block %s (%d bytes) allocated at:\n", e.Block, e.BlockSize)
			writeFrames(&b, "    ", e.AllocatedAt)
		}
		if len(e.FreedAt) > 0 {
			b.WriteString("  freed at:\n")
			writeFrames(&b, "    ", e.FreedAt)
		}
	}
	if d.Dropped > 0 {
		fmt.Fprintf(&b, "\n(%s more not kept)\n", plural(d.Dropped, "error"))
	}
	fmt.Fprintf(&b, "\nLive at the end: %d bytes in %d blocks, from %d allocation sites\n", d.LiveBytes, d.LiveBlocks, len(d.Sites))
	if l := d.Leaks; l != nil {
		sum := func(h HeapLeak) string { return fmt.Sprintf("%d bytes in %s", h.Bytes, plural(h.Blocks, "block")) }
		fmt.Fprintf(&b, "  definitely lost %s, indirectly lost %s, possibly lost %s, still reachable %s (by the pointers in the registers and memory at the end)\n",
			sum(l.DefinitelyLost), sum(l.IndirectlyLost), sum(l.PossiblyLost), sum(l.StillReachable))
	} else if d.ReachNote != "" {
		fmt.Fprintf(&b, "  reachability unknown: %s\n", d.ReachNote)
	}
	for i, s := range d.Sites {
		reach := ""
		if s.Reach != "" {
			reach = ", " + strings.ReplaceAll(s.Reach, "-", " ")
		}
		fmt.Fprintf(&b, "\n#%d %d bytes in %s (%s%s) at %s\n", i+1, s.Bytes, plural(s.Blocks, "block"), s.Via, reach, strings.Join(s.Addrs, " "))
		writeFrames(&b, "    ", s.Frames)
	}
	for _, p := range d.Pending {
		fmt.Fprintf(&b, "\nNote: %s when the run ended.\n", p)
	}
	io.WriteString(w, b.String())
}

func writeHeapHTML(w io.Writer, d *HeapDoc) error {
	return heapPage.Execute(w, struct {
		*HeapDoc
		CSS template.CSS
	}{d, template.CSS(htmlout.PageCSS())})
}

var heapPage = template.Must(template.New("heap").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>heap: {{.ELF}}</title>
<style>{{.CSS}}</style>
</head>
<body>
<header class="top"><div class="in">
<h1><span class="exc">Heap</span> {{.LiveBytes}} bytes live in {{.LiveBlocks}} blocks · {{len .Errors}} errors</h1>
<div class="where">{{.Ended}}</div>
<div class="meta"><b>firmware</b> {{.ELF}} &nbsp;·&nbsp; <b>allocator</b> {{.Allocator}} &nbsp;·&nbsp; <b>instructions</b> {{.Insns}} &nbsp;·&nbsp; <b>peak</b> {{.PeakBytes}} bytes at instruction {{.PeakInsn}} &nbsp;·&nbsp; <b>allocations</b> {{.Allocs}} &nbsp;·&nbsp; <b>frees</b> {{.Frees}}</div>
</div></header>
<main>
<section class="fault">
<h2>Errors <small>in the order they happened</small></h2>
{{if .Errors}}<table class="bt">
<tr><th>#</th><th>kind</th><th>what</th><th>where</th></tr>
{{range $i, $e := .Errors}}<tr class="faulting"><td class="idx">#{{$i}}</td><td><span class="badge">{{$e.Kind}}</span></td><td>{{$e.Detail}}</td><td class="loc">{{range $e.Frames}}<div>{{.PC}} {{.Function}}{{if .File}} <i>{{.File}}:{{.Line}}</i>{{end}}</div>{{end}}</td></tr>
{{if $e.AllocatedAt}}<tr><td></td><td>allocated</td><td>block {{$e.Block}}, {{$e.BlockSize}} bytes</td><td class="loc">{{range $e.AllocatedAt}}<div>{{.PC}} {{.Function}}{{if .File}} <i>{{.File}}:{{.Line}}</i>{{end}}</div>{{end}}</td></tr>{{end}}
{{if $e.FreedAt}}<tr><td></td><td>freed</td><td></td><td class="loc">{{range $e.FreedAt}}<div>{{.PC}} {{.Function}}{{if .File}} <i>{{.File}}:{{.Line}}</i>{{end}}</div>{{end}}</td></tr>{{end}}
{{end}}</table>{{else}}<p>No heap error was seen.</p>{{end}}
</section>
<section>
<h2>Live blocks by allocation site <small>most bytes first</small></h2>
{{if .Sites}}<table class="bt">
<tr><th>bytes</th><th>blocks</th><th>via</th><th>allocated at</th></tr>
{{range .Sites}}<tr><td class="pc">{{.Bytes}}</td><td>{{.Blocks}}</td><td class="fn">{{.Via}}</td><td class="loc">{{range .Frames}}<div>{{.PC}} {{.Function}}{{if .File}} <i>{{.File}}:{{.Line}}</i>{{end}}</div>{{end}}</td></tr>
{{end}}</table>{{else}}<p>Nothing is live: no leak.</p>{{end}}
</section>
</main>
</body>
</html>
`))
