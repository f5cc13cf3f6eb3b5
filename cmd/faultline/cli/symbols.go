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
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/symstore"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// maxStoreELFs bounds how many ELF files a symbol store indexes.
const maxStoreELFs = 4096

// dumpAnalyzer decodes one dump: an *analysis.Analyzer for one ELF, or a
// symbolStore that picks the ELF per dump.
type dumpAnalyzer interface {
	Analyze(d *crashdump.Dump) (*report.Report, error)
}

// symbolStore is the --symbols DIR of analyze: the firmware ELFs of many
// builds (any layout, including GDB's and debuginfod's
// .build-id/xx/rest.debug tree), each opened and indexed once, with one
// Analyzer each; the symstore.Set picks the ELF per dump (by build ID,
// else by content). It is safe for concurrent use.
type symbolStore struct {
	*symstore.Set
	files []*elfsym.File
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
	s := &symbolStore{}
	var elfs []symstore.ELF
	var skipped []string
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() && e.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		if len(elfs) >= maxStoreELFs {
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
		s.files = append(s.files, f)
		elfs = append(elfs, symstore.ELF{Name: p, BuildID: f.BuildID(), Analyzer: an})
		return nil
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	if len(elfs) == 0 {
		msg := fmt.Sprintf("--symbols %s: no firmware ELF file in the directory", dir)
		if len(skipped) > 0 {
			msg += " (" + strings.Join(skipped, "; ") + ")"
		}
		return nil, usageError{fmt.Errorf("%s", msg)}
	}
	sort.SliceStable(elfs, func(i, j int) bool { return elfs[i].Name < elfs[j].Name })
	s.Set = symstore.New(dir, elfs)
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
	for _, f := range s.files {
		f.Close()
	}
}
