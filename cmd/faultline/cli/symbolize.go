package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faultline-dev/faultline/elfsym"
)

// a2lFlags are addr2line's own flags. Giving any of -e, -a, -p, -f or -i
// makes symbolize print exactly what arm-none-eabi-addr2line prints with
// the same flags; without them it prints what addr2line -f -i prints.
type a2lFlags struct {
	exe                               string
	addresses, pretty, functions, inl bool
	on                                bool // addr2line mode
}

func newSymbolize() *cobra.Command {
	var elfPath, format string
	var demangle bool
	var a2l a2lFlags
	cmd := &cobra.Command{
		Use:   "symbolize --elf FW.elf [ADDR...]",
		Short: "Addresses to function, file:line and inlined callers (like addr2line -f -i)",
		Long: `symbolize prints, for each address, the function and file:line of every
inline level, innermost first, exactly as arm-none-eabi-addr2line -f -i -e
does. With no ADDR it reads addresses from standard input and, like
addr2line, answers each line once: its first field is the address, the
rest of the line is ignored, an empty line is address 0, and a line may be
of any length. Addresses are hex (with or without 0x).

It is a drop-in for addr2line in scripts: with any of addr2line's flags
-e FILE (--exe), -a (--addresses), -p (--pretty-print), -f (--functions)
and -i (--inlines), the output is what addr2line prints with the same
flags (only file:line per address unless -f; only the innermost level
unless -i; -a the address first; -p one line per level, callers as
" (inlined by) ..."); -C demangles in both modes. An unreadable address
prints what addr2line prints for an address it knows nothing about ("??"
for the address with -a, "??" and "??:0"), is reported on stderr, and the
stream goes on; the exit status is then 1.

The text form copies addr2line's conventions, its quirks included: an
address in the padding past a function's end is named after that function
with an unknown line, and the innermost discriminator is repeated on the
inlined callers' lines. --format json tells the padding apart
("placement": "gap") and gives each call site's own line. Two deliberate
differences remain: DWARF of code removed by --gc-sections (relocated to
address 0) is never used, and clang's DWARF 5 inline ranges
(DW_FORM_rnglistx), which binutils 2.40 skips, are followed, as
llvm-symbolizer does.`,
		RunE: func(cmd *cobra.Command, addrs []string) error {
			fl := cmd.Flags()
			for _, n := range []string{"exe", "addresses", "pretty-print", "functions", "inlines"} {
				a2l.on = a2l.on || fl.Changed(n)
			}
			switch {
			case elfPath != "" && a2l.exe != "" && elfPath != a2l.exe:
				return usagef("--elf %s and -e %s: give the ELF once", elfPath, a2l.exe)
			case elfPath == "":
				elfPath = a2l.exe
			}
			if elfPath == "" {
				return usagef("--elf (or -e) is required")
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
			}
			if a2l.on && format != "text" {
				return usagef("addr2line's flags (-a -p -f -i -e) select its text output: not with --format %s", format)
			}
			elf, err := openFirmware(elfPath)
			if err != nil {
				return err
			}
			defer elf.Close()
			for _, w := range elf.Warnings() {
				fmt.Fprintf(cmd.ErrOrStderr(), "faultline: warning: %s\n", w)
			}
			out := bufio.NewWriterSize(cmd.OutOrStdout(), 64*1024)
			defer out.Flush()
			var (
				results []elfsym.AddrLocations
				text    []byte // one address's text, reused
				pretty  []byte // the same in addr2line's form, reused
			)
			do := func(a uint32) error {
				if format == "json" {
					results = append(results, elf.Describe(a))
					return nil
				}
				var err error
				// Names are demangled only with -C, once each.
				text, err = elf.AppendAddr2LineText(text[:0], a, demangle)
				if err != nil {
					// addr2line prints what it can and carries on.
					fmt.Fprintf(cmd.ErrOrStderr(), "faultline: 0x%08x: %v\n", a, err)
				}
				if a2l.on {
					pretty = a2l.render(pretty[:0], fmt.Sprintf("0x%08x", a), text)
					_, err = out.Write(pretty)
					return err
				}
				_, err = out.Write(text)
				return err
			}
			unreadable := 0
			doString := func(s string) error {
				a, err := parseAddr(s)
				if err != nil {
					// addr2line's answer for an address it knows
					// nothing about, and the stream goes on.
					unreadable++
					out.Flush()
					fmt.Fprintf(cmd.ErrOrStderr(), "faultline: %v\n", err)
					if format == "json" {
						results = append(results, elfsym.AddrLocations{})
						return nil
					}
					if a2l.on {
						pretty = a2l.render(pretty[:0], "??", []byte(unknownAddr2Line))
						_, err = out.Write(pretty)
						return err
					}
					_, err = io.WriteString(out, unknownAddr2Line)
					return err
				}
				return do(a)
			}
			if len(addrs) > 0 {
				for _, s := range addrs {
					if err := doString(s); err != nil {
						return err
					}
				}
			} else {
				if f, ok := cmd.InOrStdin().(*os.File); ok && f == os.Stdin && os.Getenv("GOGC") == "" && largeELF(elfPath) {
					// A stream of addresses may decode every unit of a
					// large ELF: its tables become most of the heap and
					// stay live, so the default collector target (twice
					// the live heap) would double the peak memory. Half
					// as much headroom costs a few percent of CPU. A
					// firmware-sized ELF keeps the default: its tables
					// are a few MB, and a tighter target there only
					// makes the collector run more often while they are
					// built. (Only in a process of our own: tests run
					// this in-process.)
					defer debug.SetGCPercent(debug.SetGCPercent(50))
				}
				// Like addr2line, answer every address that has arrived
				// before waiting for more: the output is flushed whenever
				// reading would block, so symbolize works as a
				// co-process over a pipe, yet writes in large blocks
				// when the input is a file.
				in := &flushingReader{r: cmd.InOrStdin(), w: out}
				br := bufio.NewReaderSize(in, 64*1024)
				var field []byte
				for {
					var ok bool
					var err error
					field, ok, err = firstField(br, field)
					if in.flushErr != nil {
						return in.flushErr
					}
					if err != nil {
						return fmt.Errorf("reading addresses from standard input: %w", err)
					}
					if !ok {
						break
					}
					if err := lineAddr(field, do, doString); err != nil {
						return err
					}
				}
			}
			if format == "json" {
				if results == nil {
					results = []elfsym.AddrLocations{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(results); err != nil {
					return err
				}
			}
			if unreadable > 0 {
				out.Flush()
				return fmt.Errorf("%d unreadable address%s (answered ??)", unreadable, map[bool]string{true: "", false: "es"}[unreadable == 1])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&elfPath, "elf", "", "firmware ELF file (required, or -e)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text|json")
	cmd.Flags().BoolVarP(&demangle, "demangle", "C", false, "demangle C++ names (like addr2line -C)")
	cmd.Flags().StringVarP(&a2l.exe, "exe", "e", "", "addr2line -e: the ELF (as --elf), and addr2line's output form")
	cmd.Flags().BoolVarP(&a2l.addresses, "addresses", "a", false, "addr2line -a: print each address before its answer")
	cmd.Flags().BoolVarP(&a2l.pretty, "pretty-print", "p", false, "addr2line -p: one line per inline level (\"f at file:line\")")
	cmd.Flags().BoolVarP(&a2l.functions, "functions", "f", false, "addr2line -f: print function names")
	cmd.Flags().BoolVarP(&a2l.inl, "inlines", "i", false, "addr2line -i: print the inlined callers too")
	return cmd
}

// largeELFBytes is the ELF size from which symbolize trades a little CPU
// for memory (GOGC=50): far above firmware images (a few MB with DWARF),
// reached by generated or application-processor images.
const largeELFBytes = 32 << 20

// largeELF reports whether the file at path has at least largeELFBytes.
func largeELF(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Size() >= largeELFBytes
}

// unknownAddr2Line is what addr2line -f prints for an address it knows
// nothing about.
const unknownAddr2Line = "??\n??:0\n"

// render turns one address's answer in addr2line -f -i form (pairs of
// function and file:line lines, as elfsym writes them) into addr2line's
// form for the flags: addr is what -a prints for it.
func (f *a2lFlags) render(dst []byte, addr string, text []byte) []byte {
	if f.addresses {
		dst = append(dst, addr...)
		if f.pretty {
			dst = append(dst, ": "...)
		} else {
			dst = append(dst, '\n')
		}
	}
	if string(text) == unknownAddr2Line {
		// Not found at all: no "at" in the pretty form.
		if f.functions {
			if f.pretty {
				dst = append(dst, "?? "...)
			} else {
				dst = append(dst, "??\n"...)
			}
		}
		return append(dst, "??:0\n"...)
	}
	for level := 0; len(text) > 0; level++ {
		fn, rest, _ := bytes.Cut(text, []byte{'\n'})
		loc, rest, _ := bytes.Cut(rest, []byte{'\n'})
		text = rest
		if level > 0 {
			if !f.inl {
				break
			}
			if f.pretty {
				dst = append(dst, " (inlined by) "...)
			}
		}
		if f.functions {
			dst = append(dst, fn...)
			if f.pretty {
				dst = append(dst, " at "...)
			} else {
				dst = append(dst, '\n')
			}
		}
		dst = append(append(dst, loc...), '\n')
	}
	return dst
}

// flushingReader flushes w before each read from r, so that what has been
// answered is out before the reader may block. A failed flush ends the
// input and is kept in flushErr.
type flushingReader struct {
	r        io.Reader
	w        *bufio.Writer
	flushErr error
}

func (f *flushingReader) Read(p []byte) (int, error) {
	if err := f.w.Flush(); err != nil {
		f.flushErr = err
		return 0, err
	}
	return f.r.Read(p)
}

// maxField bounds the first field of an input line that firstField
// keeps: no address is longer; a longer field is kept one byte past the
// bound, so it fails to parse as one.
const maxField = 64

// firstField reads one line of br, of any length, and returns its first
// field (ASCII whitespace separates fields; CR is whitespace), in buf's
// memory, at most maxField+1 bytes. ok is false at the end of the input.
// Only the first field is an address, as for addr2line, which answers
// each line once whatever follows the number.
func firstField(br *bufio.Reader, buf []byte) (field []byte, ok bool, err error) {
	buf = buf[:0]
	started, ended, any := false, false, false
	for {
		chunk, err := br.ReadSlice('\n')
		any = any || len(chunk) > 0
		for _, c := range chunk {
			if ended || c == '\n' {
				break
			}
			if asciiSpace(c) {
				ended = started
				continue
			}
			started = true
			if len(buf) <= maxField {
				buf = append(buf, c)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue // a long line: read on to its end
		case err == io.EOF:
			return buf, any, nil
		case err != nil:
			return buf, false, err
		}
		return buf, true, nil
	}
}

// lineAddr answers one input line from its first field: a plain 1- to
// 8-digit hex number (with or without 0x) is parsed here without
// allocating; anything else goes through doString, which parses it with
// parseAddr and reports its errors. An empty line is address 0, which is
// what addr2line answers for it.
func lineAddr(field []byte, do func(uint32) error, doString func(string) error) error {
	if len(field) == 0 {
		return do(0)
	}
	if a, ok := quickHex(field); ok {
		return do(a)
	}
	return doString(string(field))
}

// asciiSpace is the ASCII subset of unicode.IsSpace.
func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// quickHex parses 1 to 8 hex digits, optionally after 0x or 0X: the
// common case of parseAddr, which accepts the same values.
func quickHex(tok []byte) (uint32, bool) {
	if len(tok) > 2 && tok[0] == '0' && (tok[1] == 'x' || tok[1] == 'X') {
		tok = tok[2:]
	}
	if len(tok) == 0 || len(tok) > 8 {
		return 0, false
	}
	var v uint32
	for _, c := range tok {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, true
}

// parseAddr accepts hex with or without 0x, as addr2line does.
func parseAddr(s string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("address %q: want a 32-bit hex number", s)
	}
	return uint32(v), nil
}
