package gdbserver

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// threadID is the id of the crashing thread, the one the target stopped
// in. With an RTOS the other threads follow as 2, 3, ...
const threadID = 1

// selection is one session's thread state: the thread g and p read (Hg)
// and how far qsThreadInfo has listed the threads. The zero value selects
// the crashing thread.
type selection struct {
	g      int // index into Target.threads
	listed int // threads already sent by qfThreadInfo/qsThreadInfo
}

// maxThreadIDs is how many thread ids one qfThreadInfo/qsThreadInfo reply
// carries.
const maxThreadIDs = 64

// reply is what the dispatcher answers to one packet.
type reply struct {
	data  []byte // the packet data to send (before escaping)
	none  bool   // send no packet at all (k)
	end   bool   // end the session after sending
	noAck bool   // switch to no-ack mode after sending (QStartNoAckMode)
}

// Replies with a fixed meaning.
const (
	replyOK       = "OK"
	replyReadOnly = "E01" // the dump cannot be changed or run
	replyBadArgs  = "E01" // malformed arguments
	replyTooLong  = "E02" // a packet longer than Config.MaxPacket
	replyNoAnnex  = "E00" // qXfer of an object or annex we do not have
	replyUnmapped = "E01" // memory that neither the dump nor the ELF holds
	replyNoReg    = "E01" // a register number the target description lacks
)

// text is a reply of fixed text; text("") is the empty reply that means
// "unsupported".
func text(s string) reply { return reply{data: []byte(s)} }

// supported is the qSupported reply. PacketSize is hex.
func supported(maxPacket int) reply {
	return reply{data: fmt.Appendf(nil, "PacketSize=%x;qXfer:features:read+;qXfer:memory-map:read+;qXfer:threads:read+;QStartNoAckMode+", maxPacket)}
}

// dispatch answers one packet of a session that has not chosen a thread.
func (t *Target) dispatch(pkt []byte, maxPacket int) reply {
	var sel selection
	return t.dispatchIn(&sel, pkt, maxPacket)
}

// dispatchIn answers one packet (its data after run-length decoding) of
// the session whose thread state is sel. It never panics and never
// allocates more than a few times maxPacket.
func (t *Target) dispatchIn(sel *selection, pkt []byte, maxPacket int) reply {
	if len(pkt) == 0 {
		return text("")
	}
	args := string(pkt[1:])
	switch pkt[0] {
	case '?':
		return t.stopReply()
	case 'g':
		if len(pkt) != 1 {
			return text(replyBadArgs)
		}
		var out []byte
		regs := t.regsOf(sel)
		for _, n := range t.regOrder() {
			v, _ := t.register(regs, n)
			out = appendReg(out, v)
		}
		return reply{data: out}
	case 'p':
		n, ok := parseHex(args, 8)
		if !ok {
			return text(replyBadArgs)
		}
		v, ok := t.register(t.regsOf(sel), int(min(n, 1<<16)))
		if !ok {
			return text(replyNoReg)
		}
		return reply{data: appendReg(nil, v)}
	case 'm':
		return t.readMemory(args, maxPacket)
	case 'G', 'P', 'M', 'X', 'c', 'C', 's', 'S', 'i', 'I', 'A', 'R', 'W':
		return text(replyReadOnly)
	case 'Z', 'z':
		return text("")
	case 'D':
		return reply{data: []byte("OK"), end: true}
	case 'k':
		return reply{none: true, end: true}
	case 'H':
		if len(args) < 1 || !strings.ContainsRune("gcm", rune(args[0])) {
			return text(replyBadArgs)
		}
		i, ok := t.threadIndex(args[1:], true)
		if !ok {
			return text(replyBadArgs)
		}
		if args[0] != 'c' {
			sel.g = i
		}
		return text(replyOK)
	case 'T':
		if _, ok := t.threadIndex(args, false); !ok {
			return text(replyBadArgs)
		}
		return text(replyOK)
	case 'q':
		return t.query(sel, args, maxPacket)
	case 'Q':
		if args == "StartNoAckMode" {
			return reply{data: []byte("OK"), noAck: true}
		}
		return text("")
	case 'v':
		return t.vPacket(args)
	}
	return text("")
}

// stopReply is the answer to '?': stopped by the fault's signal, in the
// only thread.
func (t *Target) stopReply() reply {
	return reply{data: fmt.Appendf(nil, "T%02xthread:%x;", uint8(t.signal), threadID)}
}

// threadIndex resolves a thread id to an index into t.threads: 1..N name
// the threads, and with any also 0 (any thread) and -1 (all threads),
// which select the crashing thread. A "p<pid>.<tid>" multiprocess id is
// accepted for process 1.
func (t *Target) threadIndex(s string, any bool) (int, bool) {
	if rest, ok := strings.CutPrefix(s, "p"); ok {
		pid, tid, ok := strings.Cut(rest, ".")
		if !ok || (pid != "1" && pid != "-1") {
			return 0, false
		}
		s = tid
	}
	if any && (s == "0" || s == "-1") {
		return 0, true
	}
	n, ok := parseHex(s, 8)
	if !ok || n < 1 || n > uint64(len(t.threads)) {
		return 0, false
	}
	return int(n - 1), true
}

// regsOf returns the registers of the session's selected thread.
func (t *Target) regsOf(sel *selection) *unwinders.Registers {
	if sel.g < 0 || sel.g >= len(t.threads) {
		return &t.threads[0].regs
	}
	return &t.threads[sel.g].regs
}

// threadList answers qfThreadInfo (from the first thread) and
// qsThreadInfo (from where the last reply stopped): "m" and up to
// maxThreadIDs ids (fewer when the packet size is small), or "l" when all
// have been sent.
func (t *Target) threadList(sel *selection, first bool, maxPacket int) reply {
	if first {
		sel.listed = 0
	}
	if sel.listed >= len(t.threads) {
		return text("l")
	}
	out := []byte{'m'}
	end := min(sel.listed+maxThreadIDs, len(t.threads))
	i := sel.listed
	for ; i < end && len(out)+10 <= maxPacket-4; i++ {
		if i > sel.listed {
			out = append(out, ',')
		}
		out = strconv.AppendUint(out, uint64(i+1), 16)
	}
	sel.listed = i
	return reply{data: out}
}

// threadsXML is the qXfer:threads:read document (GDB manual E.4, "Thread
// List Format"): each thread's id, name and extra text.
func (t *Target) threadsXML() []byte {
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\"?>\n<threads>\n")
	for i, th := range t.threads {
		fmt.Fprintf(&b, "  <thread id=\"%x\"", i+1)
		if th.name != "" {
			fmt.Fprintf(&b, " name=\"%s\"", xmlEscape(th.name))
		}
		fmt.Fprintf(&b, ">%s</thread>\n", xmlEscape(th.extra))
	}
	b.WriteString("</threads>\n")
	return []byte(b.String())
}

// xmlEscape escapes text for an XML attribute or element.
func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// readMemory answers "m addr,length".
func (t *Target) readMemory(args string, maxPacket int) reply {
	a, l, ok := strings.Cut(args, ",")
	if !ok {
		return text(replyBadArgs)
	}
	addr, ok1 := parseHex(a, 16)
	n, ok2 := parseHex(l, 16)
	if !ok1 || !ok2 {
		return text(replyBadArgs)
	}
	if addr >= 1<<32 {
		return text(replyUnmapped)
	}
	if n == 0 {
		return reply{data: []byte{}}
	}
	// Answer at most what fits in one packet; GDB accepts a short reply
	// and asks for the rest.
	n = min(n, uint64(maxPacket-4)/2, 1<<32-addr)
	buf := make([]byte, n)
	got, err := t.ReadMemory(uint32(addr), buf)
	if err != nil || got == 0 {
		return text(replyUnmapped)
	}
	out := make([]byte, 0, 2*got)
	for _, b := range buf[:got] {
		out = append(out, hexDigits[b>>4], hexDigits[b&15])
	}
	return reply{data: out}
}

// query answers the q packets.
func (t *Target) query(sel *selection, args string, maxPacket int) reply {
	name, rest, _ := strings.Cut(args, ":")
	switch {
	case name == "Supported":
		return supported(maxPacket)
	case name == "Xfer":
		return t.xfer(rest, maxPacket)
	case args == "fThreadInfo":
		return t.threadList(sel, true, maxPacket)
	case args == "sThreadInfo":
		return t.threadList(sel, false, maxPacket)
	case args == "C":
		return text("QC1")
	case name == "Attached":
		// Attached to an existing process: at exit GDB detaches (D)
		// rather than kills (k); both end the session.
		return reply{data: []byte("1")}
	case args == "Offsets":
		return text("Text=0;Data=0;Bss=0")
	case name == "Symbol":
		return text(replyOK) // no symbol lookups wanted
	case strings.HasPrefix(args, "ThreadExtraInfo,"):
		i, ok := t.threadIndex(strings.TrimPrefix(args, "ThreadExtraInfo,"), false)
		if !ok {
			return text(replyBadArgs)
		}
		extra := t.threads[i].extra
		if max := (maxPacket - 4) / 2; len(extra) > max {
			extra = extra[:max]
		}
		return reply{data: hexText(extra)}
	case strings.HasPrefix(args, "Rcmd,"):
		return t.monitor(strings.TrimPrefix(args, "Rcmd,"), maxPacket)
	}
	return text("")
}

// xfer answers "qXfer:object:read:annex:offset,length" (GDB manual E.4
// "General Query Packets"): 'm' and a chunk when more follows, 'l' and the
// last chunk otherwise.
func (t *Target) xfer(args string, maxPacket int) reply {
	parts := strings.SplitN(args, ":", 4)
	if len(parts) != 4 {
		return text(replyBadArgs)
	}
	object, op, annex, span := parts[0], parts[1], parts[2], parts[3]
	var doc []byte
	switch {
	case object == "features" && annex == "target.xml":
		doc = t.tdesc
	case object == "memory-map" && annex == "":
		doc = t.memmap
	case object == "threads" && annex == "":
		doc = t.threadsXML()
	case object == "features" || object == "memory-map" || object == "threads":
		if op != "read" {
			return text("")
		}
		return text(replyNoAnnex)
	default:
		return text("")
	}
	if op != "read" {
		return text("")
	}
	o, l, ok := strings.Cut(span, ",")
	if !ok {
		return text(replyBadArgs)
	}
	off, ok1 := parseHex(o, 16)
	n, ok2 := parseHex(l, 16)
	if !ok1 || !ok2 {
		return text(replyBadArgs)
	}
	if off >= uint64(len(doc)) {
		return reply{data: []byte("l")}
	}
	// Escaping can double the size: keep the reply within one packet.
	n = min(n, uint64(maxPacket-4)/2, uint64(len(doc))-off)
	chunk := doc[off : off+n]
	mark := byte('m')
	if off+n == uint64(len(doc)) {
		mark = 'l'
	}
	return reply{data: append([]byte{mark}, chunk...)}
}

// vPacket answers the v packets.
func (t *Target) vPacket(args string) reply {
	switch {
	case args == "MustReplyEmpty", args == "Cont?":
		return text("")
	case strings.HasPrefix(args, "Cont;"), strings.HasPrefix(args, "Run"), strings.HasPrefix(args, "Attach;"),
		strings.HasPrefix(args, "FlashErase"), strings.HasPrefix(args, "FlashWrite"), args == "FlashDone":
		return text(replyReadOnly)
	case strings.HasPrefix(args, "Kill"):
		return reply{data: []byte("OK"), end: true}
	}
	return text("")
}

// monitor answers "monitor CMD" (qRcmd with the command in hex) with its
// output, hex-encoded.
func (t *Target) monitor(hexCmd string, maxPacket int) reply {
	cmd, ok := unhexString(hexCmd)
	if !ok {
		return text(replyBadArgs)
	}
	var out string
	switch strings.TrimSpace(cmd) {
	case "fault":
		out = fmt.Sprintf("stopped with %s\n%s\n", t.signal, t.fault.String())
	case "threads":
		out = t.threadReport()
	case "help", "":
		out = "faultline gdbserver monitor commands:\n  fault    explain the fault (exception, status bits, notes)\n  threads  the RTOS threads found, and why some could not be\n  help     this text\nThe target is a crash dump: it is read-only and cannot run.\n"
	default:
		out = fmt.Sprintf("unknown monitor command %q; try \"monitor help\"\n", cmd)
	}
	if max := (maxPacket - 4) / 2; len(out) > max {
		out = out[:max]
	}
	return reply{data: hexText(out)}
}

// parseHex parses a non-empty hex number of at most digits digits.
func parseHex(s string, digits int) (uint64, bool) {
	if s == "" || len(s) > digits {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

// hexText hex-encodes s (console output, thread extra info).
func hexText(s string) []byte {
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, hexDigits[s[i]>>4], hexDigits[s[i]&15])
	}
	return out
}

// unhexString decodes a hex-encoded string.
func unhexString(s string) (string, bool) {
	if len(s)%2 != 0 {
		return "", false
	}
	var b bytes.Buffer
	for i := 0; i < len(s); i += 2 {
		hi, ok1 := unhex(s[i])
		lo, ok2 := unhex(s[i+1])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
	}
	return b.String(), true
}

// threadReport is the text of "monitor threads".
func (t *Target) threadReport() string {
	var b strings.Builder
	if t.kernel == "" {
		b.WriteString("no RTOS found: one thread, the crash dump's registers\n")
	} else {
		fmt.Fprintf(&b, "RTOS: %s, %d threads\n", t.kernel, len(t.threads))
	}
	for i, th := range t.threads {
		fmt.Fprintf(&b, "  %d  %s\n", i+1, th.extra)
	}
	for _, n := range t.kernelNotes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}
