// Package symstore picks, for each crash dump, the firmware ELF to decode
// it with from a set of ELFs of many builds: the one whose GNU build ID
// the dump carries, else the one the dump pairs with by content. It is
// the engine behind `analyze --symbols DIR` and the crash server's
// workers, so both choose the same ELF for the same dump.
package symstore

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// ErrNoMatch is returned (wrapped) by Set.Analyze when no ELF of the set
// is the dump's: its build ID is not in the set and no ELF pairs with it
// by content. A server keeps such a dump until more ELFs arrive.
var ErrNoMatch = errors.New("no ELF pairs with the dump")

// noMatchError is ErrNoMatch with the whole story.
type noMatchError string

func (e noMatchError) Error() string        { return string(e) }
func (e noMatchError) Is(target error) bool { return target == ErrNoMatch }

// ELF is one firmware image of a Set.
type ELF struct {
	// Name names the ELF in messages and in the report (a path, or a
	// label).
	Name string
	// BuildID is the ELF's GNU build ID in hex, "" when it has none.
	BuildID string
	// Analyzer decodes dumps with the ELF.
	Analyzer *analysis.Analyzer
}

// Set is ELFs of many builds. A dump is decoded with the ELF whose GNU
// build ID it carries (the first such ELF of the set); a dump without one
// (or with one the set lacks) is tried against every ELF and paired by
// content (analysis pairing: verified first, then the unverified pairing
// with the most evidence and no doubt; never a mismatch). An Analyzer is
// safe for concurrent use, so a Set is too.
type Set struct {
	label string
	elfs  []ELF
	byID  map[string]int
}

// New makes a set; label names it in messages (the directory the ELFs
// came from). The order of elfs is the order of preference.
func New(label string, elfs []ELF) *Set {
	s := &Set{label: label, elfs: elfs, byID: map[string]int{}}
	for i, e := range elfs {
		if _, dup := s.byID[e.BuildID]; e.BuildID != "" && !dup {
			s.byID[e.BuildID] = i
		}
	}
	return s
}

// Len is the number of ELFs.
func (s *Set) Len() int { return len(s.elfs) }

// Analyze decodes d with its own ELF (see Set). Pick says which.
func (s *Set) Analyze(d *crashdump.Dump) (*report.Report, error) {
	r, _, err := s.Pick(d)
	return r, err
}

// Pick decodes d with its own ELF (see Set) and returns the index of the
// ELF used. The error wraps ErrNoMatch when no ELF is the dump's; any
// other error is the engine's, decoding d with the ELF of its build ID.
func (s *Set) Pick(d *crashdump.Dump) (*report.Report, int, error) {
	var note string
	if d.BuildID != "" {
		if i, ok := s.byID[d.BuildID]; ok {
			r, err := s.elfs[i].Analyzer.Analyze(d)
			return r, i, err
		}
		note = fmt.Sprintf("the dump's build-id %s is not in %s; ", d.BuildID, s.label)
	}
	var best *report.Report
	bestIndex := -1
	for i, e := range s.elfs {
		r, err := e.Analyzer.Analyze(d)
		if err != nil || r.Pairing == nil {
			continue
		}
		switch r.Pairing.Verdict {
		case report.PairVerified:
			return r, i, nil
		case report.PairUnverified:
			// Chosen by content, an ELF must not be doubted by it.
			if len(r.Pairing.Doubts) == 0 && (best == nil || len(r.Pairing.Evidence) > len(best.Pairing.Evidence)) {
				best, bestIndex = r, i
			}
		}
	}
	if best == nil {
		return nil, -1, noMatchError(fmt.Sprintf("%s: %sno ELF in %s pairs with the dump (%d tried, each a mismatch or doubted by the dump's contents)", d.Path, note, s.label, len(s.elfs)))
	}
	best.Warnings = append(best.Warnings, fmt.Sprintf("%spaired with %s by content (%s)", note, best.ELFInfo.Path, strings.Join(best.Pairing.Evidence, "; ")))
	return best, bestIndex, nil
}

// OpenFirmware opens an ELF and checks that it can be Cortex-M firmware:
// not a relocatable object, not built for a Cortex-A or Cortex-R core.
func OpenFirmware(path string) (*elfsym.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewFirmware(f, path)
}

// NewFirmware is OpenFirmware on an ELF read from r; name names it in
// errors and in the reports of dumps decoded with it. r is not used after
// it returns.
func NewFirmware(r io.ReaderAt, name string) (*elfsym.File, error) {
	if err := checkFirmwareHeader(r, name); err != nil {
		return nil, err
	}
	f, err := elfsym.NewFile(r, name)
	if err != nil {
		return nil, err
	}
	if err := CheckCortexM(name, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkFirmwareHeader refuses an ELF that cannot be Cortex-M firmware
// from its header alone: a relocatable object (a .o file: its code is not
// at its run addresses). Files debug/elf cannot read are left to elfsym,
// which says what is wrong with them.
func checkFirmwareHeader(r io.ReaderAt, path string) error {
	f, err := elf.NewFile(r)
	if err != nil {
		return nil
	}
	switch f.Type {
	case elf.ET_REL:
		return fmt.Errorf("%s: a relocatable object (ELF type ET_REL, a .o file), not linked firmware: give the linked executable", path)
	case elf.ET_CORE:
		return fmt.Errorf("%s: an ELF core file (ELF type ET_CORE, a crash dump), not firmware: give the firmware's linked executable", path)
	}
	return nil
}

// CheckCortexM refuses firmware whose build attributes say it is for
// another ARM profile (Cortex-A or Cortex-R: Tag_CPU_arch_profile 'A' or
// 'R', or an architecture that has no M profile).
func CheckCortexM(path string, f *elfsym.File) error {
	a := f.Info().Attributes
	if a == nil {
		return nil
	}
	core := a.CPUName
	if core == "" {
		core = "ARM" + a.CPUArch
	}
	switch a.Profile {
	case "A", "R":
		return fmt.Errorf("%s: built for a Cortex-%s core (%s, build attribute Tag_CPU_arch_profile '%s'), not Cortex-M: faultline decodes Cortex-M firmware only", path, a.Profile, core, a.Profile)
	case "M", "S":
		return nil
	}
	// No profile: architectures before ARMv6-M have no M profile.
	switch a.CPUArch {
	case "Pre-v4", "v4", "v4T", "v5T", "v5TE", "v5TEJ", "v6", "v6KZ", "v6T2", "v6K",
		"v8-A", "v8-R", "v8.1-A", "v8.2-A", "v8.3-A", "v9":
		return fmt.Errorf("%s: built for %s (build attribute Tag_CPU_arch), not a Cortex-M core: faultline decodes Cortex-M firmware only", path, core)
	}
	return nil
}

// CheckDumpRegisters refuses a dump that holds no register at all:
// nothing can be decoded from it (a backtrace needs at least the PC),
// and reporting "PC unknown" as a success would hide the problem.
func CheckDumpRegisters(d *crashdump.Dump) error {
	known := 0
	d.Regs.Each(func(unwinders.Reg, uint32) { known++ })
	if known == 0 {
		return fmt.Errorf("%s: the dump holds no registers: nothing to decode (want at least pc and sp; format %s)", d.Path, strings.TrimSpace(d.Format))
	}
	return nil
}
