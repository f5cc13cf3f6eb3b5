package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/fleet/store"
)

// Files are the content-addressed uploaded files (fleet/blobs.Dir).
type Files interface {
	// Path is where the file of that SHA-256 lives.
	Path(sha256 string) (string, error)
	// ReadFile returns its bytes, at most limit of them.
	ReadFile(sha256 string, limit int64) ([]byte, error)
}

// SymbolLookup finds the uploaded ELFs of a build ID (store.Store).
type SymbolLookup interface {
	SymbolsByBuildID(ctx context.Context, buildID string) ([]store.Symbol, error)
}

// elfLabel is the name of the ELF d was decoded with, as the worker
// labels it.
func elfLabel(ctx context.Context, syms SymbolLookup, d store.Dump) string {
	if syms != nil && d.BuildID != "" {
		ys, _ := syms.SymbolsByBuildID(ctx, d.BuildID)
		for _, y := range ys {
			if y.SHA256 == d.ELF {
				switch {
				case y.Name != "":
					return y.Name
				case y.BuildID != "":
					return "build-id " + y.BuildID
				}
			}
		}
	}
	return "sha256 " + d.ELF
}

// FileReporter returns a Reporter that renders a decoded dump's report
// as `faultline analyze --format html` does: it reads the dump's bytes
// and the ELF it was decoded with from the uploaded files, decodes the dump again
// with opt and writes analysis.WriteHTML's page (no source lines: the
// server has no sources). Decoding is what `analyze` does per dump, a
// few milliseconds on the sample firmware; the page is not cached.
// syms names the ELF as the worker did (its upload name, else its build
// ID, else its SHA-256); it may be nil.
func FileReporter(files Files, syms SymbolLookup, opt analysis.Options) Reporter {
	return func(ctx context.Context, d store.Dump, w io.Writer) error {
		if d.ELF == "" {
			return errors.New("the dump was decoded with no ELF")
		}
		data, err := files.ReadFile(d.SHA256, crashdump.MaxManifestSize)
		if err != nil {
			return fmt.Errorf("the dump's file: %w", err)
		}
		dump, err := crashdump.Parse(data, d.ID, nil)
		if err != nil {
			return err
		}
		defer dump.Close()
		elfPath, err := files.Path(d.ELF)
		if err != nil {
			return err
		}
		f, err := os.Open(elfPath)
		if err != nil {
			return fmt.Errorf("the ELF %s: %w", d.ELF, err)
		}
		elf, err := elfsym.NewFile(f, elfLabel(ctx, syms, d))
		f.Close()
		if err != nil {
			return fmt.Errorf("the ELF %s: %w", d.ELF, err)
		}
		defer elf.Close()
		if err := ctx.Err(); err != nil {
			return err
		}
		rep, err := analysis.Analyze(elf, dump, opt)
		if err != nil {
			return err
		}
		return analysis.WriteHTML(w, rep, dump, analysis.HTMLOptions{ELF: elf})
	}
}
