package report

// Pairing verdicts (design.md, "Threads, gaps, pairing").
const (
	PairVerified   = "verified"   // build IDs equal, or the dump's code bytes equal the ELF's
	PairUnverified = "unverified" // nothing decisive to compare, and nothing proves another build
	PairMismatch   = "mismatch"   // positive evidence that the dump was not made by this ELF's firmware
)

// Pairing is the "pairing" object of faultline.analysis/1: whether the
// ELF is the firmware that crashed, and the evidence either way.
type Pairing struct {
	Verdict  string   `json:"verdict"`
	Evidence []string `json:"evidence"`
	// Differences are the positive evidence that the ELF is another
	// build's (build IDs that differ, code bytes that differ where the
	// walk read them, a core that cannot run the ELF's code), one line
	// each; any of them makes the verdict a mismatch, and the analysis
	// warning is built from them. Part of Evidence too.
	Differences []string `json:"-"`
	// Doubts are what heuristics found against the pairing (calls that
	// do not target the callee, return addresses that follow no call,
	// stack words that do not look like return addresses, a faulting
	// instruction that could not raise the fault the sticky status bits
	// report): each keeps the verdict at unverified at most, never a
	// mismatch, since real firmware does each of them (indirect tail
	// calls, constant data linked inside .text, stale fault status, a
	// vector table moved to RAM). Part of Evidence too, each starting
	// with doubtPrefix.
	Doubts []string `json:"-"`
}
