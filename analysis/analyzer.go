package analysis

import (
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/rtos"
	"github.com/faultline-dev/faultline/unwinders"
)

// An Analyzer decodes many dumps against one ELF with one strategy. It
// builds the strategy's chain once, so the tables the unwinders load from
// the ELF (CFI, EHABI, frame-pointer analyses) are built for the first dump
// and reused by the others, where Analyze builds them for every dump.
//
// An Analyzer is safe for concurrent use: elfsym.File is, and every
// unwinder keeps its caches behind a mutex.
type Analyzer struct {
	elf       *elfsym.File
	name      string
	chain     []unwinders.Unwinder
	maxFrames int
	opt       Options
	facts     elfFacts
}

// NewAnalyzer returns an Analyzer for opt. It fails when the strategy is
// unknown or not available, as Analyze does.
func NewAnalyzer(elf *elfsym.File, opt Options) (*Analyzer, error) {
	name := opt.Unwinder
	if name == "" {
		name = "auto"
	}
	strat, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	return &Analyzer{elf: elf, name: name, chain: strat.Chain(), maxFrames: opt.MaxFrames, opt: opt, facts: factsOf(elf)}, nil
}

// Analyze decodes one dump. The report is the one Analyze gives.
func (a *Analyzer) Analyze(d *crashdump.Dump) (*report.Report, error) {
	return analyze(a.elf, a.facts, d, a.name, a.chain, a.maxFrames, a.opt, nil)
}

// AnalyzeScratch is Analyze with memory reused from the previous analysis
// made with s: the report is the same, but it shares s's memory, so it
// must not be used once s is given to another analysis (see Scratch).
func (a *Analyzer) AnalyzeScratch(d *crashdump.Dump, s *Scratch) (*report.Report, error) {
	return analyze(a.elf, a.facts, d, a.name, a.chain, a.maxFrames, a.opt, s)
}

// Scratch is memory that a sequence of analyses reuses from one dump to
// the next (a batch's worker): the frames of the walks (the crash's and
// the RTOS threads'), their report frames and the thread lists, which are
// most of what an analysis of a many-task dump allocates. A report made with a Scratch holds that
// memory; the next analysis with the same Scratch overwrites it. The zero
// value is ready to use; a Scratch is not safe for concurrent use.
type Scratch struct {
	frames   []unwinders.Frame
	jframes  []report.FrameJSON
	threads  []report.ThreadJSON
	kthreads []rtos.Thread      // the kernel's thread list (rtos.Input.Threads)
	crash    []unwinders.Frame  // the crash's own walk
	crashJ   []report.FrameJSON // and its report frames
	report   report.Report      // the report itself
}
