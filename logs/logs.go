// Package logs finds the log text firmware left in RAM: SEGGER RTT up
// buffers (found by their control block's ID string) and user-named ring
// buffers or strings. Every read goes through the dump's memory and is
// bounded; bytes that are not text are escaped.
package logs

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Limits.
const (
	MaxText     = 64 << 10 // bytes of one log shown
	maxBuffers  = 16       // RTT up/down buffers accepted in a control block
	maxName     = 64       // bytes of a buffer's name
	maxBlocks   = 4        // RTT control blocks reported
	maxScanSize = 16 << 20 // bytes of RAM scanned for the ID
)

// Log is one log found in memory: faultline.analysis/1 "logs".
type Log struct {
	Source string `json:"source"` // "rtt", "zephyr" or "symbol"
	Name   string `json:"name"`
	Text   string `json:"text"`
	// Truncated: the text is longer than MaxText and only its end is
	// shown.
	Truncated bool `json:"truncated"`
	// Address is where the buffer is (hex).
	Address string `json:"address,omitempty"`
	// Unread is how many bytes at the end of Text the host had not read
	// yet (RTT's RdOff to WrOff).
	Unread int `json:"unread,omitempty"`
	// Note says anything a reader should know ("the buffer has wrapped: the
	// oldest text was overwritten").
	Note string `json:"note,omitempty"`
	// Entries: the decoded messages of a structured log (Zephyr's log
	// buffer), oldest first; Text is their console rendering.
	Entries []Entry `json:"entries,omitempty"`
}

// rttID is the control block's identification string.
var rttID = []byte("SEGGER RTT\x00")

// FindRTT scans ranges (where the firmware's static data lives: its
// writable sections, or the dump's RAM) for SEGGER RTT control blocks and
// returns the text of each up buffer, read through mem (which may also
// hold the firmware image, where the buffers' names usually are). Memory
// the dump does not hold is skipped; at most maxScanSize bytes are read.
func FindRTT(mem unwinders.Memory, ranges []unwinders.Range) ([]Log, []string) {
	var out []Log
	var warns []string
	blocks, scanned := 0, 0
	seen := map[uint32]bool{}
	const chunk = 4096
	buf := make([]byte, chunk+len(rttID))
	for _, r := range ranges {
		for a := uint64(r.Lo) &^ 3; a < uint64(r.Hi) && blocks < maxBlocks && scanned < maxScanSize; a += chunk {
			n := chunk + len(rttID)
			if rest := uint64(r.Hi) - a; rest < uint64(n) {
				n = int(rest)
			}
			b := buf[:n]
			scanned += chunk // tried, read or not: the bound is on the work
			if mem.Read(uint32(a), b) != nil {
				// The end of the chunk may run past the dump: try the chunk alone.
				if n > chunk {
					b = buf[:chunk]
				}
				if mem.Read(uint32(a), b) != nil {
					continue
				}
			}
			for off := 0; off < len(b) && off < chunk; {
				i := bytes.Index(b[off:], rttID)
				if i < 0 {
					break
				}
				at := off + i
				off = at + 1
				if at%4 != 0 || at >= chunk {
					continue // the control block is a word-aligned struct
				}
				addr := uint32(a) + uint32(at)
				if seen[addr] {
					continue // ranges may overlap
				}
				seen[addr] = true
				logs, err := readRTT(mem, addr)
				if err != nil {
					warns = append(warns, fmt.Sprintf("SEGGER RTT control block at 0x%08x: %v", addr, err))
					continue
				}
				blocks++
				out = append(out, logs...)
			}
		}
	}
	return out, warns
}

func u32(mem unwinders.Memory, addr uint32) (uint32, error) {
	return unwinders.ReadU32(mem, addr)
}

func readRTT(mem unwinders.Memory, cb uint32) ([]Log, error) {
	nUp, err := u32(mem, cb+16)
	if err != nil {
		return nil, err
	}
	nDown, err := u32(mem, cb+20)
	if err != nil {
		return nil, err
	}
	if nUp == 0 || nUp > maxBuffers || nDown > maxBuffers {
		return nil, fmt.Errorf("MaxNumUpBuffers %d, MaxNumDownBuffers %d: want 1..%d and 0..%d (not a control block, or an uninitialised one)", nUp, nDown, maxBuffers, maxBuffers)
	}
	var out []Log
	for i := uint32(0); i < nUp; i++ {
		d := cb + 24 + 24*i
		var f [6]uint32
		for k := range f {
			if f[k], err = u32(mem, d+4*uint32(k)); err != nil {
				return out, fmt.Errorf("up buffer %d: %v", i, err)
			}
		}
		name, pBuf, size, wr, rd := f[0], f[1], f[2], f[3], f[4]
		if pBuf == 0 || size == 0 {
			continue // an unused buffer
		}
		l := Log{Source: "rtt", Name: fmt.Sprintf("up buffer %d", i), Address: fmt.Sprintf("0x%08x", pBuf)}
		if name != 0 {
			if n, ok := cString(mem, name, maxName); ok && n != "" {
				l.Name = n
			}
		}
		if wr >= size || rd >= size {
			return out, fmt.Errorf("up buffer %d (%s): WrOff %d or RdOff %d not below SizeOfBuffer %d", i, l.Name, wr, rd, size)
		}
		if size > 16<<20 {
			return out, fmt.Errorf("up buffer %d (%s): SizeOfBuffer %d is implausible", i, l.Name, size)
		}
		buf := make([]byte, size)
		if err := mem.Read(pBuf, buf); err != nil {
			l.Note = fmt.Sprintf("the buffer's memory is not in the dump: %v", err)
			out = append(out, l)
			continue
		}
		text, wrapped := ring(buf, wr)
		unread := int((wr + size - rd) % size)
		if unread > len(text) {
			unread = len(text)
		}
		if wrapped {
			l.Note = "the ring has wrapped: older text was overwritten"
		}
		l.Text, l.Truncated, l.Unread = render(text, unread)
		out = append(out, l)
	}
	return out, nil
}

// ring returns a ring buffer's bytes oldest first, the next write at wr:
// what follows wr (older, when the ring has wrapped) then what precedes
// it. Unwritten bytes (NULs after wr, never written) are dropped.
func ring(buf []byte, wr uint32) ([]byte, bool) {
	older := buf[wr:]
	// RTT keeps the byte at WrOff free; bytes after it are either older
	// text (wrapped) or never written (zero).
	i := 0
	for i < len(older) && older[i] == 0 {
		i++
	}
	older = older[i:]
	out := make([]byte, 0, len(buf))
	out = append(out, older...)
	out = append(out, buf[:wr]...)
	return out, len(older) > 0
}

// render escapes text: printable ASCII, newline and tab as they are,
// everything else as \xNN; keeps the last MaxText bytes. unread counts
// raw bytes and is returned counted in rendered bytes.
func render(text []byte, unread int) (string, bool, int) {
	truncated := false
	if len(text) > MaxText {
		text = text[len(text)-MaxText:]
		truncated = true
		if unread > len(text) {
			unread = len(text)
		}
	}
	var b strings.Builder
	cut := len(text) - unread
	unreadOut := 0
	for i, c := range text {
		n := b.Len()
		switch {
		case c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f && c != '\\'):
			b.WriteByte(c)
		case c == '\\':
			b.WriteString(`\\`)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
		if i >= cut {
			unreadOut += b.Len() - n
		}
	}
	return b.String(), truncated, unreadOut
}

func cString(mem unwinders.Memory, addr uint32, max int) (string, bool) {
	var out []byte
	var c [1]byte
	for i := 0; i < max; i++ {
		if mem.Read(addr+uint32(i), c[:]) != nil {
			return "", false
		}
		if c[0] == 0 {
			s, _, _ := render(out, 0)
			return s, true
		}
		out = append(out, c[0])
	}
	s, _, _ := render(out, 0)
	return s, true
}

// Symbol reads a user-named log: the object at addr of size bytes. With
// a write index (hasIndex), it is a ring buffer whose next write is at
// index; otherwise a NUL-terminated string (bounded by size).
func Symbol(mem unwinders.Memory, name string, addr, size uint32, index uint32, hasIndex bool) (Log, error) {
	l := Log{Source: "symbol", Name: name, Address: fmt.Sprintf("0x%08x", addr)}
	if size == 0 {
		size = MaxText
	}
	if size > 16<<20 {
		return l, fmt.Errorf("%s: size %d is implausible", name, size)
	}
	buf := make([]byte, size)
	if err := mem.Read(addr, buf); err != nil {
		return l, fmt.Errorf("%s: not in the dump: %v", name, err)
	}
	var text []byte
	if hasIndex {
		if index >= size {
			index %= size
		}
		var wrapped bool
		text, wrapped = ring(buf, index)
		// A ring of NUL-terminated messages: drop NULs between them.
		text = bytes.ReplaceAll(text, []byte{0}, nil)
		if wrapped {
			l.Note = "the ring has wrapped: older text was overwritten"
		}
	} else {
		text = buf
		if i := bytes.IndexByte(buf, 0); i >= 0 {
			text = buf[:i]
		}
	}
	l.Text, l.Truncated, _ = render(text, 0)
	return l, nil
}
