package cli

import (
	"bytes"
	"io"
	"os"
	"regexp"

	"github.com/spf13/cobra"
)

// Colour on a terminal: --color auto (the default: only when stdout is a
// terminal, NO_COLOR is unset or empty and TERM is not "dumb"), always or
// never. Colour only marks what the plain text already says (the
// confidence of each frame, the exception, the stop line); it never moves
// a column.

// colorMode checks --color and says whether to colour w.
func colorMode(cmd *cobra.Command, w io.Writer) (bool, error) {
	mode, _ := cmd.Flags().GetString("color")
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb" && isTerminal(w), nil
	}
	return false, usagef("--color %q: want auto, always or never", mode)
}

const (
	sgrReset  = "\x1b[0m"
	sgrBold   = "\x1b[1m"
	sgrRed    = "\x1b[31m"
	sgrGreen  = "\x1b[32m"
	sgrYellow = "\x1b[33m"
)

var (
	confTag     = regexp.MustCompile(`\[[a-z]+, (high|medium|low)\]`)
	exceptionRE = regexp.MustCompile(`^(HardFault|MemManage|BusFault|UsageFault|SecureFault|NMI|DebugMonitor|SVCall|PendSV|SysTick|IRQ \d+|unknown)\b.*$`)
)

// colorWriter colours the text report line by line as it passes.
type colorWriter struct {
	w    io.Writer
	line []byte
}

func (c *colorWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			break
		}
		c.line = append(c.line, p[:i+1]...)
		p = p[i+1:]
		if _, err := c.w.Write(colorLine(c.line)); err != nil {
			return 0, err
		}
		c.line = c.line[:0]
	}
	return n, nil
}

// Flush writes a last line without a newline.
func (c *colorWriter) Flush() error {
	if len(c.line) == 0 {
		return nil
	}
	_, err := c.w.Write(colorLine(c.line))
	c.line = c.line[:0]
	return err
}

func colorLine(l []byte) []byte {
	body := bytes.TrimSuffix(l, []byte{'\n'})
	nl := l[len(body):]
	switch {
	case bytes.HasPrefix(body, []byte("Stop: ")) || bytes.HasPrefix(body, []byte("Crash dump ")):
		return join(sgrBold, body, nl)
	case exceptionRE.Match(body):
		return join(sgrBold+sgrRed, body, nl)
	}
	return confTag.ReplaceAllFunc(l, func(tag []byte) []byte {
		color := sgrGreen
		switch {
		case bytes.HasSuffix(tag, []byte("medium]")):
			color = sgrYellow
		case bytes.HasSuffix(tag, []byte("low]")):
			color = sgrRed
		}
		return append(append([]byte(color), tag...), sgrReset...)
	})
}

func join(sgr string, body, nl []byte) []byte {
	out := append([]byte(sgr), body...)
	out = append(out, sgrReset...)
	return append(out, nl...)
}
