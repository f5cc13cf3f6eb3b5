package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// rawFlags are analyze's flags for a dump assembled from memory images
// and register text (crashdump.Combine).
type rawFlags struct {
	regs string // register text file; makes every DUMP a memory image
	base string // load address of raw binary images
	cpu  string // the CPU, overriding what a dump says
	// maxMemory, when positive, bounds what loading one dump may read
	// into memory (convert --max-memory).
	maxMemory int64
}

func (f *rawFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.regs, "regs", "", "register text (GDB \"info registers\", OpenOCD \"reg\" or J-Link \"regs\" output); every DUMP is then a memory image (raw binary, Intel HEX or S-records) and all of them form one dump")
	cmd.Flags().StringVar(&f.base, "base", "", "load address of raw binary memory images (with --regs)")
	cmd.Flags().StringVar(&f.cpu, "cpu", "", "the crashed CPU (cortex-m0|m0plus|m3|m4|m7|m23|m33...), overriding the dump's")
}

// options checks the flags and returns Combine's options.
func (f *rawFlags) options() (crashdump.CombineOptions, error) {
	var o crashdump.CombineOptions
	if f.cpu != "" && unwinders.ProfileOf(f.cpu) == unwinders.ProfileUnknown {
		return o, usagef("--cpu %q: want a Cortex-M core such as cortex-m0, cortex-m3, cortex-m4, cortex-m7 or cortex-m33", f.cpu)
	}
	o.CPU = f.cpu
	if f.base != "" {
		if f.regs == "" {
			return o, usagef("--base only applies to memory images given with --regs")
		}
		v, err := strconv.ParseUint(f.base, 0, 32)
		if err != nil {
			return o, usagef("--base %q: want a 32-bit address such as 0x20000000", f.base)
		}
		o.Image = crashdump.ImageOptions{Base: uint32(v), HasBase: true}
	}
	return o, nil
}

// loadDumps loads each DUMP, or with --regs combines them all into one.
func (f *rawFlags) loadDumps(paths []string, opt crashdump.CombineOptions, fail func(error)) []*crashdump.Dump {
	if f.regs != "" {
		if f.maxMemory > 0 {
			var total int64
			for _, p := range paths {
				if st, err := os.Stat(p); err == nil {
					total += st.Size()
				}
			}
			if total > f.maxMemory {
				fail(fmt.Errorf("%s: the memory images hold %d bytes, more than --max-memory %s: %w", paths[0], total, crashdump.FormatBytes(f.maxMemory), crashdump.ErrTooLarge))
				return nil
			}
		}
		d, err := crashdump.Combine(f.regs, paths, opt)
		if err != nil {
			fail(err)
			return nil
		}
		return []*crashdump.Dump{d}
	}
	var out []*crashdump.Dump
	for _, p := range paths {
		d, err := crashdump.LoadWith(p, crashdump.LoadOptions{MaxMemory: f.maxMemory})
		if err != nil {
			fail(err)
			continue
		}
		if opt.CPU != "" {
			d.CPU = opt.CPU
		}
		out = append(out, d)
	}
	return out
}

func newAnalyze() *cobra.Command {
	var (
		c   commonFlags
		raw rawFlags
		bf  batchFlags
	)
	cmd := &cobra.Command{
		Use:   "analyze --elf FW.elf|--symbols DIR DUMP|DIR|GLOB...",
		Short: "Decode crash dumps: the fault explained and a symbolized backtrace",
		Long: `Decode crash dumps: the fault explained and a symbolized backtrace.

Each argument is a dump file, a directory (searched recursively for dumps)
or a quoted glob pattern (*, ?, [...], ** for any depth) that faultline
expands itself. Dumps are decoded in parallel (--jobs), the ELF indexed
once; output comes in input order (the matches of a directory or pattern
sorted by path). A dump that cannot be decoded is reported on stderr and
the others go on; the exit status is then 1.`,
		Args: minArgs(1, "one DUMP (a dump file, a directory or a glob)"),
		RunE: func(cmd *cobra.Command, dumps []string) error {
			c.elfOptional = bf.symbols != ""
			switch {
			case bf.symbols != "" && len(c.elfs) > 0:
				return usagef("--symbols DIR replaces --elf: give one of them")
			case bf.symbols != "" && c.format == "html":
				return usagef("--symbols does not make HTML reports yet: use --format text, json or jsonl")
			}
			if err := c.check(); err != nil {
				return err
			}
			if _, err := analysis.Lookup(c.unwinder); err != nil {
				return usageError{err}
			}
			opt, err := raw.options()
			if err != nil {
				return err
			}
			if err := bf.check(c.format); err != nil {
				return err
			}
			return runAnalyze(cmd, &c, &raw, &bf, opt, dumps)
		},
	}
	c.register(cmd, "text", "json", "jsonl", "html")
	raw.register(cmd)
	bf.register(cmd)
	return cmd
}

// batchFlags are analyze's flags for many dumps and for the HTML report.
type batchFlags struct {
	jobs      int
	maxMemory string
	budget    int64 // maxMemory parsed by check
	summary   bool
	output    string
	sourceDir string
	strict    bool
	symbols   string
	locals    bool
	logs      []string
	message   string
	hooks     []string
}

func (b *batchFlags) register(cmd *cobra.Command) {
	cmd.Flags().IntVarP(&b.jobs, "jobs", "j", runtime.GOMAXPROCS(0), "dumps decoded in parallel")
	cmd.Flags().StringVar(&b.maxMemory, "max-memory", "", "memory budget of the whole run (512MiB, 4G, 25%; default a quarter of the machine's RAM): half of it is shared by the dumps decoded at once, -j is lowered so each gets at least 16 MiB, and a dump that needs more than its share is reported as too large; large region files are mapped and cost only the pages read")
	cmd.Flags().BoolVar(&b.summary, "summary", false, "print crash buckets (same exception, causes, faulting function and callers) instead of one report per dump; --format text or json (faultline.summary/1)")
	cmd.Flags().StringVarP(&b.output, "output", "o", "", "--format html: write one page per dump and an index.html into this directory (without it, one dump's page goes to stdout)")
	cmd.Flags().Lookup("elf").Usage = "firmware ELF file (required unless --symbols)"
	cmd.Flags().StringVar(&b.symbols, "symbols", "", "a directory of firmware ELFs (any layout, or a .build-id/xx/rest.debug tree) instead of --elf: each dump is decoded with the ELF whose build ID it carries, else the one it pairs with by content")
	cmd.Flags().BoolVar(&b.locals, "locals", false, "also show each crash frame's local variables from DWARF (frames[].locals); arguments are always shown")
	cmd.Flags().StringArrayVar(&b.logs, "log", nil, "a log buffer the firmware keeps, besides the SEGGER RTT buffers found by themselves: SYMBOL (a NUL-terminated string) or SYMBOL:INDEX_SYMBOL (a ring buffer and its 32-bit write index); repeatable")
	cmd.Flags().StringVar(&b.message, "message", "", "a global char array or char pointer holding the firmware's own crash message (read from the dump, bounded, non-text bytes escaped); used instead of what a reporting function (assert, abort, ...) on the stack was told")
	cmd.Flags().StringArrayVar(&b.hooks, "assert-hook", nil, "a function of the firmware's that is told the file and line of a failed assertion (FreeRTOS's configASSERT hook, an assert_param handler) besides vAssertCalled and assert_failed: its string and integer DWARF arguments become the message; repeatable")
	cmd.Flags().BoolVar(&b.strict, "strict", false, "exit with status 1 when a dump does not pair with the ELF (pairing mismatch: another build's firmware)")
	cmd.Flags().StringVar(&b.sourceDir, "source-dir", "", "--format html: look for the source files the ELF names here first (else next to the ELF and its parent directories)")
}

func (b *batchFlags) check(format string) error {
	if b.jobs < 1 || b.jobs > 1024 {
		return usagef("--jobs %d: want 1..1024", b.jobs)
	}
	b.budget = defaultBudget()
	if b.maxMemory != "" {
		v, err := parseSize(b.maxMemory)
		if err != nil {
			return usagef("--max-memory %v", err)
		}
		if v < minBudget {
			return usagef("--max-memory %s: want at least %s", b.maxMemory, crashdump.FormatBytes(minBudget))
		}
		b.budget = v
	}
	if b.summary && format != "text" && format != "json" {
		return usagef("--summary prints text or json (faultline.summary/1), not %s", format)
	}
	if b.output != "" && format != "html" {
		return usagef("--output only applies to --format html")
	}
	if b.sourceDir != "" && format != "html" {
		return usagef("--source-dir only applies to --format html")
	}
	if b.sourceDir != "" {
		st, err := os.Stat(b.sourceDir)
		switch {
		case err != nil:
			return usagef("--source-dir %s: %s", b.sourceDir, fsReasonText(err))
		case !st.IsDir():
			return usagef("--source-dir %s: not a directory", b.sourceDir)
		}
	}
	return nil
}

// runAnalyze is analyze's body: expand the arguments, decode the dumps in
// parallel and print each result in input order, or the summary.
func runAnalyze(cmd *cobra.Command, c *commonFlags, raw *rawFlags, bf *batchFlags, opt crashdump.CombineOptions, args []string) error {
	stderr := cmd.ErrOrStderr()
	var (
		jobs     []batchJob
		problems []inputError
		multi    bool
	)
	inflight := 1 // dumps held per worker: the one being decoded
	if c.format == "html" {
		inflight = 1 + batchWindowPerWorker // and the pages waiting to be written
	}
	plan := planBudget(bf.budget, bf.jobs, inflight)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(plan.budget))
	if raw.regs != "" {
		// The images and the registers form one dump.
		jobs = []batchJob{{name: raw.regs, load: func(*crashdump.Buffers) (*crashdump.Dump, error) { return crashdump.Combine(raw.regs, args, opt) }}}
	} else if slices.Contains(args, "-") {
		// The dump on standard input: one dump, no region files (a
		// native manifest on stdin must hold its memory inline).
		if len(args) != 1 {
			return usagef("- (the dump on standard input) must be the only DUMP")
		}
		jobs = []batchJob{{name: "<stdin>", load: func(*crashdump.Buffers) (*crashdump.Dump, error) {
			data, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), crashdump.MaxManifestSize+1))
			if err != nil {
				return nil, &crashdump.FormatError{File: "<stdin>", Offset: -1, Msg: "cannot read: " + err.Error(), Err: err}
			}
			d, err := crashdump.Parse(data, "<stdin>", nil)
			if err == nil && opt.CPU != "" {
				d.CPU = opt.CPU
			}
			return d, err
		}}}
	} else {
		in := expandInputs(args)
		problems = in.problems
		multi = in.batch || len(args) > 1
		for _, p := range in.paths {
			jobs = append(jobs, batchJob{name: p, load: func(bufs *crashdump.Buffers) (*crashdump.Dump, error) {
				// The search read the file already: the load decodes those bytes.
				d, err := crashdump.LoadWith(p, crashdump.LoadOptions{MaxMemory: plan.perDump, Data: in.take(p), Buffers: bufs})
				if err == nil && opt.CPU != "" {
					d.CPU = opt.CPU
				}
				return d, err
			}})
		}
	}
	for _, e := range problems {
		var ue usageError
		if errors.As(e.err, &ue) {
			return e.err
		}
	}
	if n := len(jobs); n > 0 && n < plan.jobs {
		// Fewer dumps than workers: the idle workers' shares of the
		// budget go to the dumps there are (the loads read plan when
		// they run).
		plan = planBudget(bf.budget, n, inflight)
	}
	if c.format == "html" && multi && bf.output == "" && !bf.summary {
		return usagef("--format html with several dumps needs -o DIR (one page per dump)")
	}
	var (
		elf     *elfsym.File
		an      dumpAnalyzer
		elfName string
		err     error
	)
	opts := analysis.Options{Unwinder: c.unwinder, MaxFrames: c.maxFrames, Locals: bf.locals, Logs: bf.logs, Message: bf.message, AssertHooks: bf.hooks}
	if bf.symbols != "" {
		store, err := openSymbolStore(bf.symbols, opts)
		if err != nil {
			return err
		}
		defer store.Close()
		an, elfName = store, bf.symbols
	} else {
		var closeAll func()
		elf, closeAll, err = openImages(c.elfs)
		if err != nil {
			return err
		}
		defer closeAll()
		a, err := analysis.NewAnalyzer(elf, opts)
		if err != nil {
			return usageError{err}
		}
		an, elfName = a, filepath.Base(elf.Name())
	}

	var prog *progress
	if len(jobs) > 1 && isTerminal(stderr) {
		prog = newProgress(stderr, len(jobs))
	}
	failed, mismatched := 0, 0
	var sum *bucket.Summarizer
	if bf.summary {
		sum = bucket.NewSummarizer(elfName, c.unwinder, "path")
	}
	for _, e := range problems {
		// A directory or a pattern that gave no dump: an error, but no
		// dump to count in the summary.
		failed++
		prog.printf(stderr, "faultline: %s\n", e.Error())
	}
	out := cmd.OutOrStdout()
	if c.format == "text" {
		color, err := colorMode(cmd, out)
		if err != nil {
			return err
		}
		if color {
			cw := &colorWriter{w: out}
			defer cw.Flush()
			out = cw
		}
	}
	// JSON lines into a file or a pipe: one write per 64 KiB rather than
	// one per dump (flushed before each message on stderr, so the two
	// streams keep their order when they go to the same place).
	var lines *bufio.Writer
	if c.format == "jsonl" && !bf.summary && !isTerminal(out) {
		lines = bufio.NewWriterSize(out, 64<<10)
		out = lines
		defer lines.Flush() // the error paths; the normal one checks it below
	}
	flushLines := func() {
		if lines != nil {
			lines.Flush()
		}
	}
	w := newReportWriter(out, c.format, multi, bf, elf, c.elf)
	if bf.summary {
		w = nil
	}
	if w != nil {
		if err := w.begin(jobs); err != nil {
			return err
		}
	}
	var tick func()
	if prog != nil {
		tick = prog.tick
	}
	keepDump := c.format == "html" // the page draws the stack from the dump
	// Every output but the summary and the HTML pages is done with a
	// report once written: the batch may reuse its memory.
	reuse := !keepDump && sum == nil
	err = runBatch(an, jobs, plan.jobs, keepDump, reuse, tick, func(r batchResult) error {
		defer r.dump.Close()
		if r.err != nil {
			failed++
			if prog != nil {
				prog.failed.Add(1)
			}
			flushLines()
			prog.printf(stderr, "faultline: %s\n", r.err.Error())
			if sum != nil {
				sum.AddError(r.job.name, r.err)
			}
			if w != nil {
				w.failed(r)
			}
			return nil
		}
		if p := r.report.Pairing; p != nil && p.Verdict == report.PairMismatch {
			mismatched++
			flushLines()
			prog.printf(stderr, "faultline: warning: %s: %s\n", r.job.name, analysis.MismatchWarning(r.report.ELFInfo.Path, *p))
		}
		if sum != nil {
			sum.Add(r.report)
			return nil
		}
		return w.report(r)
	})
	prog.finish()
	if err != nil {
		return err
	}
	switch {
	case sum != nil:
		s := sum.Summary()
		if c.format == "json" {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(s); err != nil {
				return err
			}
		} else if err := textout.WriteSummary(out, s); err != nil {
			return err
		}
	case w != nil:
		if err := w.end(); err != nil {
			return err
		}
	}
	if lines != nil {
		if err := lines.Flush(); err != nil {
			return err
		}
	}
	if failed > 0 || (bf.strict && mismatched > 0) {
		return silentError{ExitInput}
	}
	return nil
}
