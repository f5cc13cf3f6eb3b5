package crashdump

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// FormatMemfault is the Format name of a Memfault coredump.
const FormatMemfault = "memfault"

// Memfault coredump layout (cortex-m.md section 7; memfault-firmware-sdk's
// memfault_coredump.c). Little-endian.
//
//	header (12 bytes):  magic u32 0x45524F43 ("CORE"), version u32 (2), total_size u32
//	                    (the whole dump, header and footer included)
//	blocks:             type u8, 3 pad bytes, address u32, length u32, length bytes
//	                    type 0: registers r0-r12 sp lr pc psr msp psp (19 words)
//	                    type 1: a memory region at address
//	                    types 2-11: device metadata (serial, versions, trace
//	                    reason, padding, MPU...): skipped
//	                    type 12: the firmware's build ID (a GNU build-id note,
//	                    or its descriptor bytes alone): Dump.BuildID
//	footer (16 bytes):  magic u32 0x504D5544 ("DUMP"), flags u32 (bit 0: the dump was
//	                    truncated to fit the storage), 2 reserved words
const (
	memfaultMagic       = 0x45524F43
	memfaultFooterMagic = 0x504D5544
	memfaultVersion     = 2
	memfaultHdrBytes    = 12
	memfaultBlockBytes  = 12
	memfaultFooterBytes = 16
	memfaultRegsBytes   = 19 * 4
	memfaultLastMeta    = 12 // kMfltCoredumpRegionType_BuildId
	memfaultBuildID     = 12 // the firmware's build ID
	memfaultTruncated   = 1 << 0
)

func matchMemfault(data []byte) bool {
	return len(data) >= 4 && binary.LittleEndian.Uint32(data) == memfaultMagic
}

// parseMemfault decodes a Memfault coredump. Like CrashCatcher, the
// register block holds the state before the exception (capture point b):
// PC is the faulting PC, SP the SP with the exception frame popped, MSP
// and PSP those at handler entry, which are turned into the interrupted
// code's as preExceptionStacks explains.
func parseMemfault(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	r := &binReader{name: name, data: data}
	d := &Dump{Path: name, Format: FormatMemfault}
	magic, err := r.u32("the magic \"CORE\"")
	if err != nil {
		return nil, err
	}
	if magic != memfaultMagic {
		return nil, r.errAt(0, "magic 0x%08x: want 0x%08x (\"CORE\")", magic, uint32(memfaultMagic))
	}
	ver, err := r.u32("the version")
	if err != nil {
		return nil, err
	}
	if ver != memfaultVersion {
		return nil, r.errAt(4, "Memfault coredump version %d is not supported: want 2", ver)
	}
	total, err := r.u32("the total size")
	if err != nil {
		return nil, err
	}
	switch {
	case total < memfaultHdrBytes+memfaultFooterBytes:
		return nil, r.errAt(8, "total size %d is smaller than a header and a footer (%d bytes)", total, memfaultHdrBytes+memfaultFooterBytes)
	case uint64(total) > uint64(len(data)):
		return nil, r.errAt(8, "truncated: the header's total size is %d bytes, the file has %d", total, len(data))
	case uint64(total) < uint64(len(data)):
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d bytes after the dump's total size (%d) were ignored", len(data)-int(total), total))
	}
	r.data = data[:total]
	set := &regionSet{r: r}
	haveRegs, haveFooter := false, false
	for r.left() > 0 {
		blk := r.off
		if r.left() >= 4 && binary.LittleEndian.Uint32(r.data[r.off:]) == memfaultFooterMagic {
			if r.left() != memfaultFooterBytes {
				return nil, r.errAt(blk, "footer \"DUMP\" with %d bytes to the total size: want exactly %d (magic, flags, 2 reserved words)", r.left(), memfaultFooterBytes)
			}
			r.off += 4
			flags, _ := r.u32("the footer flags")
			r.off = len(r.data)
			if flags&memfaultTruncated != 0 {
				d.Warnings = append(d.Warnings, "the footer says the dump was truncated to fit the device's storage: memory regions may be missing")
			}
			haveFooter = true
			break
		}
		typ, err := r.u8("a block header (type, pad, address, length)")
		if err != nil {
			return nil, err
		}
		if err := r.need(memfaultBlockBytes-1, "a block header (type, pad, address, length)"); err != nil {
			return nil, err
		}
		r.off += 3
		addr, _ := r.u32("the block address")
		n, _ := r.u32("the block length")
		switch {
		case typ == 0:
			if haveRegs {
				return nil, r.errAt(blk, "second register block: want one")
			}
			haveRegs = true
			if n < memfaultRegsBytes || n%4 != 0 {
				return nil, r.errAt(blk+8, "register block of %d bytes: want %d (r0-r12, sp, lr, pc, psr, msp, psp)", n, memfaultRegsBytes)
			}
			b, err := r.bytes(int(n), "the register block")
			if err != nil {
				return nil, err
			}
			if n > memfaultRegsBytes {
				d.Warnings = append(d.Warnings, fmt.Sprintf("register block of %d bytes: the %d bytes after psp were ignored", n, n-memfaultRegsBytes))
			}
			word := func(i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
			for i := 0; i < 13; i++ {
				d.Regs.Set(unwinders.R0+unwinders.Reg(i), word(i))
			}
			for i, reg := range []unwinders.Reg{unwinders.SP, unwinders.LR, unwinders.PC, unwinders.XPSR} {
				d.Regs.Set(reg, word(13+i))
			}
			m, p, note := preExceptionStacks(word(13), word(17), word(18))
			d.Regs.Set(unwinders.MSP, m)
			d.Regs.Set(unwinders.PSP, p)
			if note != "" {
				d.Warnings = append(d.Warnings, note)
			}
		case typ == 1:
			if err := set.checkSize(blk, addr, uint64(n), "memory block"); err != nil {
				return nil, err
			}
			b, err := r.bytes(int(n), fmt.Sprintf("memory block 0x%08x (%d bytes)", addr, n))
			if err != nil {
				return nil, err
			}
			set.add(blk, regionName(FormatMemfault, addr), addr, b)
		case typ == memfaultBuildID:
			b, err := r.bytes(int(min(uint64(n), 1<<31)), fmt.Sprintf("build-id block (%d bytes)", n))
			if err != nil {
				return nil, err
			}
			// Either a whole GNU build-id note or its descriptor alone.
			id, ok := findBuildIDNote(b)
			if !ok {
				id = b
			}
			if s, ok := NormalizeBuildID(hex.EncodeToString(id)); ok {
				d.BuildID = s
			} else {
				d.Warnings = append(d.Warnings, fmt.Sprintf("build-id block of %d bytes ignored: want 1 to 64 bytes or a GNU build-id note", n))
			}
		case typ <= memfaultLastMeta:
			if _, err := r.bytes(int(min(uint64(n), 1<<31)), fmt.Sprintf("metadata block of type %d (%d bytes)", typ, n)); err != nil {
				return nil, err
			}
		default:
			return nil, r.errAt(blk, "unknown block type %d: want 0 (registers), 1 (memory) or a metadata type 2-%d", typ, memfaultLastMeta)
		}
	}
	if !haveFooter {
		return nil, r.errAt(len(r.data), "no footer: want the magic 0x%08x (\"DUMP\") in the last %d bytes of the total size", uint32(memfaultFooterMagic), memfaultFooterBytes)
	}
	if !haveRegs {
		return nil, r.errAt(memfaultHdrBytes, "no register block (type 0): want the registers")
	}
	if err := set.overlaps(); err != nil {
		return nil, err
	}
	d.Memory = set.regions
	if err := d.faultFromMemory(fault.SCB{}); err != nil {
		return nil, err
	}
	return d, nil
}
