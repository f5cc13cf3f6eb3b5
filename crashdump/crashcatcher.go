package crashdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// Format names of the CrashCatcher dump and its hex text form.
const (
	FormatCrashCatcher    = "crashcatcher"
	FormatCrashCatcherHex = "crashcatcher-hex"
)

// CrashCatcher layout (cortex-m.md section 7; CrashCatcher.c, which writes
// the fields in this order). All words are little-endian.
//
//	0   'c' 'C' major minor       signature; versions 2.x and 3.x
//	4   flags u32                 bit 0: S0-S31 and FPSCR follow the registers
//	8   r0 r1 r2 r3               from the stacked exception frame
//	24  r4 .. r11                 live at handler entry (not stacked)
//	56  r12                       stacked
//	60  sp                        the SP before the exception (frame popped)
//	64  lr pc xpsr                stacked: the faulting PC and its xPSR
//	76  msp psp                   v3 only: the stack pointers at handler entry
//	84  exceptionPSR              v3 (at 76 in v2): the handler's xPSR, IPSR = exception number
//	88  s0 .. s31 fpscr           if flags bit 0 (at 80 in v2): 132 bytes
//	..  {start u32, end u32, end-start bytes}...   memory regions to the end
//	..  AC CE 55 ED               optional: the crash handler's own stack overflowed
const (
	ccFlagFP          = 1 << 0
	ccOffRegs         = 8
	ccOffMSPv3        = 76
	ccOffFPv2         = 80
	ccOffFPv3         = 88
	ccFPBytes         = 33 * 4
	ccTrailerWord     = 0xACCE55ED // as CrashDebug compares it: a little-endian word
	ccRegionHdrBytes  = 8
	ccMaxFrameBytes   = 0xAC // largest exception frame plus alignment pad (cortex-m.md 1)
	ccHexSignature    = "6343"
	ccHexEndOfDump    = "End of dump"
	ccHexBannerMarker = "CRASH ENCOUNTERED"
)

// ccTrailerBytes is the stack-overflow marker as the device writes it.
var ccTrailerBytes = [4]byte{0xAC, 0xCE, 0x55, 0xED}

func matchCrashCatcher(data []byte) bool {
	// 'c' 'C' then a binary major version: not the start of a text file.
	return len(data) >= 2 && data[0] == 'c' && data[1] == 'C' && (len(data) < 3 || data[2] < 0x20)
}

func parseCrashCatcher(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	return decodeCrashCatcher(&binReader{name: name, data: data}, FormatCrashCatcher)
}

// decodeCrashCatcher decodes the binary layout above. The registers are the
// state before the exception (cortex-m.md 1, capture point b): PC is the
// faulting PC, SP the stack pointer with the exception frame popped. The
// exception number, which is in exceptionPSR and not in the stacked xPSR,
// goes to Fault.ICSR's VECTACTIVE field when the dump's memory does not hold
// ICSR itself: fault.Decode takes the exception from ICSR.VECTACTIVE when
// IPSR is 0, as it is for a fault in Thread mode.
func decodeCrashCatcher(r *binReader, format string) (*Dump, error) {
	d := &Dump{Path: r.name, Format: format}
	sig, err := r.bytes(4, "the signature 'c' 'C' major minor")
	if err != nil {
		return nil, err
	}
	if sig[0] != 'c' || sig[1] != 'C' {
		return nil, r.errAt(0, "signature % x: want 63 43 ('c' 'C')", sig[:2])
	}
	major, minor := sig[2], sig[3]
	if major != 2 && major != 3 {
		return nil, r.errAt(2, "CrashCatcher version %d.%d is not supported: want 2.x or 3.x", major, minor)
	}
	flags, err := r.u32("the flags")
	if err != nil {
		return nil, err
	}
	if flags&^ccFlagFP != 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("CrashCatcher flags 0x%08x: bits other than bit 0 (FP registers) are unknown and were ignored", flags))
	}
	var w [17]uint32 // r0-r3, r4-r11, r12, sp, lr, pc, xpsr
	if err := r.words(w[:], "the registers r0-r12, sp, lr, pc, xpsr"); err != nil {
		return nil, err
	}
	order := []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3,
		unwinders.R4, unwinders.R5, unwinders.R6, unwinders.R7, unwinders.R8, unwinders.R9, unwinders.R10, unwinders.R11,
		unwinders.R12, unwinders.SP, unwinders.LR, unwinders.PC, unwinders.XPSR}
	for i, reg := range order {
		d.Regs.Set(reg, w[i])
	}
	var msp, psp uint32
	if major >= 3 {
		if msp, err = r.u32("MSP"); err != nil {
			return nil, err
		}
		if psp, err = r.u32("PSP"); err != nil {
			return nil, err
		}
	}
	excPSR, err := r.u32("exceptionPSR")
	if err != nil {
		return nil, err
	}
	if major >= 3 {
		m, p, note := preExceptionStacks(w[13], msp, psp)
		d.Regs.Set(unwinders.MSP, m)
		d.Regs.Set(unwinders.PSP, p)
		if note != "" {
			d.Warnings = append(d.Warnings, note)
		}
	}
	if flags&ccFlagFP != 0 {
		var fp [33]uint32
		if err := r.words(fp[:], "the FP registers s0-s31 and fpscr (flags bit 0 is set)"); err != nil {
			return nil, err
		}
		for i := 0; i < 32; i++ {
			d.Regs.Set(unwinders.S(i), fp[i])
		}
		d.Regs.Set(unwinders.FPSCR, fp[32])
	}
	set := &regionSet{r: r}
	for r.left() > 0 {
		hdr := r.off
		if r.left() == 4 {
			tail := r.data[r.off:]
			if bytes.Equal(tail, ccTrailerBytes[:]) || binary.LittleEndian.Uint32(tail) == ccTrailerWord {
				d.Warnings = append(d.Warnings, "the dump ends with the 0xACCE55ED marker: the crash handler's own stack overflowed, so the dump may be incomplete or corrupt")
				r.off += 4
				break
			}
			return nil, r.errAt(hdr, "4 bytes after the last region (% x): want a region header (8 bytes) or the stack-overflow marker AC CE 55 ED", tail)
		}
		start, err := r.u32("a memory region header (start, end)")
		if err != nil {
			return nil, err
		}
		end, err := r.u32("a memory region header (start, end)")
		if err != nil {
			return nil, err
		}
		if end < start {
			return nil, r.errAt(hdr, "memory region end 0x%08x is below its start 0x%08x: want start <= end (end exclusive)", end, start)
		}
		size := uint64(end - start)
		if err := set.checkSize(hdr, start, size, "memory region"); err != nil {
			return nil, err
		}
		b, err := r.bytes(int(size), fmt.Sprintf("memory region 0x%08x-0x%08x", start, end))
		if err != nil {
			return nil, err
		}
		set.add(hdr, regionName(format, start), start, b)
	}
	if err := set.overlaps(); err != nil {
		return nil, err
	}
	d.Memory = set.regions
	var explicit fault.SCB
	if err := d.faultFromMemory(explicit); err != nil {
		return nil, err
	}
	if n := excPSR & 0x1ff; !d.Fault.ICSR.OK && n != 0 {
		d.Fault.ICSR = fault.Known(n)
	}
	return d, nil
}

// preExceptionStacks turns the banked stack pointers CrashCatcher v3
// records at handler entry into those of the interrupted code: the stack
// the core pushed the frame on (the one just below sp, by at most a frame
// and its pad) held sp before the exception; the other is unchanged.
func preExceptionStacks(sp, msp, psp uint32) (uint32, uint32, string) {
	below := func(v uint32) bool { return v < sp && sp-v >= 0x20 && sp-v <= ccMaxFrameBytes }
	switch {
	case psp != 0 && below(psp):
		return msp, sp, ""
	case below(msp):
		return sp, psp, ""
	case sp == msp || sp == psp:
		return msp, psp, ""
	}
	return msp, psp, fmt.Sprintf("neither MSP 0x%08x nor PSP 0x%08x at handler entry lies one exception frame below the SP 0x%08x before the exception: they were kept as the dump gives them", msp, psp, sp)
}

// faultFromMemory fills d.Fault from the SCB registers the memory regions
// hold, overridden by explicit.
func (d *Dump) faultFromMemory(explicit fault.SCB) error {
	im, err := d.Image()
	if err != nil {
		return &FormatError{File: d.Path, Offset: -1, Msg: err.Error(), Err: err}
	}
	d.Fault = fault.FromMemory(im).Merge(explicit)
	if d.CPU == "" {
		// The captured SCB's CPUID names the core (positive evidence;
		// nothing is guessed when the word is absent or unknown).
		if v, err := unwinders.ReadU32(im, cpuidAddr); err == nil {
			d.CPU = cpuFromCPUID(v)
		}
	}
	return nil
}

// cpuidAddr is the SCB's CPUID register (ARMv6-M, v7-M, v8-M: B3.2.3).
const cpuidAddr = 0xe000ed00

// cpuFromCPUID names the core an Arm CPUID value (implementer 0x41)
// identifies by its part number, "" for any other value.
func cpuFromCPUID(v uint32) string {
	if v>>24 != 0x41 {
		return ""
	}
	switch (v >> 4) & 0xfff {
	case 0xc20:
		return "cortex-m0"
	case 0xc60:
		return "cortex-m0plus"
	case 0xc21:
		return "cortex-m1"
	case 0xc23:
		return "cortex-m3"
	case 0xc24:
		return "cortex-m4"
	case 0xc27:
		return "cortex-m7"
	case 0xd20:
		return "cortex-m23"
	case 0xd21:
		return "cortex-m33"
	case 0xd31:
		return "cortex-m35p"
	case 0xd22:
		return "cortex-m55"
	case 0xd23:
		return "cortex-m85"
	}
	return ""
}

// matchCrashCatcherHex accepts text with a line that starts with "6343",
// the hex form of the signature.
func matchCrashCatcherHex(data []byte) bool {
	_, ok := nextHexStart(data, 0)
	return ok
}

// nextHexStart finds the first line at or after from whose text (after
// leading blanks) starts with "6343"; it returns the line's offset.
func nextHexStart(data []byte, from int) (int, bool) {
	for off := from; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		line := data[off:]
		if end >= 0 {
			line = data[off : off+end]
		}
		t := bytes.TrimRight(bytes.TrimLeft(line, " \t"), " \t\r")
		if bytes.HasPrefix(t[hexPayload(t):], []byte(ccHexSignature)) {
			return off, true
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return 0, false
}

// hexSegment maps the bytes decoded from one line back to the text.
type hexSegment struct {
	bin  int   // offset of the line's first byte in the decoded dump
	text int64 // offset of the line's first hex digit in the file
}

// hexDump is a dump decoded from hex lines.
type hexDump struct {
	bin      []byte
	segs     []hexSegment
	complete bool // ended by its trailer line
	next     int  // offset in the text to resume searching at
}

// pos maps a decoded byte offset to the file offset of its hex digits.
func (h *hexDump) pos(i int) int64 {
	k := sort.Search(len(h.segs), func(k int) bool { return h.segs[k].bin > i }) - 1
	if k < 0 {
		return 0
	}
	return h.segs[k].text + 2*int64(i-h.segs[k].bin)
}

// parseCrashCatcherHex decodes the hex form: the dump's bytes as hex digits,
// a line per write call, between the "CRASH ENCOUNTERED ... press any key"
// banner and the "End of dump" line. Text before the first line starting
// with 6343, CR characters and blank lines are ignored. Each line may sit
// behind a log prefix (timestamps, levels, tags: see hexPayload). When the text holds
// several dumps (the handler repeats the dump until told to stop), the
// first complete one is decoded.
func parseCrashCatcherHex(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	var first *hexDump
	for from := 0; ; {
		start, ok := nextHexStart(data, from)
		if !ok {
			break
		}
		h, err := scanHexDump(data, name, start)
		if err != nil {
			return nil, err
		}
		if h.complete {
			first = h
			break
		}
		if first == nil {
			first = h
		}
		from = h.next
	}
	if first == nil {
		return nil, &FormatError{File: name, Offset: -1, Err: ErrUnknownFormat,
			Msg: "no line starts with 6343 (the hex form of the CrashCatcher signature 'c' 'C')"}
	}
	d, err := decodeCrashCatcher(&binReader{name: name, data: first.bin, pos: first.pos}, FormatCrashCatcherHex)
	if err != nil {
		return nil, err
	}
	if !first.complete {
		d.Warnings = append(d.Warnings, fmt.Sprintf("no %q line after the dump: the transcript may be cut short", ccHexEndOfDump))
	}
	return d, nil
}

// scanHexDump decodes the hex lines of one dump starting at start.
func scanHexDump(data []byte, name string, start int) (*hexDump, error) {
	h := &hexDump{}
	for off := start; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		line := data[off:]
		if end >= 0 {
			line = data[off : off+end]
			next = off + end + 1
		}
		lead := len(line) - len(bytes.TrimLeft(line, " \t"))
		t := bytes.TrimRight(line[lead:], " \t\r")
		switch {
		case len(t) == 0:
		case strings.EqualFold(string(t), ccHexEndOfDump),
			len(t) > len(ccHexEndOfDump) && strings.EqualFold(string(t[len(t)-len(ccHexEndOfDump):]), ccHexEndOfDump) && (t[len(t)-len(ccHexEndOfDump)-1] == ' ' || t[len(t)-len(ccHexEndOfDump)-1] == '\t'):
			h.complete, h.next = true, next
			return h, nil
		case off != start && bytes.Contains(t, []byte(ccHexBannerMarker)):
			// A new dump begins before this one ended.
			h.next = off
			return h, nil
		default:
			p := hexPayload(t)
			t = t[p:]
			textOff := int64(off + lead + p)
			for i, c := range t {
				if !isHexDigit(c) {
					return nil, &FormatError{File: name, Offset: textOff + int64(i),
						Msg: fmt.Sprintf("invalid hex digit %q in a CrashCatcher hex dump line: want two hex digits per byte", c)}
				}
			}
			if len(t)%2 != 0 {
				return nil, &FormatError{File: name, Offset: textOff,
					Msg: fmt.Sprintf("line of %d hex digits: want two hex digits per byte", len(t))}
			}
			if len(h.bin)+len(t)/2 > MaxManifestSize {
				return nil, &FormatError{File: name, Offset: textOff, Err: ErrTooLarge, Msg: "hex dump larger than the dump size limit"}
			}
			h.segs = append(h.segs, hexSegment{bin: len(h.bin), text: textOff})
			for i := 0; i < len(t); i += 2 {
				h.bin = append(h.bin, hexNibble(t[i])<<4|hexNibble(t[i+1]))
			}
		}
		off = next
	}
	h.next = len(data)
	return h, nil
}

// hexPayload returns where the hex digits of a dump line start: at 0 when
// the whole line is hex, or behind a log prefix (a timestamp, a level, a
// tag: "[00:01:02.345] <err> crash: 6343..."), at the last blank-separated
// token when that token is all hex digits. Lines are bounded, so is this.
func hexPayload(t []byte) int {
	if allHex(t) {
		return 0
	}
	i := bytes.LastIndexAny(t, " \t")
	if i < 0 || i+1 == len(t) || !allHex(t[i+1:]) {
		return 0
	}
	return i + 1
}

func allHex(t []byte) bool {
	for _, c := range t {
		if !isHexDigit(c) {
			return false
		}
	}
	return true
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexNibble(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// ErrNoPreException is returned by WriteCrashCatcher when the state before
// the exception cannot be recovered from a dump's registers and memory.
var ErrNoPreException = errors.New("cannot recover the state before the exception")

// WriteCrashCatcher writes d as a CrashCatcher 3.0 binary dump, which
// CrashDebug reads. CrashCatcher holds the state before the exception, so
// a dump taken at the first instruction of the fault handler (capture point
// a, cortex-m.md 1: IPSR != 0, LR = EXC_RETURN) is unstacked first with
// unwinders.Unstack: the exception frame at SP (or PSP) gives r0-r3, r12,
// lr, pc and xPSR, SP becomes the SP with the frame popped, and the
// handler's xPSR is written as exceptionPSR, its MSP and PSP as those at
// handler entry. A dump whose handler has already run past its first
// instruction (pushed registers, moved SP) cannot be unstacked without the
// firmware's unwind data: WriteCrashCatcher then fails with
// ErrNoPreException unless the frame at SP still looks like an exception
// frame. A dump that already holds the pre-exception state (LR not an
// EXC_RETURN value) is written as it is; its exception number is taken
// from Fault.ICSR.
//
// FP registers are written (flags bit 0) only when all of S0-S31 and FPSCR
// are known. Memory regions are written in d's order; when no region holds
// the fault status block 0xE000ED28..0xE000ED3B and d.Fault knows CFSR,
// HFSR, DFSR, MMFAR and BFAR, that block is added, as CrashCatcher does on
// ARMv7-M.
func (d *Dump) WriteCrashCatcher(w io.Writer) error {
	regs, entryMSP, entryPSP, excPSR, err := d.preException()
	if err != nil {
		return fmt.Errorf("%s: %w", d.Path, err)
	}
	var b bytes.Buffer
	le := func(v uint32) { _ = binary.Write(&b, binary.LittleEndian, v) }
	b.Write([]byte{'c', 'C', 3, 0})
	fp := regs.Known(unwinders.FPSCR)
	for i := 0; i < 32; i++ {
		fp = fp && regs.Known(unwinders.S(i))
	}
	var flags uint32
	if fp {
		flags |= ccFlagFP
	}
	le(flags)
	for _, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3,
		unwinders.R4, unwinders.R5, unwinders.R6, unwinders.R7, unwinders.R8, unwinders.R9, unwinders.R10, unwinders.R11,
		unwinders.R12, unwinders.SP, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		v, ok := regs.Get(reg)
		if !ok && (reg == unwinders.SP || reg == unwinders.PC) {
			return fmt.Errorf("%s: %w: %s is unknown", d.Path, ErrNoPreException, reg)
		}
		le(v) // CrashCatcher has no "unknown": an unknown register is written as 0
	}
	le(entryMSP)
	le(entryPSP)
	le(excPSR)
	if fp {
		for i := 0; i < 32; i++ {
			le(regs.Value(unwinders.S(i)))
		}
		le(regs.Value(unwinders.FPSCR))
	}
	if _, err := d.Image(); err != nil {
		return fmt.Errorf("%s: %w", d.Path, err)
	}
	const fsrStart, fsrEnd = fault.AddrCFSR, fault.AddrAFSR // CFSR..BFAR, end exclusive
	haveFSR := false
	for _, r := range d.Memory {
		if len(r.Data) == 0 {
			continue
		}
		if uint64(r.Addr) < fsrEnd && r.End() > fsrStart {
			haveFSR = true
		}
		le(r.Addr)
		le(uint32(r.End()))
		b.Write(r.Data)
	}
	f := d.Fault
	if !haveFSR && f.CFSR.OK && f.HFSR.OK && f.DFSR.OK && f.MMFAR.OK && f.BFAR.OK {
		le(fsrStart)
		le(fsrEnd)
		for _, v := range []uint32{f.CFSR.V, f.HFSR.V, f.DFSR.V, f.MMFAR.V, f.BFAR.V} {
			le(v)
		}
	}
	_, err = w.Write(b.Bytes())
	return err
}

// preException returns the registers before the exception, the stack
// pointers at handler entry and the exceptionPSR word.
func (d *Dump) preException() (regs unwinders.Registers, msp, psp, excPSR uint32, err error) {
	lr, lrOK := d.Regs.Get(unwinders.LR)
	ipsr, _ := d.Regs.IPSR()
	if !lrOK || !unwinders.LooksLikeExcReturn(lr) || ipsr == 0 {
		// Already the state before the exception (capture point b).
		regs = d.Regs
		if v, ok := d.Fault.ICSR.Get(); ok {
			excPSR = v & 0x1ff
		}
		sp := regs.Value(unwinders.SP)
		msp, psp = regs.Value(unwinders.MSP), regs.Value(unwinders.PSP)
		// Back to the values at handler entry: the active stack held the
		// exception frame below SP (preExceptionStacks in reverse).
		size := uint32(0x20)
		if regs.Known(unwinders.FPSCR) {
			size = 0x68
		}
		switch {
		case regs.Known(unwinders.PSP) && psp == sp && sp != 0 && excPSR != 0:
			psp = (sp - size) &^ 7
		case regs.Known(unwinders.MSP) && msp == sp && excPSR != 0:
			msp = (sp - size) &^ 7
		}
		return regs, msp, psp, excPSR, nil
	}
	im, err := d.Image()
	if err != nil {
		return regs, 0, 0, 0, err
	}
	t := &unwinders.Target{Mem: im, Profile: d.Profile()}
	if t.Profile == unwinders.ProfileUnknown {
		t.Profile = unwinders.V7M
	}
	handler, err := unwinders.StartFrame(d.Regs)
	if err != nil {
		return regs, 0, 0, 0, fmt.Errorf("%w: %w", ErrNoPreException, err)
	}
	exc := unwinders.ExcReturn(lr)
	if !exc.Valid(t.Profile) {
		return regs, 0, 0, 0, fmt.Errorf("%w: LR 0x%08x is not a valid EXC_RETURN on %v", ErrNoPreException, lr, t.Profile)
	}
	sp, ok := d.Regs.Get(unwinders.SP)
	if !ok {
		return regs, 0, 0, 0, fmt.Errorf("%w: SP is unknown", ErrNoPreException)
	}
	pseudo, interrupted, err := unwinders.Unstack(t, &handler, exc, sp)
	if err != nil {
		return regs, 0, 0, 0, fmt.Errorf("%w: %w", ErrNoPreException, err)
	}
	// A stacked xPSR has the Thumb bit set, except after a branch to an
	// even address (a NULL or ARM-state function pointer): the core then
	// faults on that instruction (INVSTATE, or IACCVIOL/IBUSERR when the
	// fetch itself is refused first) and the clear T bit is the true state.
	cfsr, _ := d.Fault.CFSR.Get()
	const iacc, ibus, invstate = 1 << 0, 1 << 8, 1 << 17
	branchedEven := cfsr&(iacc|ibus|invstate) != 0
	if x := interrupted.Regs.Value(unwinders.XPSR); (x&(1<<24) == 0 && !branchedEven) || interrupted.Regs.Value(unwinders.PC)&1 != 0 {
		return regs, 0, 0, 0, fmt.Errorf("%w: the %s frame at 0x%08x (stacked xPSR 0x%08x, PC 0x%08x) is not a plausible exception frame: the dump is probably not taken at the handler's first instruction",
			ErrNoPreException, pseudo.Exception.Stack, pseudo.Exception.Base, x, interrupted.Regs.Value(unwinders.PC))
	}
	regs = interrupted.Regs
	// FP registers the frame did not hold keep their live values: a basic
	// frame leaves S0-S15 untouched, and a lazily stacked one has not
	// written them yet.
	for i := 0; i < 32; i++ {
		if v, ok := d.Regs.Get(unwinders.S(i)); ok && !regs.Known(unwinders.S(i)) {
			regs.Set(unwinders.S(i), v)
		}
	}
	if v, ok := d.Regs.Get(unwinders.FPSCR); ok && !regs.Known(unwinders.FPSCR) {
		regs.Set(unwinders.FPSCR, v)
	}
	msp, psp = d.Regs.Value(unwinders.MSP), d.Regs.Value(unwinders.PSP)
	if !d.Regs.Known(unwinders.MSP) && !exc.UsesPSP() {
		msp = sp
	}
	return regs, msp, psp, d.Regs.Value(unwinders.XPSR), nil
}
