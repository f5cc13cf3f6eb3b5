package analysis

import (
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
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
	return &Analyzer{elf: elf, name: name, chain: strat.Chain(), maxFrames: opt.MaxFrames, facts: factsOf(elf)}, nil
}

// Analyze decodes one dump. The report is the one Analyze gives.
func (a *Analyzer) Analyze(d *crashdump.Dump) (*Report, error) {
	return analyze(a.elf, a.facts, d, a.name, a.chain, a.maxFrames)
}
