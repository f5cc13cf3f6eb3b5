package textout

import (
	"fmt"
	"io"
	"strings"

	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/unwinders"
)

// WriteSummary prints a summary for a reader: one block per bucket with
// the example's backtrace from the faulting frame, then the undecodable
// dumps and their errors.
func WriteSummary(w io.Writer, s *bucket.Summary) error {
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
	fmt.Fprintf(&b, "First and last are in %s order; bucket signatures version %d.\n", s.Order, s.SignatureVersion)
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
		if len(bk.BuildIDs) > 1 {
			fmt.Fprintf(&b, "    builds   %s\n", strings.Join(bk.BuildIDs, ", "))
		}
		if r := bk.Example; r != nil {
			fmt.Fprintf(&b, "    example  %s\n", r.Dump)
			if r.Fault.Address != "" {
				fmt.Fprintf(&b, "             faulting address %s\n", r.Fault.Address)
			}
			start := max(report.FaultingFrame(r), 0)
			shown := 0
			for _, f := range r.Frames[start:] {
				if shown == bucket.SignatureFrames+3 {
					fmt.Fprintf(&b, "             ... %s\n", plural(len(r.Frames)-start-shown, "more frame"))
					break
				}
				if f.Kind == unwinders.KindException.String() {
					fmt.Fprintf(&b, "             #%-2d <exception>\n", f.Index)
				} else {
					fmt.Fprintf(&b, "             #%-2d %-32s %s\n", f.Index, report.FrameName(f), report.FileLine(f))
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
