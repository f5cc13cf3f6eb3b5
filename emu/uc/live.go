package uc

import "sync/atomic"

// LiveCounts is what the binding has allocated in C, or handed to C, and
// not yet freed, across all engines of the process: a program (or test)
// that closes every Engine it opens sees all zero afterwards. Hooks that
// Unicorn keeps in C are freed by uc_close with their engine; the
// cgo.Handles that name their Go callbacks are counted in Handles.
type LiveCounts struct {
	Engines  int64 // uc_open without uc_close
	Handles  int64 // cgo.Handles passed to C as hook, MMIO or event user data
	Contexts int64 // uc_context_alloc without uc_context_free
	Trackers int64 // fl_tracker_new without fl_tracker_free (C hooks and buffers)
}

// live holds the counters: one atomic add per allocation and per free,
// nothing on the emulation's hot paths.
var live struct {
	engines, handles, contexts, trackers atomic.Int64
}

// Live returns the current counts, for leak tests.
func Live() LiveCounts {
	return LiveCounts{
		Engines:  live.engines.Load(),
		Handles:  live.handles.Load(),
		Contexts: live.contexts.Load(),
		Trackers: live.trackers.Load(),
	}
}
