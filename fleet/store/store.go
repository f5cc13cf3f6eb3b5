// Package store is the storage contract of the crash server: firmware
// symbols (ELFs), dumps with their metadata, status and analysis, the
// buckets the decoded dumps fall into, and the durable job queue that
// feeds the decoding workers (design.md, "Fleet server").
//
// A backend (fleet/store/sqlite, a PostgreSQL one) implements Store and
// passes the conformance suite in fleet/store/storetest. The files
// themselves (ELF and dump bytes) are not in the Store: they live in the
// content-addressed fleet/blobs directory and the Store keeps their
// SHA-256.
//
// Every method takes the time it acts at explicitly (received, now):
// the Store never reads the clock, so tests and several processes with
// slightly different clocks see one consistent order.
//
// Bucket figures (count, devices, versions, first and last seen, the
// per-day counts) are computed from the dumps when read, never kept as
// counters: a job completed twice (at-least-once delivery) cannot count a
// dump twice.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) when a dump, a symbol or a bucket
// does not exist.
var ErrNotFound = errors.New("not found")

// Status is a dump's decoding state, as the API reports it.
type Status string

// The dump states of design.md: queued (a job waits or runs), decoded,
// waiting-for-symbols (no uploaded ELF matches it yet; an ELF upload that
// may match queues it again), failed (the engine could not decode it
// with the ELF that matched; Error says why).
const (
	StatusQueued  Status = "queued"
	StatusDecoded Status = "decoded"
	StatusWaiting Status = "waiting-for-symbols"
	StatusFailed  Status = "failed"
)

// Valid reports whether s is one of the four states.
func (s Status) Valid() bool {
	switch s {
	case StatusQueued, StatusDecoded, StatusWaiting, StatusFailed:
		return true
	}
	return false
}

// Symbol is an uploaded firmware ELF.
type Symbol struct {
	// SHA256 is the hex SHA-256 of the file: its key in fleet/blobs and
	// in the Store (the same bytes uploaded twice are one symbol).
	SHA256 string
	// BuildID is the ELF's GNU build ID in hex, "" when it has none.
	// Several symbols may share one (a stripped and an unstripped copy).
	BuildID string
	Size    int64
	// Name is a label given by the uploader (a file name), may be "".
	Name     string
	Received time.Time
	// Seq orders symbols by arrival in this store (1, 2, ...). A worker
	// notes the highest Seq it knew when it decoded a dump (Result.SymbolSeq)
	// so that an ELF arriving during the decode is not missed.
	Seq int64
}

// NewDump is an upload of a dump.
type NewDump struct {
	// ID is the dump's stable id; the API derives it from the content,
	// so the same bytes give the same id.
	ID string
	// SHA256 is the hex SHA-256 of the dump bytes (its key in fleet/blobs).
	SHA256 string
	Size   int64
	// Format is the format the engine detected ("native", "crashcatcher",
	// "elfcore", ...).
	Format string
	// BuildID is the firmware build ID the dump carries, "" when it
	// carries none (it can then only be paired by content).
	BuildID  string
	Device   string
	Version  string
	Received time.Time
}

// Dump is a stored dump with its state.
type Dump struct {
	ID       string
	SHA256   string
	Size     int64
	Format   string
	BuildID  string
	Device   string
	Version  string
	Received time.Time
	Status   Status
	// Bucket is the signature id of the dump's bucket, "" unless decoded.
	Bucket string
	// ELF is the SHA-256 of the symbol the dump was decoded with, "" when
	// none was.
	ELF string
	// Analysis is the faultline.analysis/1 JSON, nil unless decoded (a
	// failed dump may carry none). Dumps leaves it nil.
	Analysis []byte
	// Error says why the dump failed or what it waits for.
	Error string
	// Updated is when the status last changed.
	Updated time.Time
}

// BucketInfo names a bucket: Signature is its short id
// (analysis.Signature.ID), Title a one-line human name, Key the full
// signature text (analysis.Signature.Key).
type BucketInfo struct {
	Signature string
	Title     string
	Key       string
}

// Result is what a worker learned about a dump.
type Result struct {
	// Status is StatusDecoded, StatusWaiting or StatusFailed.
	Status Status
	// Bucket is required with StatusDecoded.
	Bucket BucketInfo
	// ELF is the SHA-256 of the symbol used, "" when none.
	ELF string
	// Analysis is the faultline.analysis/1 JSON (decoded; optional for
	// failed).
	Analysis []byte
	// Error says why it failed or what it waits for.
	Error string
	// SymbolSeq is the highest Symbol.Seq the worker considered. With
	// StatusWaiting or Provisional, Complete queues the dump again at
	// once when a symbol that may match it arrived after that.
	SymbolSeq int64
	// Provisional marks a decoded result that a later ELF may change: the
	// dump carries no build ID and was paired by content without proof
	// (an unverified pairing), so an ELF uploaded later may pair better.
	// Every new symbol queues such a dump again (as it does a waiting
	// dump without a build ID), so that the final result does not depend
	// on the order the ELFs arrived in.
	Provisional bool
}

// Job is a claimed unit of work: decode one dump.
type Job struct {
	ID     int64
	DumpID string
	// Attempts counts the claims of this job, this one included: more
	// than one means a worker claimed it before and never completed it
	// (it crashed or lost its lease).
	Attempts   int
	Worker     string
	LeaseUntil time.Time
}

// BucketFilter selects the dumps that bucket figures count. Empty fields
// select all.
type BucketFilter struct {
	Version string
	Device  string
	// Now is the end of the per-day series (its last day is Now's UTC
	// day). Zero: the time of the call.
	Now time.Time
}

// Days is how many days Bucket.Daily covers.
const Days = 30

// MaxListed bounds Bucket.Devices and Bucket.Versions (the counts are
// always exact).
const MaxListed = 100

// Bucket is the figures of one bucket over the decoded dumps a filter
// selects.
type Bucket struct {
	BucketInfo
	Count int
	// Devices and Versions are the distinct non-empty values, most dumps
	// first then by name, at most MaxListed; DeviceCount and VersionCount
	// are the exact numbers of distinct values.
	Devices      []string
	DeviceCount  int
	Versions     []string
	VersionCount int
	// FirstSeen and LastSeen are the earliest and latest Received.
	FirstSeen time.Time
	LastSeen  time.Time
	// Daily[i] counts the dumps received on UTC day Now-(Days-1-i):
	// Daily[Days-1] is today.
	Daily [Days]int
}

// DumpQuery selects dumps for a listing. Empty fields select all.
type DumpQuery struct {
	Bucket  string
	Status  Status
	Version string
	Device  string
	// Limit bounds the answer; 0 or less: every dump selected. Newest
	// first (latest Received, then ID).
	Limit int
}

// Store is the storage of the crash server. Implementations are safe for
// concurrent use by several goroutines and, with a shared database, by
// several processes.
type Store interface {
	// PutSymbol records an uploaded ELF (its file is already in
	// fleet/blobs). The same SHA256 twice is one symbol: created is false
	// and the stored one is returned. In the same transaction every dump
	// the ELF may change is queued again (status queued, a new job): the
	// dumps waiting for symbols that it may match (the same build ID, or
	// a dump that carries none) and the decoded dumps whose result is
	// Provisional; woken counts them.
	PutSymbol(ctx context.Context, s Symbol) (stored Symbol, created bool, woken int, err error)
	// Symbols lists every symbol, newest first.
	Symbols(ctx context.Context) ([]Symbol, error)
	// SymbolsByBuildID lists the symbols with that build ID, oldest
	// first.
	SymbolsByBuildID(ctx context.Context, buildID string) ([]Symbol, error)

	// AddDump records an uploaded dump (its file is already in
	// fleet/blobs) as queued and enqueues its decoding job in the same
	// transaction. The same ID twice is one dump: created is false and
	// the stored dump is returned unchanged (its first metadata kept).
	AddDump(ctx context.Context, d NewDump) (stored Dump, created bool, err error)
	// Dump returns a dump with its analysis; ErrNotFound when unknown.
	Dump(ctx context.Context, id string) (Dump, error)
	// Dumps lists dumps without their analysis, newest first.
	Dumps(ctx context.Context, q DumpQuery) ([]Dump, error)

	// Claim takes the oldest ready job and leases it to worker until
	// now+lease. ok is false when no job is ready.
	Claim(ctx context.Context, worker string, now time.Time, lease time.Duration) (job Job, ok bool, err error)
	// Complete stores a job's result on its dump and removes the job, in
	// one transaction. It is idempotent: completing a job that is gone
	// (completed already, by this worker or by another that claimed it
	// after the lease expired) changes nothing and returns applied=false.
	Complete(ctx context.Context, jobID int64, r Result, now time.Time) (applied bool, err error)
	// RequeueExpired makes every leased job whose lease ended before now
	// ready again (its worker died or stalled); it returns how many.
	RequeueExpired(ctx context.Context, now time.Time) (int, error)
	// QueueLength counts the jobs not completed (ready or leased).
	QueueLength(ctx context.Context) (int, error)

	// Buckets lists the buckets of the decoded dumps f selects, most
	// dumps first, then by earliest FirstSeen, then by Signature.
	Buckets(ctx context.Context, f BucketFilter) ([]Bucket, error)
	// Bucket returns one bucket's figures over the dumps f selects;
	// ErrNotFound when no such dump is decoded.
	Bucket(ctx context.Context, signature string, f BucketFilter) (Bucket, error)

	// Close releases the database.
	Close() error
}

// Label is the name a symbol's ELF goes by in reports (the workers' and
// the pages'): its upload name, else its build ID, else its SHA-256.
func (y Symbol) Label() string {
	switch {
	case y.Name != "":
		return y.Name
	case y.BuildID != "":
		return "build-id " + y.BuildID
	}
	return "sha256 " + y.SHA256
}
