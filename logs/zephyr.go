package logs

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// Zephyr's deferred logging (log v2 of Zephyr 2.6 to 3.1, "log_msg2", and
// the log_msg of 3.2 on) keeps each message in a multi-producer packet
// ring (struct mpsc_pbuf_buffer log_buffer over uint32_t buf32[] in
// subsys/logging/log_core.c) until the log thread or a panic flush prints
// it. A message is a header word (valid:1 busy:1 type:1 domain:3 level:3
// package_len:11 data_len:12; log_msg2: package_len:10 data_len:12
// reserved:1), the source (a struct log_source_const_data *, whose first
// field is the module name), a timestamp (and, with
// CONFIG_LOG_THREAD_ID_PREFIX, the thread), padding to the package
// alignment, then a cbprintf package (a descriptor word: length in words,
// appended string count, read-only and read-write string index counts; the
// format string pointer; the arguments, each aligned to its type; the
// string indexes; the appended strings, each its argument's word index and
// the NUL-terminated text) and the hexdump data. The ring's own words: a
// header with valid=0 busy=1 is a skip item of len = header>>2 words (the
// wrap padding); valid=1 is a message not yet freed (busy=1: claimed by
// the log thread); valid=0 busy=0 one already printed and freed, whose
// bytes stay until a newer message overwrites them.

// ZephyrBuffer locates Zephyr's log buffer in the firmware.
type ZephyrBuffer struct {
	Control uint32 // struct mpsc_pbuf_buffer log_buffer
	Data    uint32 // its storage, buf32
	Words   uint32 // the storage's size in 32-bit words
	// Version: 2 for log_msg2 (Zephyr 2.6 to 3.1), 3 for log_msg (3.2
	// on), 0 when the ELF does not say (both header layouts are tried).
	Version int
	// Freq and Div are log_output.c's freq and timestamp_div: with them
	// timestamps print as the console printed them
	// ([hh:mm:ss.mmm,uuu]); without them as raw counts.
	Freq, Div uint32
	// The log_const area (struct log_source_const_data, 8 bytes each) and
	// the log_dynamic one (4 bytes each, CONFIG_LOG_RUNTIME_FILTERING).
	ConstStart, ConstEnd, DynStart, DynEnd uint32
	// Layout is the message layout the ELF's DWARF states, nil without.
	Layout *zLayout
	// ThreadNames: the console prints thread names (k_thread has a name);
	// ThreadName gives a thread's name from the dump.
	ThreadNames bool
	ThreadName  func(uint32) (string, bool)
	// Dropped is log_core.c's dropped_cnt (messages dropped since the log
	// thread last printed its "--- N messages dropped ---"); -1: unknown.
	Dropped int64
}

// Entry is one decoded Zephyr log message: faultline.analysis/1
// logs[].entries.
type Entry struct {
	Address   string `json:"address"`
	Timestamp uint64 `json:"timestamp"`
	Level     string `json:"level"` // "err", "wrn", "inf", "dbg"; "raw" for printk text
	Source    string `json:"source,omitempty"`
	Text      string `json:"text"`
	// State: "output" (printed and freed; its bytes remain in the ring),
	// "claimed" (being printed when the dump was taken), "pending" (never
	// printed before the dump).
	State string `json:"state"`
	// Thread is the logging thread (CONFIG_LOG_THREAD_ID_PREFIX), 0 in
	// an interrupt; ThreadName how the console names it ("irq" for 0).
	Thread     string `json:"thread,omitempty"`
	ThreadName string `json:"thread_name,omitempty"`
	// Data is a hexdump message's data, in hex.
	Data string `json:"data,omitempty"`
	// Note says what could not be decoded.
	Note string `json:"note,omitempty"`
}

// Limits of the Zephyr decoder.
const (
	maxZephyrWords = 1 << 18 // ring words decoded (1 MiB)
	maxResync      = 4096    // start positions tried in the oldest part
	maxZString     = 256     // bytes of one %s argument or module name
	maxZFormat     = 512     // bytes of one format string
)

var zLevels = [...]string{"raw", "err", "wrn", "inf", "dbg"}

type zLayout struct {
	pkgBits uint   // package_len width: 11 (log_msg), 10 (log_msg2)
	head    uint32 // header bytes before the package, padding included
	align   uint32 // message alignment
	ts8     bool   // 64-bit timestamps
	srcOff  uint32 // the source's offset in the header
	tsOff   uint32 // the timestamp's
	tidOff  int    // the thread's (CONFIG_LOG_THREAD_ID_PREFIX), -1: none or unknown
	// fromDWARF: the fields come from the ELF's struct log_msg_hdr
	// (otherwise the defaults: source at 4, timestamp at 8, no thread).
	fromDWARF bool
}

func (l zLayout) name() string {
	v := "log_msg"
	if l.pkgBits == 10 {
		v = "log_msg2"
	}
	s := fmt.Sprintf("%s, %d-byte header, %d-byte alignment", v, l.head, l.align)
	if l.ts8 {
		s += ", 64-bit timestamps"
	}
	if l.tidOff >= 0 {
		s += ", thread ids"
	}
	if l.fromDWARF {
		s += " (from DWARF)"
	} else {
		s += " (no DWARF: found by walking the ring; a thread id prefix would not be shown)"
	}
	return s
}

func zLayouts(version int, dw *zLayout) []zLayout {
	var out []zLayout
	if dw != nil {
		// The debugging information fixes everything but the alignment
		// (sizeof(struct log_msg) is a multiple of it).
		for _, align := range []uint32{8, 16} {
			if dw.head%align == 0 {
				l := *dw
				l.align = align
				out = append(out, l)
			}
		}
		return out
	}
	bits := []uint{11, 10}
	switch version {
	case 3:
		bits = bits[:1]
	case 2:
		bits = bits[1:]
	}
	for _, b := range bits {
		for _, align := range []uint32{8, 16} {
			// desc, source, timestamp (4 or 8), [tid]
			for _, h := range []struct {
				raw uint32
				ts8 bool
			}{{12, false}, {16, false}, {16, true}, {20, true}} {
				head := (h.raw + align - 1) &^ (align - 1)
				out = append(out, zLayout{pkgBits: b, head: head, align: align, ts8: h.ts8, srcOff: 4, tsOff: 8, tidOff: -1})
			}
		}
	}
	return out
}

type zItem struct {
	at    uint32 // word index
	words uint32
	skip  bool
	msg   *Entry
	err   string
}

type zRing struct {
	mem   unwinders.Memory
	zb    ZephyrBuffer
	lay   zLayout
	words []uint32
}

func (r *zRing) bytesAt(word uint32, n uint32) []byte {
	b := make([]byte, 0, n)
	for i := uint32(0); i < n; i += 4 {
		var w [4]byte
		binary.LittleEndian.PutUint32(w[:], r.words[word+i/4])
		b = append(b, w[:]...)
	}
	return b[:n]
}

// item reads the item at word index at; strict asks for a plausible
// message (used when resynchronising in the oldest, overwritten part).
func (r *zRing) item(at uint32, state string, strict bool) (zItem, bool) {
	h := r.words[at]
	valid, busy := h&1 != 0, h&2 != 0
	if !valid && busy {
		n := h >> 2
		if n == 0 || n > uint32(len(r.words))-at {
			return zItem{}, false
		}
		return zItem{at: at, words: n, skip: true}, true
	}
	if h&4 != 0 {
		return zItem{}, false // type 1: a trace item, not a log message
	}
	level := (h >> 6) & 7
	mask := uint32(1)<<r.lay.pkgBits - 1
	plen := (h >> 9) & mask
	dlen := (h >> (9 + r.lay.pkgBits)) & 0xfff
	if level > 4 || plen < 8 && (plen != 0 || dlen == 0) {
		return zItem{}, false
	}
	total := (r.lay.head + plen + dlen + r.lay.align - 1) &^ (r.lay.align - 1)
	n := total / 4
	if n > uint32(len(r.words))-at {
		return zItem{}, false
	}
	it := zItem{at: at, words: n}
	e, err := r.decode(at, level, plen, dlen, state)
	if err != nil {
		if strict {
			return zItem{}, false
		}
		it.err = err.Error()
	}
	it.msg = e
	return it, true
}

func (r *zRing) addr(word uint32) uint32 { return r.zb.Data + 4*word }

// threadLabel names a thread as the console's prefix does: "irq" for none,
// its name (CONFIG_THREAD_NAME), else its address as %p prints it; "" when
// the name is not known from the dump.
func (r *zRing) threadLabel(tid uint32) string {
	switch {
	case !r.zb.ThreadNames && tid == 0:
		return "(nil)"
	case !r.zb.ThreadNames:
		return fmt.Sprintf("0x%x", tid)
	case tid == 0:
		return "irq"
	}
	if r.zb.ThreadName != nil {
		if n, ok := r.zb.ThreadName(tid); ok {
			return n
		}
	}
	return ""
}

func (r *zRing) decode(at, level, plen, dlen uint32, state string) (*Entry, error) {
	e := &Entry{Address: fmt.Sprintf("0x%08x", r.addr(at)), Level: zLevels[level], State: state}
	ts := uint64(r.words[at+r.lay.tsOff/4])
	if r.lay.ts8 {
		ts |= uint64(r.words[at+r.lay.tsOff/4+1]) << 32
	}
	e.Timestamp = ts
	if r.lay.tidOff >= 0 {
		tid := r.words[at+uint32(r.lay.tidOff)/4]
		e.Thread = fmt.Sprintf("0x%08x", tid)
		e.ThreadName = r.threadLabel(tid)
	}
	src := r.words[at+r.lay.srcOff/4]
	if level != 0 {
		name, err := r.source(src)
		if err != nil {
			return e, err
		}
		e.Source = name
	}
	pkg := r.bytesAt(at+r.lay.head/4, plen+dlen)
	text := ""
	if plen > 0 {
		t, err := r.format(pkg[:plen])
		if err != nil {
			return e, err
		}
		text = t
	}
	e.Text = text
	if dlen > 0 {
		e.Data = hex.EncodeToString(pkg[plen:])
	}
	return e, nil
}

// source names a message's module: a log_const entry, or (runtime
// filtering) the log_dynamic entry of the same index. A NULL source has
// no name.
func (r *zRing) source(src uint32) (string, error) {
	if src == 0 {
		return "", nil
	}
	zb := r.zb
	c := src
	switch {
	case zb.ConstEnd > zb.ConstStart && src >= zb.ConstStart && src < zb.ConstEnd:
	case zb.DynEnd > zb.DynStart && src >= zb.DynStart && src < zb.DynEnd &&
		(zb.DynEnd-zb.DynStart)/4 == (zb.ConstEnd-zb.ConstStart)/8:
		c = zb.ConstStart + (src-zb.DynStart)/4*8
	default:
		return "", fmt.Errorf("source 0x%08x is not a log_const or log_dynamic entry", src)
	}
	p, err := unwinders.ReadU32(r.mem, c)
	if err != nil {
		return "", fmt.Errorf("source 0x%08x: %v", src, err)
	}
	s, ok := cStringRaw(r.mem, p, maxZString)
	if !ok || s == "" {
		return "", fmt.Errorf("source 0x%08x: no module name at 0x%08x", src, p)
	}
	return s, nil
}

func cStringRaw(mem unwinders.Memory, addr uint32, max int) (string, bool) {
	var out []byte
	buf := make([]byte, 64)
	for len(out) < max {
		n := min(len(buf), max-len(out))
		if mem.Read(addr+uint32(len(out)), buf[:n]) != nil {
			// The string may end just before unreadable memory: go byte
			// by byte.
			var c [1]byte
			if mem.Read(addr+uint32(len(out)), c[:]) != nil {
				return "", false
			}
			if c[0] == 0 {
				return string(out), true
			}
			out = append(out, c[0])
			continue
		}
		for _, c := range buf[:n] {
			if c == 0 {
				return string(out), true
			}
			out = append(out, c)
		}
	}
	return string(out), false
}

// Zephyr decodes the log buffer: the messages already printed whose bytes
// remain (oldest first), then those claimed or pending at the dump.
func Zephyr(mem unwinders.Memory, zb ZephyrBuffer) (Log, error) {
	l := Log{Source: "zephyr", Name: "log_buffer", Address: fmt.Sprintf("0x%08x", zb.Data)}
	if zb.Words == 0 || zb.Words > maxZephyrWords {
		return l, fmt.Errorf("log buffer of %d words: want 1..%d", zb.Words, maxZephyrWords)
	}
	var ctl [4]uint32
	for i := range ctl {
		v, err := unwinders.ReadU32(mem, zb.Control+4*uint32(i))
		if err != nil {
			return l, fmt.Errorf("log_buffer at 0x%08x is not in the dump: %v", zb.Control, err)
		}
		ctl[i] = v
	}
	tmpWr, wr, tmpRd, rd := ctl[0], ctl[1], ctl[2], ctl[3]
	for _, v := range ctl {
		if v >= zb.Words {
			return l, fmt.Errorf("log_buffer at 0x%08x: indexes tmp_wr %d wr %d tmp_rd %d rd %d, not all below the size %d words (not Zephyr's mpsc_pbuf_buffer, or corrupt)", zb.Control, tmpWr, wr, tmpRd, rd, zb.Words)
		}
	}
	raw := make([]byte, 4*zb.Words)
	if err := mem.Read(zb.Data, raw); err != nil {
		return l, fmt.Errorf("the log buffer's storage (0x%08x, %d bytes) is not in the dump: %v", zb.Data, len(raw), err)
	}
	words := make([]uint32, zb.Words)
	for i := range words {
		words[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	var (
		best  []zItem
		lay   zLayout
		found bool
	)
	for _, cand := range zLayouts(zb.Version, zb.Layout) {
		r := &zRing{mem: mem, zb: zb, lay: cand, words: words}
		items, ok := r.walkAll(tmpWr, wr, tmpRd, rd)
		if ok {
			best, lay, found = items, cand, true
			break
		}
	}
	if !found && tmpWr == wr && tmpRd == rd && rd == wr && allZero(words) {
		l.Note = "the ring holds no message (nothing logged since it was initialised)"
		return l, nil
	}
	if !found {
		return l, fmt.Errorf("log buffer at 0x%08x: no message layout walks from the read index %d to the write index %d (the buffer is corrupt, or a layout faultline does not know)", zb.Data, rd, wr)
	}
	var b strings.Builder
	var entries []Entry
	bad, unread := 0, 0
	for _, it := range best {
		if it.skip || it.msg == nil {
			continue
		}
		e := *it.msg
		if it.err != "" {
			bad++
			e.Note = "not decoded: " + it.err
			e.Text = ""
			fmt.Fprintf(&b, "!! message at %s not decoded: %s\n", e.Address, it.err)
			entries = append(entries, e)
			continue
		}
		line := renderZ(e, zb)
		entries = append(entries, e)
		if e.State != "output" {
			unread += len(line)
		}
		b.WriteString(line)
	}
	text, trunc, un := render([]byte(b.String()), unread)
	l.Text, l.Truncated, l.Unread = text, trunc, un
	l.Entries = entries
	var notes []string
	counts := map[string]int{}
	for _, e := range entries {
		counts[e.State]++
	}
	var cs []string
	for _, st := range []struct{ state, what string }{{"output", "already printed"}, {"claimed", "being printed"}, {"pending", "not yet printed"}} {
		if n := counts[st.state]; n > 0 {
			cs = append(cs, fmt.Sprintf("%d %s", n, st.what))
		}
	}
	if len(cs) > 0 {
		notes = append(notes, "messages: "+strings.Join(cs, ", "))
	}
	notes = append(notes, lay.name())
	if zb.Freq == 0 || zb.Div == 0 {
		notes = append(notes, "timestamps are raw counts: log_output.c's freq is not in the dump")
	}
	if zb.Dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d messages dropped since the log thread last reported drops (dropped_cnt)", zb.Dropped))
	}
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%d messages not decoded", bad))
	}
	if wr != tmpWr {
		notes = append(notes, fmt.Sprintf("a message was being written at 0x%08x (not decoded)", zb.Data+4*wr))
	}
	l.Note = strings.Join(notes, "; ")
	return l, nil
}

// walkAll walks the ring: the freed (already printed) part from the
// write index round to the read index, oldest first, then the claimed and
// pending part from the read index to the write index. Each part must
// end exactly where the indexes say: that is the layout's proof.
func (r *zRing) walkAll(tmpWr, wr, tmpRd, rd uint32) ([]zItem, bool) {
	size := uint32(len(r.words))
	var out []zItem
	// Pending and claimed: rd .. wr.
	var live []zItem
	i, steps := rd, uint32(0)
	for i != wr {
		if steps++; steps > size+1 {
			return nil, false
		}
		state := "pending"
		if r.words[i]&3 == 3 {
			state = "claimed"
		} else if r.words[i]&1 == 0 {
			state = "output"
		}
		it, ok := r.item(i, state, false)
		if !ok {
			return nil, false
		}
		live = append(live, it)
		i += it.words
		if i > size {
			return nil, false
		}
		if i == size {
			i = 0
		}
	}
	// Freed: from tmp_wr (everything before it in the lap is newer or
	// being written) round to rd. Message starts are known at index 0
	// (every lap starts there) and, for the part after tmp_wr, found by
	// trying each start until a chain of messages ends exactly at the
	// end of the ring (or at rd).
	if rd <= tmpWr {
		if items, ok := r.resync(tmpWr, size); ok {
			out = append(out, items...)
		}
		if rd > 0 {
			items, ok := r.chain(0, rd, false)
			if !ok {
				if len(live) == 0 {
					return nil, false
				}
			} else {
				out = append(out, items...)
			}
		}
	} else if items, ok := r.resync(tmpWr, rd); ok {
		out = append(out, items...)
	}
	if len(live) == 0 && len(out) == 0 {
		return nil, false // nothing proves the layout
	}
	return append(out, live...), true
}

// chain walks freed messages from lo, which must end exactly at hi.
func (r *zRing) chain(lo, hi uint32, strict bool) ([]zItem, bool) {
	var out []zItem
	for i := lo; i < hi; {
		it, ok := r.item(i, "output", strict)
		if !ok || (it.msg == nil && !it.skip) {
			return nil, false
		}
		out = append(out, it)
		i += it.words
		if i > hi {
			return nil, false
		}
	}
	return out, true
}

func (r *zRing) resync(lo, hi uint32) ([]zItem, bool) {
	for s, n := lo, 0; s < hi && n < maxResync; s, n = s+1, n+1 {
		if items, ok := r.chain(s, hi, true); ok && len(items) > 0 {
			// A chain of only skip items proves nothing.
			for _, it := range items {
				if it.msg != nil {
					return items, true
				}
			}
		}
	}
	return nil, false
}

func allZero(w []uint32) bool {
	for _, v := range w {
		if v != 0 {
			return false
		}
	}
	return true
}
