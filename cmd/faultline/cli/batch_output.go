package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/faultline-dev/faultline/analysis/render/htmlout"
	"github.com/faultline-dev/faultline/analysis/render/jsonout"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/internal/outfile"
)

// reportWriter prints analyze's per-dump output as results arrive, in
// input order.
type reportWriter struct {
	w      io.Writer
	format string
	multi  bool             // a JSON array, pages into a directory
	n      int              // reports written
	enc    *jsonout.Encoder // jsonl

	// html
	dir     string
	elfPath string
	html    htmlout.Options
	pages   []string // page file name per job
	index   []htmlout.IndexEntry
	nextJob int
}

func newReportWriter(w io.Writer, format string, multi bool, bf *batchFlags, elf *elfsym.File, elfPath string) *reportWriter {
	rw := &reportWriter{w: w, format: format, multi: multi, dir: bf.output, elfPath: elfPath}
	if format == "html" {
		rw.html = htmlout.Options{ELF: elf, SourceDirs: sourceDirs(bf.sourceDir, elfPath)}
		if v := elf.Info().Vectors; v != nil {
			rw.html.StackTop = v.InitialSP
		}
	}
	return rw
}

// sourceDirs are the directories a relative source path is tried against:
// --source-dir, then the ELF's directory and its two parents (a build
// directory usually sits below the source tree), then the working
// directory.
func sourceDirs(flag, elfPath string) []string {
	var dirs []string
	if flag != "" {
		dirs = append(dirs, flag)
	}
	d := filepath.Dir(elfPath)
	for range 3 {
		dirs = append(dirs, d)
		d = filepath.Join(d, "..")
	}
	return append(dirs, ".")
}

func (rw *reportWriter) begin(jobs []batchJob) error {
	if rw.format != "html" || rw.dir == "" {
		return nil
	}
	if err := os.MkdirAll(rw.dir, 0o755); err != nil {
		return err
	}
	used := map[string]bool{"index": true}
	outputs := []string{filepath.Join(rw.dir, "index.html")}
	inputs := []string{rw.elfPath}
	for _, j := range jobs {
		rw.pages = append(rw.pages, pageName(j.name, used))
		outputs = append(outputs, filepath.Join(rw.dir, rw.pages[len(rw.pages)-1]))
		inputs = append(inputs, j.name)
	}
	// No page may replace an input (a dump named x.html in the output
	// directory, say).
	for _, o := range outputs {
		if err := outfile.CheckNotInput("-o", []string{o}, inputs); err != nil {
			return err
		}
	}
	return nil
}

// pageName turns a dump path into a unique page file name: the base name
// without its extension, unsafe characters replaced, "-2", "-3"... on a
// clash.
func pageName(dump string, used map[string]bool) string {
	base := filepath.Base(dump)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	base = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, base)
	if base == "" {
		base = "dump"
	}
	name := base
	for i := 2; used[strings.ToLower(name)]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	used[strings.ToLower(name)] = true
	return name + ".html"
}

// failed records a dump that could not be decoded.
func (rw *reportWriter) failed(r batchResult) {
	if rw.format == "html" && rw.dir != "" {
		rw.index = append(rw.index, htmlout.IndexEntry{Dump: r.job.name, Error: r.err.Error()})
	}
	rw.nextJob++
}

func (rw *reportWriter) report(r batchResult) error {
	defer func() { rw.nextJob++ }()
	rep := r.report
	first := rw.n == 0
	rw.n++
	switch rw.format {
	case "json":
		if !rw.multi {
			return jsonout.Write(rw.w, rep)
		}
		b, err := json.MarshalIndent(rep, "  ", "  ")
		if err != nil {
			return err
		}
		sep := ",\n  "
		if first {
			sep = "[\n  "
		}
		_, err = io.WriteString(rw.w, sep+string(b))
		return err
	case "jsonl":
		if rw.enc == nil {
			rw.enc = jsonout.NewEncoder()
		}
		line, err := rw.enc.Line(rep)
		if err != nil {
			return err
		}
		_, err = rw.w.Write(line)
		return err
	case "html":
		if rw.dir == "" {
			return htmlout.Write(rw.w, rep, r.dump, rw.html)
		}
		var buf bytes.Buffer
		if err := htmlout.Write(&buf, rep, r.dump, rw.html); err != nil {
			return err
		}
		page := rw.pages[rw.nextJob]
		if err := outfile.WriteFile(filepath.Join(rw.dir, page), buf.Bytes()); err != nil {
			return err
		}
		rw.index = append(rw.index, htmlout.IndexEntryFor(rep, page))
		return nil
	default:
		if !first {
			if _, err := fmt.Fprintln(rw.w); err != nil {
				return err
			}
		}
		return textout.Write(rw.w, rep)
	}
}

// end closes the JSON array or writes the HTML index.
func (rw *reportWriter) end() error {
	switch {
	case rw.format == "json" && rw.multi && rw.n == 0:
		_, err := io.WriteString(rw.w, "[]\n")
		return err
	case rw.format == "json" && rw.multi:
		_, err := io.WriteString(rw.w, "\n]\n")
		return err
	case rw.format == "html" && rw.dir != "":
		var buf bytes.Buffer
		if err := htmlout.WriteIndex(&buf, rw.index); err != nil {
			return err
		}
		return outfile.WriteFile(filepath.Join(rw.dir, "index.html"), buf.Bytes())
	}
	return nil
}
