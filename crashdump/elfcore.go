package crashdump

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// FormatELFCore is the Format name of an ELF core file.
const FormatELFCore = "elf-core"

// ELF core file layout (gABI "ELF Header", "Program Header", "Note
// Section"; the ARM Linux note layouts GDB reads and writes):
//
//	ELF32 little-endian header, e_type ET_CORE (4), e_machine EM_ARM (40)
//	PT_LOAD segments:  the memory, p_vaddr and p_filesz bytes at p_offset
//	PT_NOTE segments:  "CORE" NT_PRSTATUS (1): struct elf_prstatus, 148
//	                   bytes, pr_pid at 24, pr_reg at 72: r0-r15, cpsr
//	                   (xPSR on M-profile), orig_r0; one per thread, the
//	                   current thread first
//	                   "LINUX" NT_ARM_VFP (0x400): d0-d31 (8 bytes each),
//	                   then fpscr
//	                   "GNU" NT_GNU_BUILD_ID (3): the firmware's build ID
//	                   "FAULTLINE" (2): the threads' names, "PID NAME"
//	                   lines, when the core holds several threads
//	                   "FAULTLINE" (1): what a core cannot say otherwise
//	                   (MSP, PSP, CONTROL, the masks, the fault status
//	                   registers, the CPU, the truth), as a faultline.dump/1
//	                   manifest without memory; faultline writes it, GDB
//	                   ignores it
const (
	elfHdrSize     = 52
	elfPhdrSize    = 32
	etCore         = 4
	emARM          = 40
	ptLoad         = 1
	ptNote         = 4
	prstatusSize   = 148
	prstatusRegOff = 72
	prstatusPidOff = 24
	prstatusSigOff = 12
	armVFPSize     = 32*8 + 4
	ntFaultline    = 1
	// ntFaultlineThreads is faultline's note naming the threads: one
	// "PID NAME" line per NT_PRSTATUS note.
	ntFaultlineThreads = 0x464c5401 // "FLT" 1: a type no GDB or BFD note reader knows
	maxCoreNotes       = 4096
	maxCoreSegs        = 4096
)

func matchELFCore(data []byte) bool {
	return len(data) >= 18 && string(data[:4]) == "\x7fELF" && binary.LittleEndian.Uint16(data[16:]) == etCore
}

// parseELFCore decodes an ELF core file: memory from PT_LOAD, registers
// from the first NT_PRSTATUS, FP registers from NT_ARM_VFP, the build ID,
// and faultline's own note when there is one. A segment whose bytes the
// file does not hold in full (a core cut short) is kept as far as it
// goes, with a warning naming what is missing.
func parseELFCore(data []byte, name string, _ func(string) ([]byte, error)) (*Dump, error) {
	r := &binReader{name: name, data: data}
	d := &Dump{Path: name, Format: FormatELFCore}
	if err := r.need(elfHdrSize, "the ELF header"); err != nil {
		return nil, err
	}
	switch {
	case data[4] != 1:
		return nil, r.errAt(4, "ELF class %d: want 1 (32-bit) for an ARM core file", data[4])
	case data[5] != 1:
		return nil, r.errAt(5, "ELF data encoding %d: want 1 (little-endian)", data[5])
	}
	if m := binary.LittleEndian.Uint16(data[18:]); m != emARM {
		return nil, r.errAt(18, "core file for machine %d: want 40 (EM_ARM)", m)
	}
	phoff := binary.LittleEndian.Uint32(data[28:])
	phentsize := binary.LittleEndian.Uint16(data[42:])
	phnum := binary.LittleEndian.Uint16(data[44:])
	switch {
	case phnum == 0:
		return nil, r.errAt(44, "no program headers: a core file holds its memory and notes in segments")
	case phentsize != elfPhdrSize:
		return nil, r.errAt(42, "program header size %d: want %d", phentsize, elfPhdrSize)
	case uint64(phoff)+uint64(phnum)*elfPhdrSize > uint64(len(data)):
		return nil, r.errAt(28, "truncated: %d program headers at offset %d need %d bytes, the file has %d", phnum, phoff, uint64(phoff)+uint64(phnum)*elfPhdrSize, len(data))
	case phnum > maxCoreSegs:
		return nil, r.errAt(44, "%d program headers: more than %d", phnum, maxCoreSegs)
	}
	set := &regionSet{r: r}
	var (
		notes []note
		cut   *FormatError // the first note segment the file does not hold in full
	)
	for i := 0; i < int(phnum); i++ {
		h := int(phoff) + i*elfPhdrSize
		typ := binary.LittleEndian.Uint32(data[h:])
		off := binary.LittleEndian.Uint32(data[h+4:])
		vaddr := binary.LittleEndian.Uint32(data[h+8:])
		filesz := binary.LittleEndian.Uint32(data[h+16:])
		avail := uint64(0)
		if uint64(off) < uint64(len(data)) {
			avail = uint64(len(data)) - uint64(off)
		}
		switch typ {
		case ptLoad:
			if filesz == 0 {
				continue
			}
			if err := set.checkSize(h, vaddr, uint64(filesz), "segment"); err != nil {
				return nil, err
			}
			n := min(uint64(filesz), avail)
			if n < uint64(filesz) {
				d.Warnings = append(d.Warnings, fmt.Sprintf("segment %d (0x%08x, %d bytes) is cut short: the file holds %d of its bytes; memory from 0x%08x on is missing", i, vaddr, filesz, n, uint64(vaddr)+n))
			}
			if n > 0 {
				set.add(h, regionName(FormatELFCore, vaddr), vaddr, data[off:uint64(off)+n])
			}
		case ptNote:
			n := min(uint64(filesz), avail)
			if n < uint64(filesz) {
				// A core cut short: the notes (the registers) may lie
				// wholly or partly beyond the end of the file.
				d.Warnings = append(d.Warnings, fmt.Sprintf("note segment %d is cut short: %d of %d bytes at offset %d", i, n, filesz, off))
				if cut == nil {
					cut = r.errAt(int(min(uint64(off), uint64(len(data)))), "truncated: note segment %d (%d bytes at offset %d) needs the file to be %d bytes long, it has %d; the registers are in it", i, filesz, off, uint64(off)+uint64(filesz), len(data))
				}
			}
			if n == 0 {
				continue
			}
			ns, stop := parseNotes(data[off:uint64(off)+n], maxCoreNotes-len(notes))
			if uint64(stop) < n {
				d.Warnings = append(d.Warnings, fmt.Sprintf("note segment %d: the note at offset %d does not fit; the notes after it were ignored", i, uint64(off)+uint64(stop)))
			}
			for k := range ns {
				ns[k].off += int(off)
			}
			notes = append(notes, ns...)
		}
	}
	// GDB's gcore writes each thread's stack as a segment of its own, over
	// the sections it lies in: equal bytes where they overlap are one
	// memory.
	if err := set.mergeAgreeing(); err != nil {
		return nil, err
	}
	d.Memory = set.regions

	var (
		own     *Dump
		threads []Thread
		names   map[uint32]string
	)
	for _, n := range notes {
		switch {
		case n.name == "CORE" && n.typ == ntPRStatus:
			if len(n.desc) < prstatusRegOff+17*4 {
				return nil, r.errAt(n.off, "NT_PRSTATUS note of %d bytes: want %d (struct elf_prstatus with r0-r15 and cpsr at offset %d)", len(n.desc), prstatusSize, prstatusRegOff)
			}
			w := func(i int) uint32 { return binary.LittleEndian.Uint32(n.desc[prstatusRegOff+4*i:]) }
			var th Thread
			th.ID = binary.LittleEndian.Uint32(n.desc[prstatusPidOff:])
			for i := 0; i < 16; i++ {
				th.Regs.Set(unwinders.R0+unwinders.Reg(i), w(i))
			}
			th.Regs.Set(unwinders.XPSR, w(16))
			threads = append(threads, th)
		case n.name == "LINUX" && n.typ == ntARMVFP:
			if len(threads) > 1 {
				continue // a later thread's FP registers: not the crash's
			}
			if len(n.desc) < armVFPSize {
				d.Warnings = append(d.Warnings, fmt.Sprintf("NT_ARM_VFP note of %d bytes ignored: want %d", len(n.desc), armVFPSize))
				continue
			}
			for i := 0; i < 32; i++ {
				d.Regs.Set(unwinders.S(i), binary.LittleEndian.Uint32(n.desc[4*i:]))
			}
			d.Regs.Set(unwinders.FPSCR, binary.LittleEndian.Uint32(n.desc[32*8:]))
		case n.name == "GNU" && n.typ == ntGNUBuildID:
			if id, ok := NormalizeBuildID(fmt.Sprintf("%x", n.desc)); ok {
				d.BuildID = id
			}
		case n.name == "FAULTLINE" && n.typ == ntFaultline:
			m, err := parseNativePrecise(n.desc, name, nil)
			if err != nil {
				// The note's own offsets are not the file's: name the
				// note, and the field in it.
				if fe, ok := err.(*FormatError); ok {
					fe.Field = strings.TrimSuffix("FAULTLINE note "+fe.Field, " ")
					fe.Offset = -1
				}
				return nil, err
			}
			own = m
		case n.name == "FAULTLINE" && n.typ == ntFaultlineThreads:
			names = threadNames(n.desc)
		}
	}
	if len(threads) == 0 {
		if cut != nil {
			return nil, cut
		}
		return nil, r.errAt(-1, "no NT_PRSTATUS note: a core file without registers cannot be decoded")
	}
	threads[0].Regs.Each(func(reg unwinders.Reg, v uint32) { d.Regs.Set(reg, v) })
	explicit := fault.SCB{}
	if own != nil {
		d.CPU, d.Truth = own.CPU, own.Truth
		if own.BuildID != "" {
			d.BuildID = own.BuildID
		}
		own.Regs.Each(func(reg unwinders.Reg, v uint32) { d.Regs.Set(reg, v) })
		explicit = own.Fault
	}
	if err := d.faultFromMemory(explicit); err != nil {
		return nil, err
	}
	if len(threads) > 1 {
		threads[0].Regs = d.Regs
		for i := range threads {
			threads[i].Name = names[threads[i].ID]
		}
		d.Threads = threads
	}
	return d, nil
}

// threadNames reads faultline's thread-name note: lines of "ID NAME",
// the id in decimal. Lines that do not parse are skipped.
func threadNames(b []byte) map[uint32]string {
	m := map[uint32]string{}
	for _, line := range strings.Split(string(b), "\n") {
		id, name, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if v, err := strconv.ParseUint(id, 10, 32); err == nil && len(name) <= 256 {
			m[uint32(v)] = name
		}
	}
	return m
}

// WriteELFCore writes d as an ELF core file that GDB opens with the
// firmware ELF (gdb FW.elf core): the registers in NT_PRSTATUS (with SP
// set to the stack that holds the exception frame, so that GDB's
// M-profile unwinder, which reads no MSP or PSP from a core, finds it),
// the FP registers in NT_ARM_VFP, the build ID, every memory region as a
// PT_LOAD segment, and a FAULTLINE note with the whole register file and
// the fault status registers, which the importer reads back.
func (d *Dump) WriteELFCore(w io.Writer) error {
	var notes bytes.Buffer
	addNote := func(name string, typ uint32, desc []byte) {
		nm := append([]byte(name), 0)
		var h [12]byte
		binary.LittleEndian.PutUint32(h[0:], uint32(len(nm)))
		binary.LittleEndian.PutUint32(h[4:], uint32(len(desc)))
		binary.LittleEndian.PutUint32(h[8:], typ)
		notes.Write(h[:])
		notes.Write(nm)
		notes.Write(make([]byte, (4-len(nm)%4)%4))
		notes.Write(desc)
		notes.Write(make([]byte, (4-len(desc)%4)%4))
	}
	pr := make([]byte, prstatusSize)
	binary.LittleEndian.PutUint16(pr[prstatusSigOff:], 11) // pr_cursig: SIGSEGV, a fault
	binary.LittleEndian.PutUint32(pr[prstatusPidOff:], 1)
	for i := 0; i < 16; i++ {
		binary.LittleEndian.PutUint32(pr[prstatusRegOff+4*i:], d.Regs.Value(unwinders.R0+unwinders.Reg(i)))
	}
	binary.LittleEndian.PutUint32(pr[prstatusRegOff+4*13:], gdbStackPointer(&d.Regs))
	binary.LittleEndian.PutUint32(pr[prstatusRegOff+4*16:], d.Regs.Value(unwinders.XPSR))
	addNote("CORE", ntPRStatus, pr)
	// The other threads (Dump.Threads after the first), each its own
	// NT_PRSTATUS with its own pid, so that GDB lists them as threads.
	var names strings.Builder
	for i, th := range d.Threads {
		fmt.Fprintf(&names, "%d %s\n", i+1, strings.ReplaceAll(th.Name, "\n", " "))
		if i == 0 {
			continue
		}
		pr := make([]byte, prstatusSize)
		binary.LittleEndian.PutUint32(pr[prstatusPidOff:], uint32(i+1))
		for k := 0; k < 16; k++ {
			binary.LittleEndian.PutUint32(pr[prstatusRegOff+4*k:], th.Regs.Value(unwinders.R0+unwinders.Reg(k)))
		}
		xpsr, ok := th.Regs.Get(unwinders.XPSR)
		if !ok {
			xpsr = 1 << 24 // Thumb: M-profile code always is
		}
		binary.LittleEndian.PutUint32(pr[prstatusRegOff+4*16:], xpsr)
		addNote("CORE", ntPRStatus, pr)
	}
	if len(d.Threads) > 1 {
		addNote("FAULTLINE", ntFaultlineThreads, []byte(names.String()))
	}
	if _, ok := d.Regs.Get(unwinders.S(0)); ok {
		vfp := make([]byte, armVFPSize)
		for i := 0; i < 32; i++ {
			binary.LittleEndian.PutUint32(vfp[4*i:], d.Regs.Value(unwinders.S(i)))
		}
		binary.LittleEndian.PutUint32(vfp[32*8:], d.Regs.Value(unwinders.FPSCR))
		addNote("LINUX", ntARMVFP, vfp)
	}
	if d.BuildID != "" {
		if id, err := hex.DecodeString(d.BuildID); err == nil {
			addNote("GNU", ntGNUBuildID, id)
		}
	}
	meta := *d
	meta.Memory = nil
	var mj bytes.Buffer
	if err := meta.WriteSelfContained(&mj); err != nil {
		return err
	}
	addNote("FAULTLINE", ntFaultline, mj.Bytes())

	phnum := 1 + len(d.Memory)
	off := uint32(elfHdrSize + phnum*elfPhdrSize)
	var out bytes.Buffer
	hdr := make([]byte, elfHdrSize)
	copy(hdr, "\x7fELF\x01\x01\x01")
	binary.LittleEndian.PutUint16(hdr[16:], etCore)
	binary.LittleEndian.PutUint16(hdr[18:], emARM)
	binary.LittleEndian.PutUint32(hdr[20:], 1)
	binary.LittleEndian.PutUint32(hdr[28:], elfHdrSize)
	binary.LittleEndian.PutUint32(hdr[36:], 0x05000000) // EF_ARM_EABI_VER5
	binary.LittleEndian.PutUint16(hdr[40:], elfHdrSize)
	binary.LittleEndian.PutUint16(hdr[42:], elfPhdrSize)
	binary.LittleEndian.PutUint16(hdr[44:], uint16(phnum))
	binary.LittleEndian.PutUint16(hdr[46:], 40)
	if phnum > 0xffff {
		return fmt.Errorf("cannot write an ELF core with %d memory regions: at most %d", len(d.Memory), 0xfffe)
	}
	out.Write(hdr)
	ph := func(typ, o, vaddr, size, flags, align uint32) {
		b := make([]byte, elfPhdrSize)
		binary.LittleEndian.PutUint32(b[0:], typ)
		binary.LittleEndian.PutUint32(b[4:], o)
		binary.LittleEndian.PutUint32(b[8:], vaddr)
		binary.LittleEndian.PutUint32(b[16:], size)
		if typ == ptLoad {
			binary.LittleEndian.PutUint32(b[20:], size)
		}
		binary.LittleEndian.PutUint32(b[24:], flags)
		binary.LittleEndian.PutUint32(b[28:], align)
		out.Write(b)
	}
	ph(ptNote, off, 0, uint32(notes.Len()), 4, 4)
	off += uint32(notes.Len())
	for _, r := range d.Memory {
		if uint64(off)+uint64(len(r.Data)) > 1<<32-1 {
			return fmt.Errorf("cannot write an ELF core of more than 4 GiB")
		}
		ph(ptLoad, off, r.Addr, uint32(len(r.Data)), 6, 1) // PF_R|PF_W
		off += uint32(len(r.Data))
	}
	out.Write(notes.Bytes())
	// The memory straight from the regions: a core is never held twice.
	if _, err := w.Write(out.Bytes()); err != nil {
		return err
	}
	for _, r := range d.Memory {
		if _, err := w.Write(r.Data); err != nil {
			return err
		}
	}
	return nil
}

// gdbStackPointer is the SP to give GDB in NT_PRSTATUS: in handler mode
// with LR holding an EXC_RETURN that names the process stack, the PSP
// (where the exception frame is); otherwise the dump's SP.
func gdbStackPointer(r *unwinders.Registers) uint32 {
	sp := r.Value(unwinders.SP)
	lr, okLR := r.Get(unwinders.LR)
	psp, okP := r.Get(unwinders.PSP)
	if ipsr, ok := r.IPSR(); ok && ipsr != 0 && okLR && okP && lr>>24 == 0xff && lr&4 != 0 {
		return psp
	}
	return sp
}
