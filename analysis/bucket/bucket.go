// Package bucket groups crashes: the signature of a report (the fault and
// the trusted frames around the faulting one) and the summary of many
// reports by signature (faultline.summary/1). It reads analysis/report
// only; render/textout prints a summary.
package bucket

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/unwinders"
)

// SummarySchema is the schema name of the crash-bucket summary
// (analyze --summary --format json).
const SummarySchema = "faultline.summary/1"

// SignatureFrames is how many callers of the faulting function a
// Signature holds.
const SignatureFrames = 3

// SignatureVersion is the version of the bucket signature, named in
// faultline.summary/1 ("signature_version"). Version 2 builds the
// signature from high and medium confidence frames only, skips wrapper
// frames (fault handler trampolines, abort and assert, stack-overflow
// hooks, C++ terminate machinery, panic handlers), and adds the crashing
// thread's name when the dump has RTOS threads. Buckets of different
// versions must not be compared.
const SignatureVersion = 2

// A Signature is what makes two crashes "the same crash": the exception,
// the fault causes, the faulting function and its nearest callers. It
// names functions, never addresses, so that dumps from two builds of the
// same firmware fall into the same bucket.
type Signature struct {
	// Exception is the fault's exception name ("HardFault", "UsageFault").
	Exception string `json:"exception"`
	// Causes are the set fault status bits as "REGISTER.BIT", in the order
	// the decoder reports them, without the *ARVALID bits (they say
	// whether an address register is valid, not why the core faulted).
	Causes []string `json:"causes"`
	// Function is the faulting function: the innermost (inlined, when it
	// is) function of the frame the first exception frame interrupted, or
	// of frame 0 when the walk found no exception frame. "??" when it has
	// no name.
	Function string `json:"function"`
	// Frames are the next SignatureFrames frames outwards from the
	// faulting one, inlined frames included; a nested exception frame is
	// "<exception>". Fewer when the backtrace is shorter.
	Frames []string `json:"frames"`
	// Thread is the name of the RTOS thread that was running (the
	// crashing one), "" when the firmware runs no RTOS faultline knows.
	// The same fault in two tasks is two buckets.
	Thread string `json:"thread,omitempty"`
}

// SignatureOf computes the signature of a report (version 2, see
// SignatureVersion).
func SignatureOf(r *report.Report) Signature {
	s := Signature{Exception: r.Fault.Exception, Causes: []string{}, Frames: []string{}}
	for _, t := range r.Threads {
		if t.Current {
			s.Thread = t.Name
		}
	}
	for _, c := range r.Fault.Causes {
		if strings.HasSuffix(c.Bit, "ARVALID") {
			continue
		}
		s.Causes = append(s.Causes, c.Register+"."+c.Bit)
	}
	start := report.FaultingFrame(r)
	s.Function = "??"
	if start < 0 {
		return s
	}
	named := false
	for _, f := range r.Frames[start:] {
		if len(s.Frames) == SignatureFrames {
			break
		}
		if f.Kind != unwinders.KindException.String() && (!trusted(f) || IsWrapperFrame(signatureName(f))) {
			continue
		}
		if !named {
			if f.Kind == unwinders.KindException.String() {
				continue
			}
			s.Function, named = signatureName(f), true
			continue
		}
		s.Frames = append(s.Frames, signatureName(f))
	}
	// A trailing exception marker says nothing without the frame after it.
	for len(s.Frames) > 0 && s.Frames[len(s.Frames)-1] == "<exception>" {
		s.Frames = s.Frames[:len(s.Frames)-1]
	}
	return s
}

// trusted reports whether a frame is sure enough to name a bucket: high
// or medium confidence.
func trusted(f report.FrameJSON) bool { return f.Confidence == "high" || f.Confidence == "medium" }

// IsWrapperFrame reports whether a function is machinery around a crash
// rather than its cause: fault handler trampolines, abort and the assert
// functions, stack-overflow hooks, C++ terminate and exception runtime,
// Zephyr, FreeRTOS and Rust panic paths. Signatures skip them so that the
// same bug reached through a different trampoline is one bucket.
func IsWrapperFrame(name string) bool {
	if name == "" || name == "??" {
		return false
	}
	base := name
	if i := strings.IndexByte(base, '('); i > 0 {
		base = base[:i] // a demangled C++ name's parameters
	}
	switch base {
	case "abort", "_exit", "exit", "__assert_func", "__assert", "__assert_fail", "__aeabi_assert",
		"__stack_chk_fail", "vApplicationStackOverflowHook", "vAssertCalled", "vApplicationMallocFailedHook",
		"std::terminate", "std::__terminate", "__gnu_cxx::__verbose_terminate_handler",
		"__cxxabiv1::__terminate", "__cxxabiv1::__unexpected", "std::unexpected",
		"k_panic", "k_oops", "z_fatal_error", "z_arm_fatal_error", "k_sys_fatal_error_handler",
		"z_arm_fault", "z_arm_hard_fault", "z_arm_usage_fault", "z_arm_bus_fault", "z_arm_mpu_fault",
		"rust_begin_unwind", "__rust_start_panic", "panic", "Default_Handler", "CrashCatcher_Entry",
		"HardFault_Handler", "MemManage_Handler", "BusFault_Handler", "UsageFault_Handler", "SecureFault_Handler":
		return true
	}
	l := strings.ToLower(base)
	switch {
	case strings.HasPrefix(base, "__cxa_"), strings.HasPrefix(base, "_Unwind_"),
		strings.HasPrefix(base, "core::panicking::"), strings.HasPrefix(base, "std::panicking::"),
		strings.HasPrefix(base, "core::panic::"), strings.HasPrefix(base, "core::result::unwrap_failed"),
		strings.HasPrefix(base, "core::option::"+"expect_failed"):
		return true
	case strings.Contains(l, "hardfault") || strings.HasSuffix(l, "fault_handler") || strings.HasSuffix(l, "fault_handler_c"):
		return true
	}
	return false
}

func signatureName(f report.FrameJSON) string {
	switch {
	case f.Kind == unwinders.KindException.String():
		return "<exception>"
	case f.Function != "":
		return f.Function
	case f.Symbol != "" && !f.Gap:
		return f.Symbol
	}
	return "??"
}

// Key is the canonical text of the signature, one line:
// "v2|HardFault|CFSR.DACCVIOL,HFSR.FORCED|null_store|deep5_mixed>deep4>deep3",
// with "|thread=NAME" appended when an RTOS thread was running. The
// version prefix keeps keys of different signature versions apart.
func (s Signature) Key() string {
	k := fmt.Sprintf("v%d|", SignatureVersion) + s.Exception + "|" + strings.Join(s.Causes, ",") + "|" + s.Function + "|" + strings.Join(s.Frames, ">")
	if s.Thread != "" {
		k += "|thread=" + s.Thread
	}
	return k
}

// ID is a short stable name of the signature: the first 12 hex digits of
// the SHA-256 of Key.
func (s Signature) ID() string {
	h := sha256.Sum256([]byte(s.Key()))
	return hex.EncodeToString(h[:6])
}

// Bucket is the crashes of one signature.
type Bucket struct {
	ID        string    `json:"id"`
	Count     int       `json:"count"`
	Signature Signature `json:"signature"`
	// First and Last are the first and last dumps of the bucket in the
	// order the summary received them (analyze: path order).
	First string `json:"first"`
	Last  string `json:"last"`
	// Dumps lists every dump of the bucket, in the same order.
	Dumps []string `json:"dumps"`
	// BuildIDs lists the firmware builds the bucket was seen in: the GNU
	// build ID of the ELF each dump was decoded with (its file name when
	// it has none), in order of first appearance. A bucket across
	// several builds is the same crash in several firmware versions.
	BuildIDs []string `json:"build_ids,omitempty"`
	// Example is the full analysis of First.
	Example *report.Report `json:"example"`
}

// DumpError is a dump that could not be decoded.
type DumpError struct {
	Dump  string `json:"dump"`
	Error string `json:"error"`
}

// Undecodable is the bucket of the dumps that could not be decoded.
type Undecodable struct {
	Count  int         `json:"count"`
	Errors []DumpError `json:"errors"`
}

// Summary groups crashes into buckets by Signature. Its JSON form is
// faultline.summary/1. Build it with a Summarizer.
type Summary struct {
	Schema string `json:"schema"`
	// SignatureVersion names how bucket signatures were built
	// (SignatureVersion).
	SignatureVersion int    `json:"signature_version"`
	ELF              string `json:"elf"`
	Unwinder         string `json:"unwinder"`
	// Order says what "first" and "last" mean: "path" (the dumps were
	// added in path order).
	Order       string      `json:"order"`
	Dumps       int         `json:"dumps"`   // every dump added, decoded or not
	Decoded     int         `json:"decoded"` // dumps in Buckets
	Buckets     []*Bucket   `json:"buckets"` // most dumps first, then by First
	Undecodable Undecodable `json:"undecodable"`
}

// A Summarizer collects reports and errors into a Summary. Add them in the
// order that "first" and "last" should follow. It is not safe for
// concurrent use.
type Summarizer struct {
	s     Summary
	byKey map[string]*Bucket
}

// NewSummarizer starts a summary; elf, unwinder and order are copied into
// it.
func NewSummarizer(elf, unwinder, order string) *Summarizer {
	return &Summarizer{
		s: Summary{Schema: SummarySchema, SignatureVersion: SignatureVersion, ELF: elf, Unwinder: unwinder, Order: order,
			Buckets: []*Bucket{}, Undecodable: Undecodable{Errors: []DumpError{}}},
		byKey: map[string]*Bucket{},
	}
}

// Add puts a decoded crash into its bucket.
func (z *Summarizer) Add(r *report.Report) {
	z.s.Dumps++
	z.s.Decoded++
	sig := SignatureOf(r)
	key := sig.Key()
	b := z.byKey[key]
	if b == nil {
		b = &Bucket{ID: sig.ID(), Signature: sig, First: r.Dump, Example: r}
		z.byKey[key] = b
		z.s.Buckets = append(z.s.Buckets, b)
	}
	b.Count++
	b.Last = r.Dump
	b.Dumps = append(b.Dumps, r.Dump)
	if e := r.ELFInfo; e != nil {
		id := e.BuildID
		if id == "" {
			id = filepath.Base(e.Path)
		}
		if !slices.Contains(b.BuildIDs, id) {
			b.BuildIDs = append(b.BuildIDs, id)
		}
	}
}

// AddError records a dump that could not be decoded.
func (z *Summarizer) AddError(dump string, err error) {
	z.s.Dumps++
	z.s.Undecodable.Count++
	z.s.Undecodable.Errors = append(z.s.Undecodable.Errors, DumpError{Dump: dump, Error: err.Error()})
}

// Summary returns the summary, buckets sorted by count (most first), ties
// in the order their first dump was added.
func (z *Summarizer) Summary() *Summary {
	s := z.s
	s.Buckets = append([]*Bucket(nil), z.s.Buckets...)
	sort.SliceStable(s.Buckets, func(i, j int) bool { return s.Buckets[i].Count > s.Buckets[j].Count })
	return &s
}
