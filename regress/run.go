package regress

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/emu"
	"github.com/faultline-dev/faultline/emu/heap"
	"github.com/faultline-dev/faultline/emu/uc"
	"github.com/faultline-dev/faultline/scenario"
	"github.com/faultline-dev/faultline/unwinders"
)

// DefaultMaxFrames bounds a walk when neither the spec nor Options do.
const DefaultMaxFrames = 64

// maxHandlerOutput bounds what is kept of each semihosting stream of the
// crash handler (a dump is a few KiB; a runaway handler must not fill
// memory).
const maxHandlerOutput = crashdump.MaxManifestSize

// Options change how a spec runs.
type Options struct {
	// Unwinder, when not empty, replaces the spec's and every scenario's.
	Unwinder string
	// MaxFrames, when positive, replaces the spec's.
	MaxFrames int
	// Select, when not nil, picks the scenarios to run by name.
	Select func(name string) bool
	// Done, when not nil, is called with each result as soon as the
	// scenario has run, in spec order.
	Done func(*Result)
}

// Status is a scenario's outcome.
type Status int

const (
	StatusPass  Status = iota
	StatusFail         // the crash or the handler's dump differs from the spec
	StatusError        // the scenario could not be run or checked (no fault, emulator error)
)

func (s Status) String() string {
	switch s {
	case StatusPass:
		return "PASS"
	case StatusFail:
		return "FAIL"
	}
	return "ERROR"
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario *Scenario
	Unwinder string
	Status   Status
	Time     time.Duration
	// Problems say what differs (StatusFail), most important first.
	Problems []Problem
	// Err says why the scenario could not run (StatusError); ErrKind
	// classifies it for JUnit: "no-fault", "emulator", "analysis".
	Err     error
	ErrKind string
	// Reproduce holds shell commands that reproduce the scenario by hand.
	Reproduce []string
	// Frames is the harness's backtrace (from the faulting frame outwards,
	// exception pseudo-frames removed); nil when the scenario did not run.
	Frames []Frame
	// Fault is the harness's analysis of the fault.
	Fault *report.FaultJSON
	// Handler says how the firmware's crash handler ended (Handler.Check).
	Handler string
}

// Problem is one difference between the spec and the crash.
type Problem struct {
	Kind    string // "fault", "backtrace", "threads", "handler", "heap"
	Summary string // one line
	Detail  string // a multi-line diff, or ""
}

// Summary is the outcome of a whole spec.
type Summary struct {
	Spec                   *Spec
	Results                []*Result
	Start                  time.Time
	Time                   time.Duration
	Passed, Failed, Errors int
	// Interrupted is set when the context was cancelled before every
	// selected scenario ran.
	Interrupted bool
}

// OK reports whether every scenario passed.
func (s *Summary) OK() bool {
	return s.Failed == 0 && s.Errors == 0 && len(s.Results) > 0 && !s.Interrupted
}

// Frame is one frame of a backtrace, as regress compares and prints it.
type Frame struct {
	Function  string // "" when the PC is in no known function
	Symbol    string
	File      string
	Line      int
	PC        string
	Inlined   bool
	Exception bool // an exception pseudo-frame
	// Args maps each argument's name to its value as analyze prints it
	// ("<optimized out>" when it cannot be known).
	Args map[string]string
}

// Run runs the scenarios of s (those opt.Select picks) one after the
// other. It does not fail: a scenario that cannot run is a Result with
// StatusError. When ctx is cancelled it stops before the next scenario.
func Run(ctx context.Context, s *Spec, opt Options) *Summary {
	r := &runner{spec: s, opt: opt, elfs: map[string]*elfsym.File{}, elfErrs: map[string]error{},
		analyzers: map[[2]string]*analysis.Analyzer{}}
	defer r.close()
	start := time.Now()
	sum := &Summary{Spec: s, Start: start}
	for i := range s.Scenarios {
		sc := &s.Scenarios[i]
		if opt.Select != nil && !opt.Select(sc.Name) {
			continue
		}
		if ctx.Err() != nil {
			sum.Interrupted = true // report what ran; never a pass
			break
		}
		res := r.run(ctx, sc)
		sum.Results = append(sum.Results, res)
		switch res.Status {
		case StatusPass:
			sum.Passed++
		case StatusFail:
			sum.Failed++
		default:
			sum.Errors++
		}
		if opt.Done != nil {
			opt.Done(res)
		}
	}
	sum.Time = time.Since(start)
	return sum
}

// runner keeps the ELFs and analyzers shared by the scenarios of a run.
type runner struct {
	spec      *Spec
	opt       Options
	elfs      map[string]*elfsym.File
	elfErrs   map[string]error
	analyzers map[[2]string]*analysis.Analyzer
}

func (r *runner) close() {
	for _, f := range r.elfs {
		f.Close()
	}
}

func (r *runner) unwinder(sc *Scenario) string {
	switch {
	case r.opt.Unwinder != "":
		return r.opt.Unwinder
	case sc.Unwinder != "":
		return sc.Unwinder
	case r.spec.Unwinder != "":
		return r.spec.Unwinder
	}
	return "auto"
}

func (r *runner) maxFrames() int {
	switch {
	case r.opt.MaxFrames > 0:
		return r.opt.MaxFrames
	case r.spec.MaxFrames > 0:
		return r.spec.MaxFrames
	}
	return DefaultMaxFrames
}

func (r *runner) analyzer(path, unwinder string) (*analysis.Analyzer, error) {
	key := [2]string{path, unwinder}
	if a := r.analyzers[key]; a != nil {
		return a, nil
	}
	f, ok := r.elfs[path]
	if !ok {
		if err := r.elfErrs[path]; err != nil {
			return nil, err
		}
		var err error
		f, err = elfsym.Open(path)
		if err != nil {
			r.elfErrs[path] = err
			return nil, err
		}
		r.elfs[path] = f
	}
	a, err := analysis.NewAnalyzer(f, analysis.Options{Unwinder: unwinder, MaxFrames: r.maxFrames()})
	if err != nil {
		return nil, err
	}
	r.analyzers[key] = a
	return a, nil
}

// trigger is the scenario's trigger as it runs: a handler check runs the
// handler.
func trigger(sc *Scenario) scenario.Trigger {
	t := sc.Trigger
	if sc.Handler.Check {
		t.RunHandler = true
	}
	return t
}

func (r *runner) run(ctx context.Context, sc *Scenario) *Result {
	start := time.Now()
	res := &Result{Scenario: sc, Unwinder: r.unwinder(sc)}
	res.Reproduce = reproduce(sc, res.Unwinder, sc.Handler.Output)
	r.check(ctx, sc, res)
	res.Time = time.Since(start)
	switch {
	case res.Err != nil:
		res.Status = StatusError
	case len(res.Problems) > 0:
		res.Status = StatusFail
	}
	return res
}

// check runs the scenario and fills in res.
func (r *runner) check(ctx context.Context, sc *Scenario, res *Result) {
	fail := func(kind string, err error) { res.ErrKind, res.Err = kind, err }
	cfg, err := trigger(sc).Config(sc.ELFPath)
	if err != nil {
		fail("emulator", fmt.Errorf("trigger: %w", err))
		return
	}
	var stdout, stderr limitedBuffer
	if sc.Handler.Check {
		cfg.Stdout, cfg.Stderr = &stdout, &stderr
	}
	var hp *heap.Tracker
	if sc.Expect.Heap != nil {
		hp = heapProbe(sc.Expect.Heap)
		cfg.Probe = hp
	}
	er, err := emu.Run(ctx, cfg)
	var nf *emu.NoFaultError
	if hp != nil && (err == nil || errors.As(err, &nf)) {
		if !r.checkHeap(sc, res, hp) {
			return
		}
		if nf != nil && sc.Expect.Fault == nil && len(sc.Frames) == 0 {
			return // a heap check of a run that ends without a fault
		}
	}
	switch {
	case errors.As(err, &nf):
		fail("no-fault", fmt.Errorf("the firmware did not fault: %s", nf.Detail()))
		return
	case errors.Is(err, uc.ErrUnavailable):
		fail("emulator", err)
		return
	case err != nil:
		fail("emulator", fmt.Errorf("emulator: %w", err))
		return
	}
	an, err := r.analyzer(sc.ELFPath, res.Unwinder)
	if err != nil {
		fail("analysis", err)
		return
	}
	d := scenario.Dump(er)
	d.Path = sc.Name
	rep, err := an.Analyze(d)
	if err != nil {
		fail("analysis", fmt.Errorf("analysing the emulator's dump: %w", err))
		return
	}
	// At the handler's first instruction the backtrace starts with the
	// handler and an exception pseudo-frame; after a lockup the registers
	// are the faulting code's own.
	atHandler := !er.Lockup
	all := framesOf(rep, atHandler)
	res.Frames = withoutExceptions(all)
	res.Fault = &rep.Fault
	if fe := sc.Expect.Fault; fe != nil {
		res.Problems = append(res.Problems, compareFault(fe, rep.Fault)...)
	}
	if len(sc.Frames) > 0 {
		if p, ok := compareFrames(sc.Frames, res.Frames, sc.Expect.Match, res.Unwinder); !ok {
			res.Problems = append(res.Problems, p)
		}
	}
	res.Problems = append(res.Problems, compareThreads(sc.Expect, rep, d.Truth, res.Unwinder)...)
	if !sc.Handler.Check {
		return
	}
	if h := er.Handler; h != nil {
		res.Handler = h.Reason
	}
	if er.Lockup {
		res.Problems = append(res.Problems, Problem{Kind: "handler",
			Summary: "handler: the core locked up at the fault, so the device's crash handler never ran"})
		return
	}
	dev, stream, perr := r.deviceDump(sc, &stdout, &stderr)
	res.Reproduce = reproduce(sc, res.Unwinder, stream)
	if perr != nil {
		res.Problems = append(res.Problems, Problem{Kind: "handler", Summary: "handler: " + perr.Error(),
			Detail: handlerOutcome(er.Handler) + outputSummary(&stdout, &stderr)})
		return
	}
	drep, err := an.Analyze(dev)
	if err != nil {
		res.Problems = append(res.Problems, Problem{Kind: "handler",
			Summary: "handler: the device's crash handler wrote a dump that cannot be analysed: " + err.Error(),
			Detail:  handlerOutcome(er.Handler)})
		return
	}
	dframes := framesOf(drep, startsAtHandler(drep, rep))
	res.Problems = append(res.Problems, compareHandler(all, dframes, rep.Fault, drep.Fault, dev, er.Handler)...)
}

// checkHeap compares the heap at the end of the run with expect.heap. It
// returns false when the check could not be made (res.Err is set).
func (r *runner) checkHeap(sc *Scenario, res *Result, hp *heap.Tracker) bool {
	rep, err := hp.Report()
	if err != nil {
		res.ErrKind, res.Err = "emulator", err
		return false
	}
	f, err := elfsym.Open(sc.ELFPath)
	if err != nil {
		res.ErrKind, res.Err = "analysis", err
		return false
	}
	defer f.Close()
	res.Problems = append(res.Problems, compareHeap(sc.Expect.Heap, rep, f)...)
	return true
}

// deviceDump decodes what the crash handler wrote over semihosting.
// It returns the stream the dump was found on.
func (r *runner) deviceDump(sc *Scenario, stdout, stderr *limitedBuffer) (*crashdump.Dump, string, error) {
	type stream struct {
		name string
		buf  *limitedBuffer
	}
	var streams []stream
	switch sc.Handler.Output {
	case OutputStdout:
		streams = []stream{{"stdout", stdout}}
	case OutputStderr:
		streams = []stream{{"stderr", stderr}}
	default:
		streams = []stream{{"stdout", stdout}, {"stderr", stderr}}
	}
	var tried []string
	for _, s := range streams {
		data := s.buf.Bytes()
		if len(data) == 0 {
			tried = append(tried, s.name+" is empty")
			continue
		}
		if _, ok := crashdump.Detect(data); !ok {
			tried = append(tried, fmt.Sprintf("%s (%d bytes) holds no dump faultline can read", s.name, len(data)))
			continue
		}
		d, err := crashdump.Parse(data, fmt.Sprintf("%s (the crash handler's semihosting %s)", sc.Name, s.name), nil)
		if err != nil {
			return nil, s.name, fmt.Errorf("the device's crash handler wrote a dump that does not decode: %v", err)
		}
		if s.buf.truncated {
			d.Warnings = append(d.Warnings, fmt.Sprintf("only the first %d bytes of the handler's %s were kept", maxHandlerOutput, s.name))
		}
		return d, s.name, nil
	}
	return nil, sc.Handler.Output, fmt.Errorf("the device's crash handler wrote no dump: %s", strings.Join(tried, "; "))
}

// startsAtHandler reports whether a device dump was taken at the handler's
// first instruction, as the harness's is (its backtrace then starts with
// the same handler function and an exception pseudo-frame). A
// CrashCatcher dump holds the state before the exception instead, and its
// backtrace starts at the faulting frame.
func startsAtHandler(dev, harness *report.Report) bool {
	d, h := dev.Frames, harness.Frames
	return len(d) > 1 && len(h) > 1 && d[0].Kind == unwinders.KindNormal.String() &&
		d[1].Kind == unwinders.KindException.String() && d[0].Function != "" && d[0].Function == h[0].Function
}

// framesOf returns the report's backtrace from the faulting frame
// outwards: when the dump was taken at the handler's first instruction,
// the frames up to and including the first exception pseudo-frame (the
// handler) are left out. Exception pseudo-frames further out are kept.
func framesOf(r *report.Report, atHandler bool) []Frame {
	start := 0
	if atHandler {
		for i, f := range r.Frames {
			if f.Kind == unwinders.KindException.String() {
				start = i + 1
				break
			}
		}
	}
	var out []Frame
	for _, f := range r.Frames[start:] {
		out = append(out, Frame{
			Function: f.Function, Symbol: f.Symbol, File: f.File, Line: f.Line, PC: f.PC,
			Inlined:   f.Kind == unwinders.KindInlined.String(),
			Exception: f.Kind == unwinders.KindException.String(),
			Args:      argsOf(f.Args),
		})
	}
	return out
}

func withoutExceptions(fs []Frame) []Frame {
	out := make([]Frame, 0, len(fs))
	for _, f := range fs {
		if !f.Exception {
			out = append(out, f)
		}
	}
	return out
}

func handlerOutcome(h *emu.HandlerOutcome) string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("The handler ran %d instructions and %s.\n", h.Insns, h.Reason)
}

func outputSummary(stdout, stderr *limitedBuffer) string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		buf  *limitedBuffer
	}{{"stdout", stdout}, {"stderr", stderr}} {
		data := s.buf.Bytes()
		if len(data) == 0 {
			continue
		}
		fmt.Fprintf(&b, "Its %s began: %s\n", s.name, quoteStart(data, 120))
	}
	return b.String()
}

// quoteStart quotes the first n bytes of data as a Go string literal.
func quoteStart(data []byte, n int) string {
	more := ""
	if len(data) > n {
		data, more = data[:n], "..."
	}
	return fmt.Sprintf("%q%s", data, more)
}

// limitedBuffer keeps the first maxHandlerOutput bytes written to it.
type limitedBuffer struct {
	bytes.Buffer
	truncated bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxHandlerOutput - b.Len(); len(p) > room {
		p, b.truncated = p[:max(room, 0)], true
	}
	b.Buffer.Write(p)
	return n, nil
}

func argsOf(vs []report.VarJSON) map[string]string {
	if len(vs) == 0 {
		return nil
	}
	m := make(map[string]string, len(vs))
	for _, v := range vs {
		switch {
		case v.Value != "":
			m[v.Name] = v.Value
		case v.OptimizedOut:
			m[v.Name] = "<optimized out>"
		default:
			m[v.Name] = "<unavailable>"
		}
	}
	return m
}
