// Package score measures a report against an independent truth (the
// call stack GDB or the emulator saw, stored in a QEMU oracle dump): the
// frame-list score of the crash backtrace, the per-thread scores of an
// RTOS dump, and the honesty re-check of a walk's confidence claims.
// Tests, the matrix and regress use it as their oracle; it reads
// analysis/report only.
package score

import (
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/unwinders"
)

// Score compares a candidate backtrace with the truth (design.md, "Scoring
// against truth").
type Score struct {
	Exact         bool    `json:"exact"`
	FrameAccuracy float64 `json:"frame_accuracy"`
	Bogus         int     `json:"bogus"`
}

// ScoreNames scores two lists of function names, faulting frame first.
// Exact: the lists are equal. Frame accuracy: the length of the common
// prefix over the length of the truth. Bogus: candidate frames that differ
// from the truth at their position (or lie past its end).
func ScoreNames(truth, cand []string) Score {
	common := 0
	for common < len(truth) && common < len(cand) && truth[common] == cand[common] {
		common++
	}
	s := Score{Exact: len(truth) == len(cand) && common == len(truth)}
	if len(truth) > 0 {
		s.FrameAccuracy = float64(common) / float64(len(truth))
	} else if len(cand) == 0 {
		s.FrameAccuracy = 1
	}
	for i, c := range cand {
		if i >= len(truth) || truth[i] != c {
			s.Bogus++
		}
	}
	return s
}

// TruthNames returns the truth's function list from the faulting frame
// outwards: frames up to and including the first exception pseudo-frame
// (the handler) are dropped when there is one, and exception pseudo-frames
// are removed. withInlined=false drops nothing else: the truth is taken as
// it is.
func TruthNames(tr *crashdump.Truth) []string {
	var names []string
	start := 0
	for i, f := range tr.Frames {
		if f.Kind == "exception" {
			start = i + 1
			break
		}
	}
	for _, f := range tr.Frames[start:] {
		if f.Kind == "exception" {
			continue
		}
		names = append(names, f.Function)
	}
	return names
}

// TruthHasInlined reports whether a truth source lists inlined frames
// (GDB does; the emulator's shadow call stack sees only real calls).
func TruthHasInlined(tr *crashdump.Truth) bool { return tr.Source != "emulator-shadow-stack" }

// CandidateNames returns the report's function list in the same shape as
// TruthNames: from the faulting frame outwards, exception pseudo-frames
// and gap frames removed (a gap names no function: the frames it stands
// for count as missing), inlined frames kept only when the truth lists them.
func CandidateNames(frames []report.FrameJSON, inlined bool) []string {
	start := 0
	for i, f := range frames {
		if f.Kind == unwinders.KindException.String() {
			start = i + 1
			break
		}
	}
	return namesOf(frames[start:], inlined)
}

// namesOf lists the functions of frames, exception pseudo-frames and gap
// frames removed, inlined frames kept when inlined is set.
func namesOf(frames []report.FrameJSON, inlined bool) []string {
	var names []string
	for _, f := range frames {
		switch {
		case f.Kind == unwinders.KindException.String():
		case f.Kind == unwinders.KindGap.String():
		case f.Kind == unwinders.KindInlined.String() && !inlined:
		default:
			names = append(names, f.Function)
		}
	}
	return names
}

// ChainStart returns the index of r.Frames where the faulting chain
// starts, the same for every strategy on one dump: right after the first
// exception pseudo-frame; at 0 when the walk found none and the dump's
// registers are the faulting context (Thread mode, or a state a crash
// handler reconstructed); at len(r.Frames) when the walk found none but
// the registers are those of the fault handler itself (IPSR is the
// fault's exception): that walk never left the handler, and none of its
// frames belongs to the faulting chain.
func ChainStart(r *report.Report) int {
	for i, f := range r.Frames {
		if f.Kind == unwinders.KindException.String() {
			return i + 1
		}
	}
	if ipsr, ok := r.Regs.IPSR(); ok && ipsr != 0 && int(ipsr) == r.Fault.Number {
		return len(r.Frames)
	}
	return 0
}

// ChainNames is CandidateNames from ChainStart: every strategy's list
// starts at the same frame.
func ChainNames(r *report.Report, inlined bool) []string {
	return namesOf(r.Frames[ChainStart(r):], inlined)
}

// ScoreReport scores a report against a truth, comparing like with like
// (ReportNames).
func ScoreReport(r *report.Report, tr *crashdump.Truth) Score {
	return ScoreNames(TruthNames(tr), ReportNames(r, tr))
}

// ReportNames returns the report's function list in the truth's terms. A
// truth with inlined frames (GDB's) names frames readably, as the report's
// Function does. The emulator's shadow call stack names each frame by the
// raw ELF symbol of the function holding its PC and lists no inlined
// frames: it is compared with each frame's raw Symbol (none in the gap past
// a symbol's end), since for C++ the readable name is demangled
// ("Journal::~Journal()" for the truth's "_ZN7JournalD1Ev").
func ReportNames(r *report.Report, tr *crashdump.Truth) []string {
	if TruthHasInlined(tr) {
		return ChainNames(r, true)
	}
	exc, inl := unwinders.KindException.String(), unwinders.KindInlined.String()
	var names []string
	for _, f := range r.Frames[ChainStart(r):] {
		if f.Kind == exc || f.Kind == inl || f.Kind == unwinders.KindGap.String() {
			continue
		}
		name := f.Symbol
		if f.Gap {
			name = ""
		}
		names = append(names, name)
	}
	return names
}
