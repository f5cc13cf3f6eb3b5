// Package worker decodes the crash server's dumps: each worker claims a
// job from the Store's queue, decodes the dump with the analysis engine
// and the ELF symstore picks among the uploaded symbols (the same choice
// as `analyze --symbols DIR`), and completes the job with the analysis
// and the bucket, or with "waiting for symbols" when no uploaded ELF is
// the dump's, or "failed" with the engine's error.
//
// Delivery is at least once: a worker that dies mid-decode leaves its
// job leased, and once the lease ends RequeueExpired (run by every pool)
// makes it ready for another worker. Results are idempotent (the same
// dump and symbols give the same analysis, and the Store ignores a second
// completion), so a job decoded twice changes nothing.
package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/symstore"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/fleet/blobs"
	"github.com/faultline-dev/faultline/fleet/store"
)

// Config sets up a Pool. Store and Blobs are required.
type Config struct {
	Store store.Store
	Blobs blobs.Store
	// Options are the engine's (zero: the analyze defaults, unwinder
	// auto and 64 frames).
	Options analysis.Options
	// Name prefixes the workers' names in the queue (default
	// hostname-pid).
	Name string
	// Workers is how many dumps decode at once (default 1).
	Workers int
	// Lease is how long a claimed job stays a worker's before others may
	// take it again (default 2 minutes).
	Lease time.Duration
	// Poll is how often an idle worker looks for work when nothing
	// notifies it (default 1 second).
	Poll time.Duration
	// MaxAttempts fails a dump whose job was claimed that many times
	// without completing (a dump that crashes or stalls every worker;
	// default 5).
	MaxAttempts int
	// MaxELFs bounds the ELFs kept open between jobs and the ELFs a dump
	// without a matching build ID is paired against (the newest ones;
	// default 256).
	MaxELFs int
	// Logf, when set, receives one line per problem.
	Logf func(format string, args ...any)
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pool runs workers. Its methods are safe for concurrent use.
type Pool struct {
	cfg  Config
	wake chan struct{}

	mu   sync.Mutex
	elfs map[string]*openELF // by symbol SHA-256
}

type openELF struct {
	elf symstore.ELF
	err error // the ELF could not be opened: never usable
}

// New makes a pool; Run starts it.
func New(cfg Config) *Pool {
	if cfg.Options.Unwinder == "" {
		cfg.Options.Unwinder = "auto"
	}
	if cfg.Options.MaxFrames == 0 {
		cfg.Options.MaxFrames = 64
	}
	if cfg.Name == "" {
		h, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 5
	}
	if cfg.MaxELFs <= 0 {
		cfg.MaxELFs = 256
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Pool{cfg: cfg, wake: make(chan struct{}, 1), elfs: map[string]*openELF{}}
}

// Options are the engine options the workers decode with, defaults
// filled in (a report rendered again must use the same).
func (p *Pool) Options() analysis.Options { return p.cfg.Options }

// Notify tells an idle worker that a job may be ready (an upload in this
// process); workers also poll, so a job from another process is found
// within Config.Poll.
func (p *Pool) Notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run runs the workers until ctx ends. It returns nil then, or the first
// error of the Store that persisted for a while (every worker backs off
// and retries a failing Store before giving up).
func (p *Pool) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for i := range p.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.loop(ctx, fmt.Sprintf("%s-%d", p.cfg.Name, i))
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		p.reaper(ctx)
	}()
	wg.Wait()
	return nil
}

// reaper makes the jobs of dead workers ready again.
func (p *Pool) reaper(ctx context.Context) {
	every := min(p.cfg.Lease/4, 15*time.Second)
	every = max(every, 10*time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n, err := p.cfg.Store.RequeueExpired(ctx, p.cfg.Now())
		if err != nil && ctx.Err() == nil {
			p.cfg.Logf("fleet worker: requeueing expired jobs: %v", err)
		}
		if n > 0 {
			p.cfg.Logf("fleet worker: %d jobs whose worker stopped were queued again", n)
			p.Notify()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Pool) loop(ctx context.Context, name string) {
	backoff := p.cfg.Poll
	for ctx.Err() == nil {
		did, err := p.Process(ctx, name)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			p.cfg.Logf("fleet worker %s: %v", name, err)
			sleep(ctx, backoff)
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		backoff = p.cfg.Poll
		if did {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		case <-time.After(p.cfg.Poll):
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Process claims one job as worker name and completes it, even when ctx
// ends meanwhile. It reports whether there was one; an error is the
// Store's (the job then stays leased and is taken again after its lease).
func (p *Pool) Process(ctx context.Context, name string) (bool, error) {
	job, ok, err := p.cfg.Store.Claim(ctx, name, p.cfg.Now(), p.cfg.Lease)
	if err != nil || !ok {
		return false, err
	}
	// A claimed job is finished even when ctx ends meanwhile (a server
	// stopping): abandoning it would leave the dump to wait out its lease.
	ctx = context.WithoutCancel(ctx)
	var r store.Result
	if job.Attempts > p.cfg.MaxAttempts {
		r = store.Result{Status: store.StatusFailed,
			Error: fmt.Sprintf("%s: decoding was started %d times and never finished (each worker stopped or ran out of time); the dump is given up", job.DumpID, job.Attempts-1)}
	} else {
		r, err = p.decodeSafely(ctx, job.DumpID)
		if err != nil {
			return true, err
		}
	}
	if _, err := p.cfg.Store.Complete(ctx, job.ID, r, p.cfg.Now()); err != nil {
		return true, err
	}
	return true, nil
}

// decodeSafely is Decode, with an engine panic (a bug: the engine never
// panics on bad input by design) turned into a failed dump instead of a
// dead server.
func (p *Pool) decodeSafely(ctx context.Context, id string) (r store.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			p.cfg.Logf("fleet worker: dump %s: internal error: %v\n%s", id, v, debug.Stack())
			r, err = store.Result{Status: store.StatusFailed, Error: fmt.Sprintf("%s: internal error while decoding (a faultline bug; please report it with the dump): %v", id, v)}, nil
		}
	}()
	return p.Decode(ctx, id)
}

// Decode decodes a stored dump with the stored symbols. The error is the
// Store's or the file store's (a problem of the dump itself is a failed
// Result).
func (p *Pool) Decode(ctx context.Context, id string) (store.Result, error) {
	d, err := p.cfg.Store.Dump(ctx, id)
	if err != nil {
		return store.Result{}, err
	}
	data, err := p.cfg.Blobs.ReadFile(d.SHA256, crashdump.MaxManifestSize)
	if err != nil {
		return store.Result{}, fmt.Errorf("dump %s: %w", id, err)
	}
	dump, err := crashdump.Parse(data, id, nil)
	if err != nil {
		return store.Result{Status: store.StatusFailed, Error: err.Error()}, nil
	}
	defer dump.Close()
	if err := symstore.CheckDumpRegisters(dump); err != nil {
		return store.Result{Status: store.StatusFailed, Error: err.Error()}, nil
	}
	symbols, err := p.cfg.Store.Symbols(ctx) // newest first
	if err != nil {
		return store.Result{}, err
	}
	var seq int64
	if len(symbols) > 0 {
		seq = symbols[0].Seq
	}
	// A dump that names its build is decoded with that build's ELF (the
	// first uploaded) and waits until one arrives; a dump without a
	// build ID is paired by content with the newest MaxELFs ELFs, oldest
	// first (analyze --symbols' choice).
	var cands []store.Symbol
	if dump.BuildID != "" {
		for _, y := range symbols {
			if y.BuildID == dump.BuildID {
				cands = append(cands, y)
			}
		}
		if len(cands) == 0 {
			return store.Result{Status: store.StatusWaiting, SymbolSeq: seq,
				Error: fmt.Sprintf("%s: waiting for the ELF of build ID %s (no uploaded ELF has it)", id, dump.BuildID)}, nil
		}
	} else {
		cands = symbols[:min(len(symbols), p.cfg.MaxELFs)]
	}
	var elfs []symstore.ELF
	var shas []string
	var broken []string
	for i := len(cands) - 1; i >= 0; i-- {
		e, err := p.open(cands[i])
		if err != nil {
			broken = append(broken, err.Error())
			continue
		}
		elfs = append(elfs, e)
		shas = append(shas, cands[i].SHA256)
	}
	waiting := func(msg string) store.Result {
		if len(broken) > 0 {
			msg += " (unusable uploaded ELFs: " + strings.Join(broken, "; ") + ")"
		}
		return store.Result{Status: store.StatusWaiting, Error: msg, SymbolSeq: seq}
	}
	if len(elfs) == 0 {
		return waiting(fmt.Sprintf("%s: no usable firmware ELF has been uploaded yet", id)), nil
	}
	set := symstore.New("the uploaded symbols", elfs)
	rep, i, err := set.Pick(dump)
	if errors.Is(err, symstore.ErrNoMatch) {
		return waiting(err.Error()), nil
	}
	if err != nil {
		r := store.Result{Status: store.StatusFailed, Error: err.Error(), SymbolSeq: seq}
		if i >= 0 {
			r.ELF = shas[i]
		}
		return r, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rep); err != nil {
		return store.Result{Status: store.StatusFailed, Error: fmt.Sprintf("%s: encoding the analysis: %v", id, err), SymbolSeq: seq}, nil
	}
	sig := bucket.SignatureOf(rep)
	return store.Result{
		Status:    store.StatusDecoded,
		Bucket:    store.BucketInfo{Signature: sig.ID(), Title: Title(sig), Key: sig.Key()},
		ELF:       shas[i],
		Analysis:  bytes.TrimSpace(b.Bytes()),
		SymbolSeq: seq,
		// Paired by content without proof: a later ELF may pair better.
		Provisional: dump.BuildID == "" && (rep.Pairing == nil || rep.Pairing.Verdict != report.PairVerified),
	}, nil
}

// Title is a bucket's one-line name: "HardFault in null_store (thread
// net): CFSR.DACCVIOL, HFSR.FORCED".
func Title(s bucket.Signature) string {
	t := s.Exception
	if t == "" {
		t = "crash"
	}
	t += " in " + s.Function
	if s.Thread != "" {
		t += " (thread " + s.Thread + ")"
	}
	if len(s.Causes) > 0 {
		t += ": " + strings.Join(s.Causes, ", ")
	}
	return t
}

// open returns the analyzer of a symbol, opened once.
func (p *Pool) open(y store.Symbol) (symstore.ELF, error) {
	p.mu.Lock()
	o := p.elfs[y.SHA256]
	p.mu.Unlock()
	if o != nil {
		return o.elf, o.err
	}
	o = &openELF{}
	data, err := p.cfg.Blobs.ReadFile(y.SHA256, 0)
	if err == nil {
		ef, ferr := symstore.NewFirmware(bytes.NewReader(data), y.Label())
		if ferr != nil {
			err = ferr
		} else {
			an, aerr := analysis.NewAnalyzer(ef, p.cfg.Options)
			if aerr != nil {
				err = aerr
			} else {
				o.elf = symstore.ELF{Name: y.Label(), BuildID: ef.BuildID(), Analyzer: an}
			}
		}
	}
	if err != nil {
		o.err = fmt.Errorf("%s: %w", y.Label(), err)
	}
	p.mu.Lock()
	if len(p.elfs) >= 2*p.cfg.MaxELFs {
		// Forget the cache rather than grow without bound; an analyzer
		// in use stays valid (its file is in memory).
		p.elfs = map[string]*openELF{}
	}
	p.elfs[y.SHA256] = o
	p.mu.Unlock()
	return o.elf, o.err
}
