package matrix

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/scenario"
	"github.com/faultline-dev/faultline/unwinders"
)

// Runner runs matrix cases. The zero Runner uses GOMAXPROCS workers, 64
// frames and the emulator's default bounds.
type Runner struct {
	// Jobs is the number of cases run at once (0: GOMAXPROCS).
	Jobs int
	// MaxFrames bounds every walk (0: 64).
	MaxFrames int
	// MaxInsns and Timeout bound each emulator run whose trigger sets no
	// bound of its own (0: emu.DefaultMaxInsns, emu.DefaultTimeout).
	MaxInsns uint64
	Timeout  time.Duration
	// Done, when set, is called after each case, one call at a time.
	Done func(*CaseResult)
}

// elfState is one ELF opened and indexed once, with one Analyzer per
// strategy, shared by every worker: elfsym.File and analysis.Analyzer are
// safe for concurrent use.
type elfState struct {
	path      string
	once      sync.Once
	elf       *elfsym.File
	analyzers []*analysis.Analyzer
	err       error
}

func (s *elfState) open(strategies []analysis.Strategy, maxFrames int) error {
	s.once.Do(func() {
		elf, err := elfsym.Open(s.path)
		if err != nil {
			s.err = fmt.Errorf("cannot open the ELF: %w", err)
			return
		}
		s.elf = elf
		for _, st := range strategies {
			a, err := analysis.NewAnalyzer(elf, analysis.Options{Unwinder: st.Name, MaxFrames: maxFrames})
			if err != nil {
				s.err = fmt.Errorf("strategy %s: %w", st.Name, err)
				return
			}
			s.analyzers = append(s.analyzers, a)
		}
	})
	return s.err
}

// Strategies returns the strategies a matrix runs: every available one, in
// analysis.Strategies order (auto first).
func Strategies() []analysis.Strategy {
	var out []analysis.Strategy
	for _, s := range analysis.Strategies() {
		if s.Available {
			out = append(out, s)
		}
	}
	return out
}

// StrategyNames returns the names of Strategies.
func StrategyNames() []string {
	var n []string
	for _, s := range Strategies() {
		n = append(n, s.Name)
	}
	return n
}

// Run runs the cases and returns the report, cases in the order given
// whatever the number of workers. Each ELF is opened and indexed once. A
// case that cannot run is reported in its CaseResult.Error; Run itself
// does not fail. When ctx ends, the cases not yet run are reported as
// cancelled.
func (rn *Runner) Run(ctx context.Context, cases []Case) *Report {
	start := time.Now()
	strategies := Strategies()
	maxFrames := rn.MaxFrames
	if maxFrames <= 0 {
		maxFrames = 64
	}
	rep := &Report{Schema: Schema, Strategies: StrategyNames(), Cases: make([]CaseResult, len(cases))}
	elfs := map[string]*elfState{}
	for _, c := range cases {
		if !slices.Contains(rep.Builds, c.Build.Name) {
			rep.Builds = append(rep.Builds, c.Build.Name)
		}
		if elfs[c.ELF] == nil {
			elfs[c.ELF] = &elfState{path: c.ELF}
		}
	}
	workers := rn.Jobs
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(len(cases), 1))
	todo := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				rep.Cases[i] = rn.runCase(ctx, cases[i], elfs[cases[i].ELF], strategies, maxFrames)
				if rn.Done != nil {
					mu.Lock()
					rn.Done(&rep.Cases[i])
					mu.Unlock()
				}
			}
		}()
	}
	for i := range cases {
		todo <- i
	}
	close(todo)
	wg.Wait()
	for _, s := range elfs {
		s.elf.Close()
	}
	rep.Elapsed = time.Since(start)
	return rep
}

// runCase emulates one case, checks it against the scenario's Expect and
// scores every strategy on the dump.
func (rn *Runner) runCase(ctx context.Context, c Case, es *elfState, strategies []analysis.Strategy, maxFrames int) (cr CaseResult) {
	start := time.Now()
	cr = CaseResult{Build: c.Build.Name, Scenario: c.Scenario.Name, Results: map[string]Result{}}
	t := c.Scenario.Trigger
	t.CPU = c.Build.CPU
	cr.Reproduce = Reproduce(c.ELF, t)
	invalid := func(err error) {
		cr.Err, cr.Error, cr.Results = err, err.Error(), map[string]Result{}
	}
	defer func() {
		if p := recover(); p != nil {
			invalid(fmt.Errorf("internal error: %v", p))
		}
		cr.Duration = time.Since(start)
	}()
	if err := ctx.Err(); err != nil {
		invalid(fmt.Errorf("not run: %w", err))
		return cr
	}
	if err := es.open(strategies, maxFrames); err != nil {
		invalid(err)
		return cr
	}
	if t.MaxInsns == 0 && rn.MaxInsns != 0 {
		t.MaxInsns = rn.MaxInsns
	}
	cfg, err := t.Config(c.ELF)
	if err != nil {
		invalid(fmt.Errorf("trigger: %w", err))
		return cr
	}
	if t.Timeout == "" && rn.Timeout > 0 {
		cfg.Timeout = rn.Timeout
	}
	res, err := emu.Run(ctx, cfg)
	var nf *emu.NoFaultError
	switch {
	case errors.As(err, &nf):
		invalid(err)
		cr.Error = "did not fault: " + nf.Detail()
		return cr
	case err != nil:
		invalid(err)
		return cr
	}
	cr.Insns = res.Insns
	d := scenario.Dump(res)
	d.Path = c.Name()
	if d.Truth == nil || len(d.Truth.Frames) == 0 {
		invalid(errors.New("the emulator gave no truth (shadow call stack)"))
		return cr
	}
	cr.Truth = score.TruthNames(d.Truth)
	if cr.Truth == nil {
		cr.Truth = []string{}
	}
	if err := CheckExpect(c.Scenario.Expect, d); err != nil {
		invalid(err)
		return cr
	}
	for i, s := range strategies {
		var none []string
		cr.Results[s.Name], none = scoreStrategy(es.analyzers[i], d)
		if i == 0 {
			cr.ThreadsWithoutTruth = none
		}
	}
	return cr
}

// scoreStrategy runs one strategy on the dump and scores it against the truth.
// A panic in a strategy is that strategy's failure, not the run's.
// It also returns the RTOS threads the truth has no stack for.
func scoreStrategy(a *analysis.Analyzer, d *crashdump.Dump) (res Result, noTruth []string) {
	defer func() {
		if p := recover(); p != nil {
			res = Result{Error: fmt.Sprintf("internal error: %v", p), Frames: []string{}}
		}
	}()
	r, err := a.Analyze(d)
	if err != nil {
		return Result{Error: err.Error(), Frames: []string{}}, nil
	}
	ts, noTruth := score.ThreadScores(r, d.Truth)
	if ts != nil {
		tot := score.TotalOf(ts)
		res.Threads = &tot
		for _, s := range ts {
			if !s.Exact && !s.Current { // the current thread's is the crash's
				res.ThreadFailures = append(res.ThreadFailures, s)
			}
		}
	}
	var cand []string
	res.Score, cand = Score(r, d.Truth)
	res.Honesty = score.CheckHonesty(r)
	if !res.Exact {
		res.Frames = cand
		if res.Frames == nil {
			res.Frames = []string{}
		}
	}
	return res, noTruth
}

// Score scores a report against a truth (design.md, "Scoring against
// truth"; score.ScoreReport) and returns the candidate list it compared
// (score.ReportNames: raw symbols against the emulator's truth).
func Score(r *report.Report, tr *crashdump.Truth) (score.Score, []string) {
	return score.ScoreReport(r, tr), score.ReportNames(r, tr)
}

// CheckExpect checks that the dump is the crash the scenario expects: the
// exception it decodes to, the fault status bits, and the truth's faulting
// function. The error lists every mismatch.
func CheckExpect(e Expect, d *crashdump.Dump) error {
	var bad []string
	decoded := fault.Decode(unwinders.ProfileOf(d.CPU), &d.Regs, d.Fault)
	if e.Exception != "" && !strings.EqualFold(decoded.Exception, e.Exception) {
		bad = append(bad, fmt.Sprintf("exception %s, want %s", orNone(decoded.Exception), e.Exception))
	}
	if len(e.Causes) > 0 {
		var have []string
		for _, c := range decoded.Causes {
			have = append(have, c.Register+"."+c.Bit)
		}
		var missing []string
		for _, c := range e.Causes {
			if !slices.Contains(have, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			bad = append(bad, fmt.Sprintf("causes [%s], want %s", strings.Join(have, " "), strings.Join(missing, " ")))
		}
	}
	if e.Function != "" && d.Truth != nil {
		names := score.TruthNames(d.Truth)
		got := "(no frame)"
		if len(names) > 0 {
			got = displayName(names[0])
		}
		if base, _, clone := strings.Cut(got, "."); clone && !strings.Contains(e.Function, ".") && isCloneSuffix(got[len(base):]) {
			got = base // net_store.constprop.0 is GCC's copy of net_store
		}
		if got != e.Function {
			bad = append(bad, fmt.Sprintf("faulting function %s, want %s", got, e.Function))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("not the expected crash: %s", strings.Join(bad, "; "))
	}
	return nil
}

// isCloneSuffix reports whether s is a GCC clone suffix: one or more of
// ".constprop.N", ".isra.N", ".part.N", ".cold".
func isCloneSuffix(s string) bool {
	for s != "" {
		var ok bool
		for _, k := range []string{".constprop.", ".isra.", ".part."} {
			if rest, found := strings.CutPrefix(s, k); found {
				n := 0
				for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
					n++
				}
				if n == 0 {
					return false
				}
				s, ok = rest[n:], true
				break
			}
		}
		if !ok {
			rest, found := strings.CutPrefix(s, ".cold")
			if !found {
				return false
			}
			s = rest
		}
	}
	return true
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// displayName shows a frame without a function as "??".
func displayName(s string) string {
	if s == "" {
		return "??"
	}
	return s
}

// Reproduce returns the `faultline emulate` command line that runs a case
// by hand.
func Reproduce(elf string, t scenario.Trigger) string {
	a := append([]string{"faultline", "emulate", "--elf", elf, "-o", "case.json"}, t.Args()...)
	for i, s := range a {
		if s == "" || strings.ContainsAny(s, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a[i] = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return strings.Join(a, " ")
}
