package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
)

// The batch pipeline: dumps are loaded and analysed by a pool of workers
// sharing one Analyzer (one ELF index, one set of unwind tables), and the
// results come out in input order, so the output does not depend on the
// number of workers or on timing.

// The collector target (GOGC) of a batch of at least batchGCMinJobs dumps,
// unless the GOGC environment variable sets one.
const (
	batchGCMinJobs = 64
	batchGCPercent = 200
)

// batchWindowPerWorker is how many results per worker may wait for their
// turn to be printed.
const batchWindowPerWorker = 4

// batchJob loads one input.
type batchJob struct {
	name string // the input as given, for messages and the summary
	// load loads the dump; bufs (which may be nil) are where it may read
	// its region files (crashdump.LoadOptions.Buffers).
	load func(bufs *crashdump.Buffers) (*crashdump.Dump, error)
}

// batchResult is one input's outcome.
type batchResult struct {
	job    batchJob
	dump   *crashdump.Dump
	report *report.Report
	err    error
	// scratch is the memory the result holds (runBatch's reuse), given
	// back once the result is emitted.
	scratch *batchScratch
}

// batchScratch is the memory one dump's load and analysis reuse from an
// earlier dump's: its region file buffers and the analysis's scratch. A
// result made with it holds that memory until it has been emitted; only
// then is the scratch given to another dump.
type batchScratch struct {
	bufs crashdump.Buffers
	an   analysis.Scratch
}

// scratchAnalyzer is a dumpAnalyzer that can reuse memory across dumps.
type scratchAnalyzer interface {
	AnalyzeScratch(d *crashdump.Dump, s *analysis.Scratch) (*report.Report, error)
}

// runBatch analyses the jobs with workers goroutines and calls emit for
// each result in job order, from the calling goroutine. done is called
// (from any goroutine) as each job finishes, for progress. At most a
// window of results waits for emission, so memory stays bounded however
// many dumps there are.
//
// Unless keepDump, each dump is closed (its mapped regions released) as
// soon as it is analysed, so that the results waiting for their turn hold
// only their reports; emit owns the dumps it is given.
//
// With reuse (which needs !keepDump), the dumps and analyses of the batch
// reuse memory (batchScratch): emit must be done with a result's report
// when it returns, keeping nothing of it.
func runBatch(a dumpAnalyzer, jobs []batchJob, workers int, keepDump, reuse bool, done func(), emit func(batchResult) error) error {
	if workers < 1 {
		workers = 1
	}
	workers = min(workers, max(len(jobs), 1))
	if len(jobs) >= batchGCMinJobs && os.Getenv("GOGC") == "" {
		// Each dump is garbage once written (its RAM image, the parsed
		// manifest) while the live heap stays small, so the collector
		// would run every few dumps; a higher target trades a few
		// megabytes for about a fifth of the CPU time.
		defer debug.SetGCPercent(debug.SetGCPercent(batchGCPercent))
	}
	reuse = reuse && !keepDump
	if workers == 1 {
		// One worker: the calling goroutine does the work, in order,
		// without handing every dump between three goroutines (each
		// hand-off wakes a thread on another core).
		var s *batchScratch
		if reuse {
			s = new(batchScratch)
		}
		for _, j := range jobs {
			r := analyzeOne(a, j, keepDump, s)
			if done != nil {
				done()
			}
			if err := emit(r); err != nil {
				return err
			}
		}
		return nil
	}
	window := batchWindowPerWorker * workers
	// The scratches of the results emitted, for the next dumps: at most
	// one per result in flight.
	free := make(chan *batchScratch, window+workers)
	slots := make([]chan batchResult, len(jobs))
	for i := range slots {
		slots[i] = make(chan batchResult, 1)
	}
	todo := make(chan int)
	tokens := make(chan struct{}, window)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range todo {
				var s *batchScratch
				if reuse {
					select {
					case s = <-free:
					default:
						s = new(batchScratch)
					}
				}
				r := analyzeOne(a, jobs[i], keepDump, s)
				r.scratch = s
				slots[i] <- r
				if done != nil {
					done()
				}
			}
		}()
	}
	go func() {
		defer close(todo)
		for i := range jobs {
			select {
			case tokens <- struct{}{}:
			case <-stop:
				return
			}
			select {
			case todo <- i:
			case <-stop:
				return
			}
		}
	}()
	var err error
	for i := range jobs {
		r := <-slots[i]
		<-tokens
		if err = emit(r); err != nil {
			break
		}
		if r.scratch != nil {
			select {
			case free <- r.scratch:
			default:
			}
		}
	}
	close(stop)
	wg.Wait()
	return err
}

// analyzeOne loads and analyses one dump, with the memory of s when it is
// not nil.
//
// A panic while doing so (a bug: no input should cause one) is caught and
// becomes this dump's error, an internalError naming the input, so that
// one bad input costs one error line and the batch reports every other
// dump. The scratch is then cleared: it may be half written.
func analyzeOne(a dumpAnalyzer, j batchJob, keepDump bool, s *batchScratch) (res batchResult) {
	res = batchResult{job: j}
	defer func() {
		if v := recover(); v != nil {
			if s != nil {
				*s = batchScratch{}
			}
			res.report = nil
			res.err = &internalError{input: j.name, value: v, stack: debug.Stack()}
		}
	}()
	var bufs *crashdump.Buffers
	if s != nil {
		bufs = &s.bufs
	}
	d, err := j.load(bufs)
	if err != nil {
		res.err = err
		return res
	}
	if keepDump {
		res.dump = d
	} else {
		defer d.Close()
	}
	if err := checkDumpRegisters(d); err != nil {
		res.err = err
		return res
	}
	var r *report.Report
	if sa, ok := a.(scratchAnalyzer); ok && s != nil {
		r, err = sa.AnalyzeScratch(d, &s.an)
	} else {
		r, err = a.Analyze(d)
	}
	if err != nil {
		res.err = err
		return res
	}
	// What the importer noticed comes first.
	r.Warnings = append(append([]string{}, d.Warnings...), r.Warnings...)
	res.report = r
	return res
}

// isTerminal reports whether w is a terminal: a character device that
// answers the terminal ioctl (isTTY; /dev/null is a character device too,
// and gets no progress bar).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && isTTY(f)
}

// progress draws a one-line progress bar on a terminal and keeps the
// error messages printed meanwhile readable. Its methods are safe for
// concurrent use; a nil *progress prints messages only.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	total   int
	done    atomic.Int64
	failed  atomic.Int64
	start   time.Time
	drawn   bool
	stop    chan struct{}
	stopped chan struct{}
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	p.mu.Lock()
	p.draw() // at once: a short batch still shows what it is doing
	p.mu.Unlock()
	go func() {
		defer close(p.stopped)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}()
	return p
}

func (p *progress) tick() {
	if p != nil {
		p.done.Add(1)
	}
}

// draw writes the bar; p.mu is held.
func (p *progress) draw() {
	n := int(p.done.Load())
	const width = 30
	fill := width * n / max(p.total, 1)
	rate := float64(n) / max(time.Since(p.start).Seconds(), 1e-3)
	msg := fmt.Sprintf("\r\x1b[K[%s%s] %d/%d dumps  %.0f/s", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), n, p.total, rate)
	if f := p.failed.Load(); f > 0 {
		msg += fmt.Sprintf("  %d failed", f)
	}
	io.WriteString(p.w, msg)
	p.drawn = true
}

// printf writes a message line, above the bar.
func (p *progress) printf(w io.Writer, format string, args ...any) {
	if p == nil {
		fmt.Fprintf(w, format, args...)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
	fmt.Fprintf(w, format, args...)
}

// finish erases the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.stopped
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
	}
}

// internalError is a panic caught while processing one input: a bug in
// faultline, reported as that input's error rather than ending the run.
type internalError struct {
	input string
	value any
	stack []byte
}

func (e *internalError) Error() string {
	return fmt.Sprintf("%s: internal error: %v (a bug in faultline, please report it with this input; the other inputs are not affected)", e.input, e.value)
}

// recoverInput, deferred, turns a panic while processing input into an
// internalError in *err.
func recoverInput(input string, err *error) {
	if v := recover(); v != nil {
		*err = &internalError{input: input, value: v, stack: debug.Stack()}
	}
}
