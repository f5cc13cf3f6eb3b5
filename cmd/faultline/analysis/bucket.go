package analysis

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// SummarySchema is the schema name of the crash-bucket summary
// (analyze --summary --format json).
const SummarySchema = "faultline.summary/1"

// SignatureFrames is how many callers of the faulting function a
// Signature holds.
const SignatureFrames = 3

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

// SignatureOf computes the signature of a report.
func SignatureOf(r *Report) Signature {
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
	start := FaultingFrame(r)
	if start < 0 {
		s.Function = "??"
		return s
	}
	s.Function = signatureName(r.Frames[start])
	for _, f := range r.Frames[start+1:] {
		if len(s.Frames) == SignatureFrames {
			break
		}
		s.Frames = append(s.Frames, signatureName(f))
	}
	return s
}

// FaultingFrame returns the index in r.Frames of the faulting frame: the
// first entry after the first exception pseudo-frame, or 0 when there is
// none; -1 when the report has no frames.
func FaultingFrame(r *Report) int {
	for i, f := range r.Frames {
		if f.Kind == unwinders.KindException.String() && i+1 < len(r.Frames) {
			return i + 1
		}
	}
	if len(r.Frames) == 0 {
		return -1
	}
	return 0
}

func signatureName(f FrameJSON) string {
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
// "HardFault|CFSR.DACCVIOL,HFSR.FORCED|null_store|deep5_mixed>deep4>deep3",
// with "|thread=NAME" appended when an RTOS thread was running (so the keys
// and IDs of crashes without an RTOS do not change).
func (s Signature) Key() string {
	k := s.Exception + "|" + strings.Join(s.Causes, ",") + "|" + s.Function + "|" + strings.Join(s.Frames, ">")
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
	// Example is the full analysis of First.
	Example *Report `json:"example"`
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
	Schema   string `json:"schema"`
	ELF      string `json:"elf"`
	Unwinder string `json:"unwinder"`
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
		s: Summary{Schema: SummarySchema, ELF: elf, Unwinder: unwinder, Order: order,
			Buckets: []*Bucket{}, Undecodable: Undecodable{Errors: []DumpError{}}},
		byKey: map[string]*Bucket{},
	}
}

// Add puts a decoded crash into its bucket.
func (z *Summarizer) Add(r *Report) {
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

// WriteText prints the summary for a reader: one block per bucket with
// the example's backtrace from the faulting frame, then the undecodable
// dumps and their errors.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	plural := func(n int, one string) string {
		if n == 1 {
			return fmt.Sprintf("%d %s", n, one)
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	fmt.Fprintf(&b, "Summary of %s", plural(s.Dumps, "dump"))
	if s.ELF != "" {
		fmt.Fprintf(&b, " with %s", s.ELF)
	}
	fmt.Fprintf(&b, " (unwinder %s): %s decoded in %s, %d undecodable\n",
		s.Unwinder, plural(s.Decoded, "dump"), plural(len(s.Buckets), "bucket"), s.Undecodable.Count)
	fmt.Fprintf(&b, "First and last are in %s order.\n", s.Order)
	for i, bk := range s.Buckets {
		sig := bk.Signature
		fmt.Fprintf(&b, "\n#%d  %s  %s in %s", i+1, plural(bk.Count, "dump"), sig.Exception, sig.Function)
		if sig.Thread != "" {
			fmt.Fprintf(&b, " (thread %s)", sig.Thread)
		}
		if len(sig.Causes) > 0 {
			fmt.Fprintf(&b, "  (%s)", strings.Join(sig.Causes, ", "))
		}
		fmt.Fprintf(&b, "\n    bucket   %s\n", bk.ID)
		fmt.Fprintf(&b, "    first    %s\n", bk.First)
		fmt.Fprintf(&b, "    last     %s\n", bk.Last)
		if r := bk.Example; r != nil {
			fmt.Fprintf(&b, "    example  %s\n", r.Dump)
			if r.Fault.Address != "" {
				fmt.Fprintf(&b, "             faulting address %s\n", r.Fault.Address)
			}
			start := max(FaultingFrame(r), 0)
			shown := 0
			for _, f := range r.Frames[start:] {
				if shown == SignatureFrames+3 {
					fmt.Fprintf(&b, "             ... %s\n", plural(len(r.Frames)-start-shown, "more frame"))
					break
				}
				if f.Kind == unwinders.KindException.String() {
					fmt.Fprintf(&b, "             #%-2d <exception>\n", f.Index)
				} else {
					fmt.Fprintf(&b, "             #%-2d %-32s %s\n", f.Index, frameName(f), fileLine(f))
				}
				shown++
			}
		}
	}
	if s.Undecodable.Count > 0 {
		fmt.Fprintf(&b, "\nUndecodable: %s\n", plural(s.Undecodable.Count, "dump"))
		for _, e := range s.Undecodable.Errors {
			fmt.Fprintf(&b, "    %s\n", e.Error)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
