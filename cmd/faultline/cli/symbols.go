package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// maxStoreELFs bounds how many ELF files a symbol store indexes.
const maxStoreELFs = 4096

// dumpAnalyzer decodes one dump: an *analysis.Analyzer for one ELF, or a
// symbolStore that picks the ELF per dump.
type dumpAnalyzer interface {
	Analyze(d *crashdump.Dump) (*analysis.Report, error)
}

// symbolStore is the --symbols DIR of analyze: the firmware ELFs of many
// builds (any layout, including GDB's and debuginfod's
// .build-id/xx/rest.debug tree), each opened and indexed once, with one
// Analyzer each. A dump is decoded with the ELF whose GNU build ID it
// carries; a dump without one (or with one the store lacks) is tried
// against every ELF and paired by content (analysis pairing: verified
// first, then the unverified pairing with the most evidence; never a
// mismatch). An Analyzer is safe for concurrent use, so the store is too.
type symbolStore struct {
	dir  string
	elfs []storeELF     // in path order
	byID map[string]int // build ID -> index in elfs (the first path)
}

type storeELF struct {
	path string
	f    *elfsym.File
	an   *analysis.Analyzer
	id   string
}

// openSymbolStore indexes every ELF file under dir (files that do not
// start with the ELF magic are skipped silently; ELFs faultline cannot use
// are reported in the error only when none is usable).
func openSymbolStore(dir string, opt analysis.Options) (*symbolStore, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, usagef("--symbols %s: %v", dir, fsReasonOf(err))
	}
	if !st.IsDir() {
		return nil, usagef("--symbols %s: not a directory: give the directory of ELF files (or a .build-id tree)", dir)
	}
	s := &symbolStore{dir: dir, byID: map[string]int{}}
	var skipped []string
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if len(s.elfs) >= maxStoreELFs {
			return fmt.Errorf("--symbols %s: more than %d ELF files", dir, maxStoreELFs)
		}
		if !hasELFMagic(p) {
			return nil
		}
		f, err := openFirmware(p)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		an, err := analysis.NewAnalyzer(f, opt)
		if err != nil {
			f.Close()
			return usageError{err}
		}
		s.elfs = append(s.elfs, storeELF{path: p, f: f, an: an, id: f.BuildID()})
		return nil
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(s.elfs) == 0 {
		msg := fmt.Sprintf("--symbols %s: no firmware ELF file in the directory", dir)
		if len(skipped) > 0 {
			msg += " (" + strings.Join(skipped, "; ") + ")"
		}
		return nil, usageError{fmt.Errorf("%s", msg)}
	}
	sort.SliceStable(s.elfs, func(i, j int) bool { return s.elfs[i].path < s.elfs[j].path })
	for i, e := range s.elfs {
		if _, dup := s.byID[e.id]; e.id != "" && !dup {
			s.byID[e.id] = i
		}
	}
	return s, nil
}

func hasELFMagic(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && bytes.Equal(b[:], []byte("\x7fELF"))
}

func fsReasonOf(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Close releases every ELF.
func (s *symbolStore) Close() {
	for _, e := range s.elfs {
		e.f.Close()
	}
}

// Analyze decodes d with its own ELF (see symbolStore).
func (s *symbolStore) Analyze(d *crashdump.Dump) (*analysis.Report, error) {
	var note string
	if d.BuildID != "" {
		if i, ok := s.byID[d.BuildID]; ok {
			return s.elfs[i].an.Analyze(d)
		}
		note = fmt.Sprintf("the dump's build-id %s is not in %s; ", d.BuildID, s.dir)
	}
	var best *analysis.Report
	for _, e := range s.elfs {
		r, err := e.an.Analyze(d)
		if err != nil || r.Pairing == nil {
			continue
		}
		switch r.Pairing.Verdict {
		case analysis.PairVerified:
			return r, nil
		case analysis.PairUnverified:
			// Chosen by content, an ELF must not be doubted by it.
			if len(r.Pairing.Doubts) == 0 && (best == nil || len(r.Pairing.Evidence) > len(best.Pairing.Evidence)) {
				best = r
			}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%s: %sno ELF in %s pairs with the dump (%d tried, each a mismatch or doubted by the dump's contents)", d.Path, note, s.dir, len(s.elfs))
	}
	best.Warnings = append(best.Warnings, fmt.Sprintf("%spaired with %s by content (%s)", note, best.ELFInfo.Path, strings.Join(best.Pairing.Evidence, "; ")))
	return best, nil
}
