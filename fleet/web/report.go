package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/fleet/store"
)

// Files are the content-addressed uploaded files (fleet/blobs.Dir, or
// the PostgreSQL store's Blobs).
type Files interface {
	// ReadFile returns the bytes of the file of that SHA-256, at most
	// limit of them.
	ReadFile(sha256 string, limit int64) ([]byte, error)
}

// maxELF bounds the ELF read for a report (the server's upload limit).
const maxELF = 256 << 20

// SymbolLookup finds uploaded ELFs (store.Store).
type SymbolLookup interface {
	SymbolsByBuildID(ctx context.Context, buildID string) ([]store.Symbol, error)
	Symbols(ctx context.Context) ([]store.Symbol, error)
}

// symbolOf finds the uploaded ELF of that SHA-256: among those of the
// build ID when it is known, else among all (a linear scan).
func symbolOf(ctx context.Context, syms SymbolLookup, sha, buildID string) (store.Symbol, bool) {
	if syms == nil || sha == "" {
		return store.Symbol{}, false
	}
	var ys []store.Symbol
	if buildID != "" {
		ys, _ = syms.SymbolsByBuildID(ctx, buildID)
	}
	if !slices.ContainsFunc(ys, func(y store.Symbol) bool { return y.SHA256 == sha }) {
		ys, _ = syms.Symbols(ctx)
	}
	for _, y := range ys {
		if y.SHA256 == sha {
			return y, true
		}
	}
	return store.Symbol{}, false
}

// elfLabel is the name of the ELF d was decoded with, as the worker
// labels it: its upload name, else its build ID, else its SHA-256.
func elfLabel(ctx context.Context, syms SymbolLookup, d store.Dump) string {
	if y, ok := symbolOf(ctx, syms, d.ELF, d.BuildID); ok {
		return y.Label()
	}
	return "sha256 " + d.ELF
}

// FileReporter returns a Reporter that renders a decoded dump's report
// as `faultline analyze --format html` does: it reads the dump's bytes
// and the ELF it was decoded with from the uploaded files, decodes the dump again
// with opt and writes htmlout.Write's page (no source lines: the
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
		image, err := files.ReadFile(d.ELF, maxELF)
		if err != nil {
			return fmt.Errorf("the ELF %s: %w", d.ELF, err)
		}
		elf, err := elfsym.NewFile(bytes.NewReader(image), elfLabel(ctx, syms, d))
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
		return htmlout.Write(w, rep, dump, htmlout.Options{ELF: elf})
	}
}
