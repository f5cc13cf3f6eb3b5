package cli

import (
	"bufio"
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

func newSymbolize() *cobra.Command {
	var elfPath, format string
	var demangle bool
	cmd := &cobra.Command{
		Use:   "symbolize --elf FW.elf [ADDR...]",
		Short: "Addresses to function, file:line and inlined callers (like addr2line -f -i)",
		Long: `symbolize prints, for each address, the function and file:line of every
inline level, innermost first, exactly as arm-none-eabi-addr2line -f -i -e
does. With no ADDR it reads addresses from standard input, one or more per
line. Addresses are hex (with or without 0x).

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
			if elfPath == "" {
				return usagef("--elf is required")
			}
			if format != "text" && format != "json" {
				return usagef("--format %q: want text or json", format)
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
				_, err = out.Write(text)
				return err
			}
			doString := func(s string) error {
				a, err := parseAddr(s)
				if err != nil {
					return usageError{err}
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
				sc := bufio.NewScanner(in)
				sc.Buffer(make([]byte, 64*1024), 1<<20)
				for sc.Scan() {
					if err := eachAddr(sc.Bytes(), do, doString); err != nil {
						return err
					}
				}
				if in.flushErr != nil {
					return in.flushErr
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("reading addresses from standard input: %w", err)
				}
			}
			if format == "json" {
				if results == nil {
					results = []elfsym.AddrLocations{}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(results)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&elfPath, "elf", "", "firmware ELF file (required)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text|json")
	cmd.Flags().BoolVarP(&demangle, "demangle", "C", false, "demangle C++ names (like addr2line -C)")
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

// eachAddr splits a line of input into fields as strings.Fields does and
// calls do with each field's address. A field that is a plain 1- to
// 8-digit hex number (with or without 0x) is parsed here without
// allocating; anything else (and a line with non-ASCII bytes, whose
// Unicode spaces strings.Fields would honour) goes through doString, which
// parses it with parseAddr and reports its errors.
func eachAddr(line []byte, do func(uint32) error, doString func(string) error) error {
	for _, c := range line {
		if c >= 0x80 {
			for _, s := range strings.Fields(string(line)) {
				if err := doString(s); err != nil {
					return err
				}
			}
			return nil
		}
	}
	for i := 0; i < len(line); {
		for i < len(line) && asciiSpace(line[i]) {
			i++
		}
		j := i
		for j < len(line) && !asciiSpace(line[j]) {
			j++
		}
		if i == j {
			break
		}
		tok := line[i:j]
		i = j
		if a, ok := quickHex(tok); ok {
			if err := do(a); err != nil {
				return err
			}
			continue
		}
		if err := doString(string(tok)); err != nil {
			return err
		}
	}
	return nil
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
