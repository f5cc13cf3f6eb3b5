package crashdump

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

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
)

// parseZephyrLog decodes the logging backend's form: "#CD:BEGIN#", lines
// of "#CD:" followed by hex digits, "#CD:END#". Anything before "#CD:" on a
// line (timestamps, log prefixes) and lines without it are ignored. The
// first complete dump is decoded; a dump whose END line is missing is
// decoded with a warning when no complete one follows.
func parseZephyrLog(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	var (
		cur, first *hexDump
		done       bool
	)
	for off := 0; off < len(data) && !done; {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		line := data[off:]
		if end >= 0 {
			line = data[off : off+end]
			next = off + end + 1
		}
		if k := bytes.Index(line, []byte(zephyrLogPrefix)); k >= 0 {
			bodyOff := off + k + len(zephyrLogPrefix)
			body := bytes.TrimRight(line[k+len(zephyrLogPrefix):], " \t\r")
			switch {
			case bytes.Equal(body, []byte(zephyrLogBegin)):
				if cur != nil && first == nil {
					first = cur
				}
				cur = &hexDump{}
			case bytes.Equal(body, []byte(zephyrLogEnd)):
				if cur != nil {
					cur.complete = true
					first, done = cur, true
				}
			case bytes.HasPrefix(body, []byte(zephyrLogError)):
				return nil, &FormatError{File: name, Offset: int64(off + k), Msg: "the device reported \"#CD:ERROR CANNOT DUMP#\": the coredump backend failed"}
			case cur == nil:
				// Hex before any BEGIN: not part of a dump we can frame.
			default:
				for i, c := range body {
					if !isHexDigit(c) {
						return nil, &FormatError{File: name, Offset: int64(bodyOff + i),
							Msg: fmt.Sprintf("invalid hex digit %q after #CD:: want two hex digits per byte", c)}
					}
				}
				if len(body)%2 != 0 {
					return nil, &FormatError{File: name, Offset: int64(bodyOff),
						Msg: fmt.Sprintf("#CD: line of %d hex digits: want two hex digits per byte", len(body))}
				}
				cur.segs = append(cur.segs, hexSegment{bin: len(cur.bin), text: int64(bodyOff)})
				for i := 0; i < len(body); i += 2 {
					cur.bin = append(cur.bin, hexNibble(body[i])<<4|hexNibble(body[i+1]))
				}
			}
		}
		off = next
	}
	if first == nil {
		first = cur
	}
	if first == nil {
		return nil, &FormatError{File: name, Offset: -1, Err: ErrUnknownFormat, Msg: "no \"#CD:BEGIN#\" line: want a Zephyr coredump log"}
	}
	if len(first.bin) == 0 {
		return nil, &FormatError{File: name, Offset: -1, Msg: "the #CD: dump holds no data lines"}
	}
	d, err := decodeZephyr(&binReader{name: name, data: first.bin, pos: first.pos}, FormatZephyrLog)
	if err != nil {
		return nil, err
	}
	if !first.complete {
		d.Warnings = append(d.Warnings, "no \"#CD:END#\" line: the log may be cut short")
	}
	return d, nil
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
