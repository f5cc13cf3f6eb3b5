package crashdump

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// Format names of the Zephyr coredump and its "#CD:" log form.
const (
	FormatZephyr    = "zephyr"
	FormatZephyrLog = "zephyr-log"
)

// Zephyr coredump layout (cortex-m.md section 7; Zephyr's
// include/zephyr/debug/coredump.h and arch/arm/core/cortex_m/coredump.c).
// Little-endian, packed.
//
//	header (12 bytes):  'Z' 'E', hdr_version u16 (1, 2), tgt_code u16 (3 = Cortex-M),
//	                    ptr_size_bits u8 (log2: 5 = 32-bit), flag u8 (bit 0: CRC trailer),
//	                    reason u32 (k_fatal_error_reason)
//	then blocks to the end, each starting with an id byte:
//	'A' arch:      version u16, num_bytes u16, payload (struct arm_arch_block):
//	               v1: r0 r1 r2 r3 r12 lr pc xpsr sp (36 bytes)
//	               v2: + r4..r11, zero when not collected (68 bytes)
//	               v3: + callee_saved_valid, callee_saved_offset (76 bytes)
//	'T' threads:   version u16 (1), num_bytes u16, the bytes of _kernel
//	               (struct z_kernel) at the crash: kept as a SymbolRegion
//	'M' memory:    version u16 (1), start u32, end u32, end-start bytes
//	'F' CPU:       version u16, num_bytes u16, cpu_id u32, thread_ptr u32, payload (skipped)
//	'C' CRC:       version u16, crc u32: CRC-32/IEEE of every byte before the block; last
//
// Blocks carry no common length field, so an unknown id ends the parse.
const (
	zephyrHdrBytes   = 12
	zephyrTgtCortexM = 3
	zephyrPtrBits32  = 5
	zephyrFlagCRC    = 1 << 0
	zephyrMemVersion = 1
	zephyrCRCVersion = 1
	// zephyrThreadsVersion is the threads metadata block's version.
	zephyrThreadsVersion = 1
)

// ZephyrReasonName names a k_fatal_error_reason value, "" for one that is
// architecture specific or unknown.
func ZephyrReasonName(r uint32) string {
	if r < uint32(len(zephyrReasons)) {
		return zephyrReasons[r]
	}
	return ""
}

// zephyrReasons names k_fatal_error_reason values.
var zephyrReasons = [...]string{"K_ERR_CPU_EXCEPTION", "K_ERR_SPURIOUS_IRQ", "K_ERR_STACK_CHK_FAIL", "K_ERR_KERNEL_OOPS", "K_ERR_KERNEL_PANIC"}

func matchZephyr(data []byte) bool {
	// 'Z' 'E' then a small little-endian version: not the start of text.
	return len(data) >= 2 && data[0] == 'Z' && data[1] == 'E' && (len(data) < 4 || data[3] == 0)
}

func parseZephyr(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	return decodeZephyr(&binReader{name: name, data: data}, FormatZephyr)
}

// decodeZephyr decodes a Zephyr coredump. The arch block holds the
// exception stack frame Zephyr's fault handler found (capture point b,
// cortex-m.md 1): PC is the faulting PC; SP is the stack pointer before the
// exception (Zephyr 3.x adds the frame size and alignment pad to the ESF
// address; older versions stored the ESF address itself, which is detected
// when the memory at SP holds the very registers of the block, and
// corrected).
func decodeZephyr(r *binReader, format string) (*Dump, error) {
	d := &Dump{Path: r.name, Format: format}
	id, err := r.bytes(2, "the header id 'Z' 'E'")
	if err != nil {
		return nil, err
	}
	if id[0] != 'Z' || id[1] != 'E' {
		return nil, r.errAt(0, "header id % x: want 5a 45 ('Z' 'E')", id)
	}
	ver, err := r.u16("the header version")
	if err != nil {
		return nil, err
	}
	if ver != 1 && ver != 2 {
		return nil, r.errAt(2, "coredump header version %d is not supported: want 1 or 2", ver)
	}
	tgt, err := r.u16("the target code")
	if err != nil {
		return nil, err
	}
	if tgt != zephyrTgtCortexM {
		return nil, r.errAt(4, "target code %d is not ARM Cortex-M: want 3", tgt)
	}
	ptrBits, err := r.u8("the pointer size")
	if err != nil {
		return nil, err
	}
	if ptrBits != zephyrPtrBits32 {
		return nil, r.errAt(6, "pointer size 2^%d bits: want 2^5 (32-bit pointers)", ptrBits)
	}
	flags, err := r.u8("the flags")
	if err != nil {
		return nil, err
	}
	reason, err := r.u32("the reason")
	if err != nil {
		return nil, err
	}
	d.FatalReason = &reason
	switch {
	case reason == 0:
	case reason < uint32(len(zephyrReasons)):
		d.Warnings = append(d.Warnings, fmt.Sprintf("Zephyr fatal error reason %d (%s): not a CPU exception, so the registers are those of the call that raised it", reason, zephyrReasons[reason]))
	default:
		d.Warnings = append(d.Warnings, fmt.Sprintf("Zephyr fatal error reason %d (architecture specific or unknown)", reason))
	}

	set := &regionSet{r: r}
	haveArch, haveCRC, haveThreads := false, false, false
	var archPC uint32
	for r.left() > 0 {
		blk := r.off
		id, _ := r.u8("a block id")
		switch id {
		case 'A':
			if haveArch {
				return nil, r.errAt(blk, "second arch ('A') block: want one")
			}
			haveArch = true
			if err := zephyrArch(r, blk, d); err != nil {
				return nil, err
			}
			archPC = d.Regs.Value(unwinders.PC)
		case 'T':
			v, err := r.u16("the threads metadata block version")
			if err != nil {
				return nil, err
			}
			n, err := r.u16("the threads metadata block size")
			if err != nil {
				return nil, err
			}
			b, err := r.bytes(int(n), "the threads metadata block")
			if err != nil {
				return nil, err
			}
			if haveThreads {
				return nil, r.errAt(blk, "second threads metadata ('T') block: want one")
			}
			haveThreads = true
			if v != zephyrThreadsVersion {
				d.Warnings = append(d.Warnings, fmt.Sprintf("threads metadata block (offset %d) has version %d, not 1: its bytes are still taken as _kernel", r.at(blk), v))
			}
			d.SymbolRegions = append(d.SymbolRegions, SymbolRegion{
				Symbol: "_kernel", Name: fmt.Sprintf("%s threads block (_kernel)", format),
				Offset: r.at(blk + 5), Data: b})
		case 'F':
			if _, err := r.u16("the CPU snapshot block version"); err != nil {
				return nil, err
			}
			n, err := r.u16("the CPU snapshot block size")
			if err != nil {
				return nil, err
			}
			cpu, err := r.u32("the CPU snapshot's cpu_id")
			if err != nil {
				return nil, err
			}
			if _, err := r.u32("the CPU snapshot's thread pointer"); err != nil {
				return nil, err
			}
			if _, err := r.bytes(int(n), "the CPU snapshot block"); err != nil {
				return nil, err
			}
			d.Warnings = append(d.Warnings, fmt.Sprintf("the register snapshot of CPU %d (block at offset %d) was ignored: only the faulting CPU is analysed", cpu, r.at(blk)))
		case 'M':
			v, err := r.u16("the memory block version")
			if err != nil {
				return nil, err
			}
			if v != zephyrMemVersion {
				return nil, r.errAt(blk+1, "memory block version %d: want 1", v)
			}
			start, err := r.u32("the memory block's start address")
			if err != nil {
				return nil, err
			}
			end, err := r.u32("the memory block's end address")
			if err != nil {
				return nil, err
			}
			if end < start {
				return nil, r.errAt(blk, "memory block end 0x%08x is below its start 0x%08x: want start <= end", end, start)
			}
			size := uint64(end - start)
			if err := set.checkSize(blk, start, size, "memory block"); err != nil {
				return nil, err
			}
			b, err := r.bytes(int(size), fmt.Sprintf("memory block 0x%08x-0x%08x", start, end))
			if err != nil {
				return nil, err
			}
			set.add(blk, regionName(format, start), start, b)
		case 'C':
			v, err := r.u16("the CRC block version")
			if err != nil {
				return nil, err
			}
			if v != zephyrCRCVersion {
				return nil, r.errAt(blk+1, "CRC block version %d: want 1", v)
			}
			want, err := r.u32("the CRC-32")
			if err != nil {
				return nil, err
			}
			if r.left() != 0 {
				return nil, r.errAt(r.off, "%d bytes after the CRC block: want the CRC block last", r.left())
			}
			if got := crc32.ChecksumIEEE(r.data[:blk]); got != want {
				return nil, r.errAt(blk+3, "CRC-32 mismatch: the dump says 0x%08x, bytes 0..%d give 0x%08x (corrupt or altered dump)", want, blk, got)
			}
			haveCRC = true
		default:
			return nil, r.errAt(blk, "unknown block id %q (0x%02x): want 'A', 'M', 'T', 'F' or 'C' (Zephyr blocks have no common length, so an unknown block cannot be skipped)", rune(id), id)
		}
	}
	if flags&zephyrFlagCRC != 0 && !haveCRC {
		return nil, r.errAt(len(r.data), "truncated: the header's flag bit 0 announces a CRC trailer ('C' block), but the dump ends without one")
	}
	if !haveArch {
		return nil, r.errAt(len(r.data), "no arch ('A') block: want the registers")
	}
	if err := set.overlaps(); err != nil {
		return nil, err
	}
	d.Memory = set.regions
	if err := d.faultFromMemory(fault.SCB{}); err != nil {
		return nil, err
	}
	zephyrFixSP(d, archPC)
	return d, nil
}

// zephyrArch decodes the arch block's header and payload.
func zephyrArch(r *binReader, blk int, d *Dump) error {
	ver, err := r.u16("the arch block version")
	if err != nil {
		return err
	}
	n, err := r.u16("the arch block size")
	if err != nil {
		return err
	}
	want := map[uint16]int{1: 36, 2: 68, 3: 76}[ver]
	if want == 0 {
		return r.errAt(blk+1, "arch block version %d is not supported: want 1, 2 or 3", ver)
	}
	if int(n) < want {
		return r.errAt(blk+3, "arch block of version %d is %d bytes: want %d", ver, n, want)
	}
	payload, err := r.bytes(int(n), "the arch block")
	if err != nil {
		return err
	}
	if int(n) > want {
		d.Warnings = append(d.Warnings, fmt.Sprintf("arch block version %d has %d bytes, %d more than this version defines: ignored", ver, n, int(n)-want))
	}
	word := func(i int) uint32 { return binary.LittleEndian.Uint32(payload[4*i:]) }
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR, unwinders.SP} {
		d.Regs.Set(reg, word(i))
	}
	if ver >= 2 {
		valid := true
		switch {
		case ver >= 3:
			valid = word(17) != 0 // callee_saved_valid
		default:
			zero := true
			for i := 9; i < 17; i++ {
				zero = zero && word(i) == 0
			}
			valid = !zero
		}
		if valid {
			for i := 0; i < 8; i++ {
				d.Regs.Set(unwinders.R4+unwinders.Reg(i), word(9+i))
			}
		} else {
			d.Warnings = append(d.Warnings, "r4-r11 were not collected (Zephyr without CONFIG_EXTRA_EXCEPTION_INFO): they are unknown")
		}
	}
	return nil
}

// zephyrFixSP corrects the SP of older Zephyr versions, which stored the
// address of the exception stack frame rather than the SP before the
// exception: when the memory at SP holds exactly the stacked registers of
// the arch block, the frame is still there and SP points at it.
func zephyrFixSP(d *Dump, pc uint32) {
	sp, _ := d.Regs.Get(unwinders.SP)
	im, err := d.Image()
	if err != nil {
		return
	}
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		v, err := unwinders.ReadU32(im, sp+uint32(4*i))
		if err != nil || v != d.Regs.Value(reg) {
			return
		}
	}
	xpsr := d.Regs.Value(unwinders.XPSR)
	newSP := sp + 0x20
	if xpsr&(1<<9) != 0 {
		newSP |= 4
	}
	d.Regs.Set(unwinders.SP, newSP)
	d.Warnings = append(d.Warnings, fmt.Sprintf("SP 0x%08x points at the exception frame itself (PC 0x%08x stacked there), as older Zephyr versions record it: the SP before the exception, 0x%08x, is used", sp, pc, newSP))
}

// matchZephyrLog accepts text holding a "#CD:" line.
func matchZephyrLog(data []byte) bool { return bytes.Contains(data, []byte(zephyrLogPrefix)) }

const (
	zephyrLogPrefix = "#CD:"
	zephyrLogBegin  = "BEGIN#"
	zephyrLogEnd    = "END#"
	zephyrLogError  = "ERROR CANNOT DUMP#"

	// zephyrLogMaxEscape bounds an ANSI control sequence: at most this
	// many parameter and intermediate bytes after "ESC [" before its
	// final byte. A longer one is not taken for a sequence (only its ESC
	// is dropped).
	zephyrLogMaxEscape = 32
	// zephyrLogMaxTracked bounds the dumps a log's parse remembers; past
	// it the oldest unusable one is forgotten (counted in a warning).
	zephyrLogMaxTracked = 256
	// zephyrLogMaxNotes bounds the per-dump warnings.
	zephyrLogMaxNotes = 8
)

// zephyrLogDump is one "#CD:BEGIN#" ... "#CD:END#" run of a log.
type zephyrLogDump struct {
	hexDump
	begin, end  int    // 1-based line numbers; end 0 when no END line closed it
	beginOff    int64  // file offset of its BEGIN line's "#CD:"
	interleaved int    // lines without "#CD:" between BEGIN and END
	firstOther  int    // the first of those lines
	deviceErr   int64  // file offset of "#CD:ERROR CANNOT DUMP#", -1 when none
	bad         error  // a data line that is not hex: the dump is unusable
	cutBy       int    // line of the BEGIN that started before this one ended
	decodeErr   error  // why it did not decode
	dump        *Dump  // decoded
	reason      string // why it was skipped
}

func (z *zephyrLogDump) lines() string {
	switch {
	case z.end != 0:
		return fmt.Sprintf("lines %d-%d", z.begin, z.end)
	case z.cutBy != 0:
		return fmt.Sprintf("lines %d-%d", z.begin, z.cutBy-1)
	}
	return fmt.Sprintf("lines %d-end", z.begin)
}

// usable says whether the dump's data lines can be decoded at all.
func (z *zephyrLogDump) usable() bool { return z.bad == nil && z.deviceErr < 0 && len(z.bin) > 0 }

// logRun maps a run of cleaned text back to the file: clean[i] for i >=
// at came from file offset file + (i - at).
type logRun struct {
	at   int
	file int64
}

// cleanLogText appends src with ANSI escape sequences removed to dst and
// records in runs where each kept stretch came from (src starts at file
// offset srcOff). A control sequence is ESC '[' then at most
// zephyrLogMaxEscape bytes 0x20-0x3f then a final byte 0x40-0x7e; one cut
// short by the line's end or a control character (a log cut mid-sequence,
// a CR) ends there; any other ESC takes itself and, when it is one, the
// byte 0x40-0x7e after it (a two-byte escape such as ESC c).
// Linear in len(src).
func cleanLogText(dst []byte, runs []logRun, src []byte, srcOff int64) ([]byte, []logRun) {
	inRun := false
	for i := 0; i < len(src); {
		c := src[i]
		if c != 0x1b {
			if !inRun {
				runs = append(runs, logRun{at: len(dst), file: srcOff + int64(i)})
				inRun = true
			}
			dst = append(dst, c)
			i++
			continue
		}
		inRun = false
		skip := 1
		switch {
		case i+1 < len(src) && src[i+1] == '[':
			j := i + 2
			for j < len(src) && j-(i+2) <= zephyrLogMaxEscape && src[j] >= 0x20 && src[j] <= 0x3f {
				j++
			}
			switch {
			case j-(i+2) > zephyrLogMaxEscape:
				// Too long for a colour code: not taken for one.
			case j == len(src) || src[j] < 0x20 || src[j] == 0x7f:
				skip = j - i // cut inside the sequence (by the line's end or a CR)
			case src[j] >= 0x40 && src[j] <= 0x7e:
				skip = j + 1 - i
			}
		case i+1 < len(src) && src[i+1] >= 0x40 && src[i+1] <= 0x7e:
			skip = 2
		}
		i += skip
	}
	return dst, runs
}

// logRunPos maps index i of the cleaned text to its file offset.
func logRunPos(runs []logRun, i int) int64 {
	k := sort.Search(len(runs), func(k int) bool { return runs[k].at > i }) - 1
	if k < 0 {
		return -1
	}
	return runs[k].file + int64(i-runs[k].at)
}

// parseZephyrLog decodes the logging backend's form as a board prints it:
// "#CD:BEGIN#", lines of "#CD:" followed by hex digits, "#CD:END#". Each
// "#CD:" may sit anywhere in its line (the last one of a line counts: one
// before it is a line cut short, which spoils its dump unless the new one
// is a BEGIN), behind a timestamp and a log prefix
// and inside ANSI colour codes (removed, bounded); lines may end in CRLF;
// lines without "#CD:" (other log output, also between a dump's lines) are
// skipped. A log may hold several dumps (a device that crashed, rebooted
// and crashed again): the last complete one that decodes is analysed and
// the others are named in warnings, with their line numbers and why they
// were not used (the device reported "#CD:ERROR CANNOT DUMP#", a data line
// is not hex, a new BEGIN cut it short, it does not decode, or a later
// one was chosen). When no complete dump decodes, the last incomplete one
// that does is analysed with a warning. The log is rejected only when no
// dump decodes; the error is then that of the dump that would have been
// chosen.
func parseZephyrLog(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	var (
		dumps           []*zephyrLogDump
		cur             *zephyrLogDump
		forgotten       int
		stray, strayEnd int // hex lines outside any dump; END lines without a BEGIN
		clean           []byte
		runs            []logRun
	)
	keep := func(z *zephyrLogDump) {
		if len(dumps) == zephyrLogMaxTracked {
			k := 0
			for i, o := range dumps {
				if !o.usable() {
					k = i
					break
				}
			}
			dumps = append(dumps[:k], dumps[k+1:]...)
			forgotten++
		}
		dumps = append(dumps, z)
	}
	lineNo := 0
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		line := data[off:]
		if end >= 0 {
			line = data[off : off+end]
			next = off + end + 1
		}
		lineNo++
		k := bytes.LastIndex(line, []byte(zephyrLogPrefix))
		if k < 0 {
			if cur != nil {
				if cur.interleaved == 0 {
					cur.firstOther = lineNo
				}
				cur.interleaved++
			}
			off = next
			continue
		}
		bodyOff := int64(off + k + len(zephyrLogPrefix))
		raw := line[k+len(zephyrLogPrefix):]
		clean, runs = clean[:0], runs[:0]
		if bytes.IndexByte(raw, 0x1b) >= 0 {
			clean, runs = cleanLogText(clean, runs, raw, bodyOff)
		} else {
			clean = append(clean, raw...)
			runs = append(runs, logRun{at: 0, file: bodyOff})
		}
		body := bytes.TrimRight(clean, " \t\r")
		if j := bytes.Index(line[:k], []byte(zephyrLogPrefix)); j >= 0 && cur != nil && cur.bad == nil && !bytes.Equal(body, []byte(zephyrLogBegin)) {
			// Two records on one line: the first was cut short (a reset,
			// lost characters), so the dump has lost bytes.
			cur.bad = &FormatError{File: name, Offset: int64(off + j),
				Msg: fmt.Sprintf("line %d: a #CD: line cut short by another #CD: on the same line: bytes of the dump are lost", lineNo)}
		}
		switch {
		case bytes.Equal(body, []byte(zephyrLogBegin)):
			if cur != nil {
				cur.cutBy = lineNo
				keep(cur)
			}
			cur = &zephyrLogDump{begin: lineNo, beginOff: int64(off + k), deviceErr: -1}
		case bytes.Equal(body, []byte(zephyrLogEnd)):
			if cur == nil {
				strayEnd++
				break
			}
			cur.complete, cur.end = true, lineNo
			keep(cur)
			cur = nil
		case bytes.HasPrefix(body, []byte(zephyrLogError)):
			if cur != nil && cur.deviceErr < 0 {
				cur.deviceErr = int64(off + k)
			} else if cur == nil {
				// The backend failed before BEGIN: remember it as a dump
				// of its own so that the error can be reported.
				keep(&zephyrLogDump{begin: lineNo, end: lineNo, beginOff: int64(off + k), deviceErr: int64(off + k)})
			}
		case cur == nil:
			stray++
		case cur.bad != nil || cur.deviceErr >= 0:
			// Nothing after a bad line or the device's error is used.
		default:
			cur.bad = zephyrLogHex(&cur.hexDump, body, runs, name)
		}
		off = next
	}
	if cur != nil {
		keep(cur)
	}
	if len(dumps) == 0 {
		return nil, &FormatError{File: name, Offset: -1, Err: ErrUnknownFormat, Msg: "no \"#CD:BEGIN#\" line: want a Zephyr coredump log"}
	}

	// Choose: the last complete dump that decodes, else the last
	// incomplete one that does.
	var chosen *zephyrLogDump
	for _, wantComplete := range []bool{true, false} {
		for i := len(dumps) - 1; i >= 0 && chosen == nil; i-- {
			z := dumps[i]
			if z.complete != wantComplete || !z.usable() {
				continue
			}
			d, err := decodeZephyr(&binReader{name: name, data: z.bin, pos: z.pos}, FormatZephyrLog)
			if err != nil {
				z.decodeErr = err
				continue
			}
			z.dump, chosen = d, z
		}
		if chosen != nil {
			break
		}
	}
	if chosen == nil {
		return nil, zephyrLogFailure(dumps, name)
	}

	d := chosen.dump
	var notes []string
	if len(dumps)+forgotten > 1 {
		notes = append(notes, fmt.Sprintf("the log holds %d coredumps (#CD:BEGIN# lines): the one at %s is analysed, the last that is complete and decodes", len(dumps)+forgotten, chosen.lines()))
	}
	if !chosen.complete {
		msg := "no \"#CD:END#\" line: the log may be cut short"
		if chosen.cutBy != 0 {
			msg = fmt.Sprintf("the coredump at %s has no \"#CD:END#\" line (a new #CD:BEGIN# at line %d cut it short): the device may have reset while dumping", chosen.lines(), chosen.cutBy)
		}
		notes = append(notes, msg)
	}
	shown := 0
	for i := len(dumps) - 1; i >= 0; i-- {
		z := dumps[i]
		if z == chosen {
			continue
		}
		if shown == zephyrLogMaxNotes {
			notes = append(notes, fmt.Sprintf("%d more coredumps of the log are not used (not listed)", i+1))
			break
		}
		shown++
		notes = append(notes, fmt.Sprintf("the coredump at %s is not used: %s", z.lines(), z.why()))
	}
	if forgotten > 0 {
		notes = append(notes, fmt.Sprintf("%d earlier coredumps of the log were not examined (more than %d in one log)", forgotten, zephyrLogMaxTracked))
	}
	if chosen.interleaved > 0 {
		notes = append(notes, fmt.Sprintf("%d other log lines between the coredump's #CD: lines were skipped (the first at line %d)", chosen.interleaved, chosen.firstOther))
	}
	if stray > 0 {
		notes = append(notes, fmt.Sprintf("%d #CD: data lines outside any #CD:BEGIN#...#CD:END# were skipped", stray))
	}
	if strayEnd > 0 {
		notes = append(notes, fmt.Sprintf("%d #CD:END# lines without a #CD:BEGIN# were skipped", strayEnd))
	}
	d.Warnings = append(d.Warnings, notes...)
	return d, nil
}

// zephyrLogHex appends the bytes of one data line (cleaned text body,
// runs mapping it to the file) to h, or says why the line is not hex.
func zephyrLogHex(h *hexDump, body []byte, runs []logRun, name string) error {
	for i, c := range body {
		if !isHexDigit(c) {
			return &FormatError{File: name, Offset: logRunPos(runs, i),
				Msg: fmt.Sprintf("invalid hex digit %q after #CD:: want two hex digits per byte", c)}
		}
	}
	if len(body)%2 != 0 {
		return &FormatError{File: name, Offset: logRunPos(runs, 0),
			Msg: fmt.Sprintf("#CD: line of %d hex digits: want two hex digits per byte", len(body))}
	}
	base := len(h.bin)
	for _, r := range runs {
		if r.at >= len(body) {
			break
		}
		b := (r.at + 1) / 2 // first byte whose digits start in this run
		h.segs = append(h.segs, hexSegment{bin: base + b, text: r.file + int64(2*b-r.at)})
	}
	for i := 0; i < len(body); i += 2 {
		h.bin = append(h.bin, hexNibble(body[i])<<4|hexNibble(body[i+1]))
	}
	return nil
}

// why says why a dump of the log was not analysed.
func (z *zephyrLogDump) why() string {
	switch {
	case z.deviceErr >= 0:
		return "the device reported \"#CD:ERROR CANNOT DUMP#\" (the coredump backend failed)"
	case z.bad != nil:
		return errNoFile(z.bad)
	case len(z.bin) == 0:
		return "it holds no data lines"
	case z.decodeErr != nil:
		return errNoFile(z.decodeErr)
	case !z.complete && z.cutBy != 0:
		return fmt.Sprintf("no \"#CD:END#\" line (a new #CD:BEGIN# at line %d cut it short)", z.cutBy)
	case !z.complete:
		return "no \"#CD:END#\" line (the log ends inside it)"
	default:
		return "a later complete coredump is analysed"
	}
}

// errNoFile is err's message without the file name (a warning about the
// file being read).
func errNoFile(err error) string {
	var fe *FormatError
	if errors.As(err, &fe) {
		if fe.Offset >= 0 && fe.Field == "" {
			return fmt.Sprintf("offset %d: %s", fe.Offset, fe.Msg)
		}
		return fe.Msg
	}
	return err.Error()
}

// zephyrLogFailure is the error of a log none of whose dumps decodes: that of
// the dump that would have been chosen (the last complete one, else the
// last one).
func zephyrLogFailure(dumps []*zephyrLogDump, name string) error {
	z := dumps[len(dumps)-1]
	for i := len(dumps) - 1; i >= 0; i-- {
		if dumps[i].complete {
			z = dumps[i]
			break
		}
	}
	switch {
	case z.deviceErr >= 0:
		return &FormatError{File: name, Offset: z.deviceErr, Msg: "the device reported \"#CD:ERROR CANNOT DUMP#\": the coredump backend failed"}
	case z.bad != nil:
		return z.bad
	case z.decodeErr != nil:
		return z.decodeErr
	default:
		return &FormatError{File: name, Offset: z.beginOff, Msg: fmt.Sprintf("the #CD: dump at %s holds no data lines", z.lines())}
	}
}

// SymbolRegion is memory a dump holds whose address it gives only as a
// symbol of the firmware: a Zephyr coredump's threads metadata block is
// the bytes of _kernel, wherever the ELF put it.
type SymbolRegion struct {
	Symbol string // "_kernel"
	Name   string // where the bytes came from, for messages and the region's Name
	Offset int64  // of the bytes in the dump file, -1 unknown
	Data   []byte
}

// PlaceSymbolRegions moves each of d.SymbolRegions whose symbol lookup
// finds into d.Memory, at the symbol's address. lookup returns the
// symbol's address and size (0 when unknown). A region is not placed, and
// a warning says why, when its size differs from the symbol's (the ELF is
// not the dump's) or when it would overlap the dump's own memory only in
// part; when the dump's memory already holds the whole symbol, that memory
// wins silently (both were taken at the same moment). It returns the
// warnings (d.Warnings is left alone). Placed regions leave
// d.SymbolRegions.
func (d *Dump) PlaceSymbolRegions(lookup func(name string) (addr, size uint32, ok bool)) []string {
	var warnings []string
	var left []SymbolRegion
	for _, sr := range d.SymbolRegions {
		addr, size, ok := lookup(sr.Symbol)
		if !ok {
			left = append(left, sr)
			continue
		}
		n := uint64(len(sr.Data))
		if size != 0 && uint64(size) != n {
			warnings = append(warnings, fmt.Sprintf("the %s has %d bytes but the ELF's %s has %d: not used (is the ELF the dump's firmware?)", sr.Name, n, sr.Symbol, size))
			continue
		}
		if n == 0 || uint64(addr)+n > 1<<32 {
			continue
		}
		covered, overlap := false, false
		for _, r := range d.Memory {
			if r.Contains(addr) && uint64(addr)+n <= r.End() {
				covered = true
			} else if uint64(r.Addr) < uint64(addr)+n && uint64(addr) < r.End() {
				overlap = true
			}
		}
		switch {
		case covered:
		case overlap:
			warnings = append(warnings, fmt.Sprintf("the %s would partly overlap the dump's memory at 0x%08x: not used", sr.Name, addr))
		default:
			d.Memory = append(d.Memory, unwinders.Region{Name: sr.Name, Addr: addr, Data: sr.Data})
		}
	}
	d.SymbolRegions = left
	return warnings
}
