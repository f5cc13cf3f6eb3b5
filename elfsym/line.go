package elfsym

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// buf is a bounds-checked little-endian reader over one DWARF section. The
// first failed read records an error; later reads return zero values, so a
// decoder checks err once per record instead of after every field.
type buf struct {
	sec  string // section name, for errors
	data []byte
	off  int // offset of data[0] in the section
	pos  int
	err  error
}

func (b *buf) fail(what string) {
	if b.err == nil {
		b.err = fmt.Errorf("%s: at offset 0x%x: %s", b.sec, b.off+b.pos, what)
	}
	b.pos = len(b.data)
}

func (b *buf) need(n int, what string) bool {
	if b.err != nil {
		return false
	}
	if n < 0 || len(b.data)-b.pos < n {
		b.fail(fmt.Sprintf("%s needs %d bytes, only %d left", what, n, len(b.data)-b.pos))
		return false
	}
	return true
}

func (b *buf) u8(what string) uint8 {
	if !b.need(1, what) {
		return 0
	}
	v := b.data[b.pos]
	b.pos++
	return v
}

func (b *buf) u16(what string) uint16 {
	if !b.need(2, what) {
		return 0
	}
	v := uint16(b.data[b.pos]) | uint16(b.data[b.pos+1])<<8
	b.pos += 2
	return v
}

func (b *buf) u32(what string) uint32 {
	if !b.need(4, what) {
		return 0
	}
	d := b.data[b.pos:]
	v := uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16 | uint32(d[3])<<24
	b.pos += 4
	return v
}

func (b *buf) u64(what string) uint64 {
	lo := uint64(b.u32(what))
	return lo | uint64(b.u32(what))<<32
}

func (b *buf) uint(size int, what string) uint64 {
	switch size {
	case 1:
		return uint64(b.u8(what))
	case 2:
		return uint64(b.u16(what))
	case 4:
		return uint64(b.u32(what))
	case 8:
		return b.u64(what)
	}
	b.fail(fmt.Sprintf("%s: unsupported size %d", what, size))
	return 0
}

func (b *buf) skip(n uint64, what string) {
	if n > uint64(len(b.data)-b.pos) {
		b.need(len(b.data)-b.pos+1, what)
		return
	}
	b.pos += int(n)
}

// uleb reads an unsigned LEB128 number (DWARF 5 section 7.6); bits beyond
// 64 are dropped.
func (b *buf) uleb(what string) uint64 {
	if b.err == nil && b.pos < len(b.data) && b.data[b.pos] < 0x80 { // one byte: most operands
		v := b.data[b.pos]
		b.pos++
		return uint64(v)
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if !b.need(1, what) {
			return 0
		}
		c := b.data[b.pos]
		b.pos++
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

// sleb reads a signed LEB128 number.
func (b *buf) sleb(what string) int64 {
	if b.err == nil && b.pos < len(b.data) && b.data[b.pos] < 0x80 { // one byte
		c := int64(b.data[b.pos])
		b.pos++
		if c&0x40 != 0 {
			c |= -1 << 7
		}
		return c
	}
	var v int64
	shift := uint(0)
	for {
		if !b.need(1, what) {
			return 0
		}
		c := b.data[b.pos]
		b.pos++
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (b *buf) cstr(what string) string {
	if b.err != nil {
		return ""
	}
	for i := b.pos; i < len(b.data); i++ {
		if b.data[i] == 0 {
			s := string(b.data[b.pos:i])
			b.pos = i + 1
			return s
		}
	}
	b.fail(what + ": string not NUL-terminated")
	return ""
}

// lineRow is one row of a line number matrix (DWARF 5 section 6.2.2),
// packed into 16 bytes: a large unit has a million rows.
type lineRow struct {
	addr    uint32
	line    uint32
	fileEnd uint32 // DWARF file number (low 31 bits) | rowEnd
	disc    uint32
}

// rowEnd marks the DW_LNE_end_sequence row: the first address past the
// sequence. File numbers are clamped below it (no table has 2^31 files,
// so a clamped number still names no file).
const rowEnd = 1 << 31

func makeRow(addr, line uint32, file uint64, disc uint32, end bool) lineRow {
	r := lineRow{addr: addr, line: line, fileEnd: uint32(min(file, rowEnd-1)), disc: disc}
	if end {
		r.fileEnd |= rowEnd
	}
	return r
}

// file is the row's DWARF file number, resolved through lineTable.files.
func (r lineRow) file() uint32 { return r.fileEnd &^ rowEnd }

// end reports whether the row is the end_sequence row.
func (r lineRow) end() bool { return r.fileEnd&rowEnd != 0 }

// lineSeq is one sequence: rows sorted by address, one row per address
// (the last one the program emitted there, as addr2line keeps), ending with
// the end_sequence row.
type lineSeq struct {
	hi   uint64
	lo   uint32
	rows []lineRow
}

// lineTable is the decoded line number program of one compilation unit.
type lineTable struct {
	version uint16
	files   []string // by DWARF file number; "" when the entry is missing
	seqs    ivIndex[lineSeq]
	dead    [][2]uint64 // ranges of the sequences dropped as removed code
}

// lineEnv is what decoding a line program needs besides .debug_line.
type lineEnv struct {
	debugLine    []byte
	debugStr     []byte
	debugLineStr []byte
	compDir      string // DW_AT_comp_dir of the compilation unit
	compName     string // DW_AT_name of the compilation unit
	live         func(lo uint32) bool
}

// DWARF constants used by the line program decoder (DWARF 5 sections 6.2.5
// and 7.22, 7.5.6).
const (
	lnsCopy             = 1
	lnsAdvancePC        = 2
	lnsAdvanceLine      = 3
	lnsSetFile          = 4
	lnsSetColumn        = 5
	lnsNegateStmt       = 6
	lnsSetBasicBlock    = 7
	lnsConstAddPC       = 8
	lnsFixedAdvancePC   = 9
	lnsSetPrologueEnd   = 10
	lnsSetEpilogueBegin = 11
	lnsSetISA           = 12

	lneEndSequence      = 1
	lneSetAddress       = 2
	lneDefineFile       = 3
	lneSetDiscriminator = 4

	lnctPath           = 1
	lnctDirectoryIndex = 2

	formBlock2    = 0x03
	formBlock4    = 0x04
	formData2     = 0x05
	formData4     = 0x06
	formData8     = 0x07
	formString    = 0x08
	formBlock     = 0x09
	formBlock1    = 0x0a
	formData1     = 0x0b
	formSdata     = 0x0d
	formStrp      = 0x0e
	formUdata     = 0x0f
	formStrx      = 0x1a
	formData16    = 0x1e
	formLineStrp  = 0x1f
	formStrx1     = 0x25
	formStrx2     = 0x26
	formStrx3     = 0x27
	formStrx4     = 0x28
	maxLineOps    = 1 << 26 // bound on opcodes per program, far above real tables
	maxLineHeader = 1 << 20 // bound on directory/file entries
)

// decodeLineTable decodes the line number program at offset off of
// .debug_line (DWARF 2 to 5, 32- and 64-bit formats; DWARF 5 section 6.2).
// File names are built the way binutils 2.40 concat_filename builds them:
// a relative name is prefixed by its directory and, when that directory is
// relative too, by DW_AT_comp_dir. Sequences whose first address fails
// env.live (code removed by --gc-sections) are dropped.
// Cost: linear in the size of the program.
func decodeLineTable(env *lineEnv, off uint64) (*lineTable, error) {
	if off >= uint64(len(env.debugLine)) {
		return nil, fmt.Errorf(".debug_line: offset 0x%x is past the end of the section (%d bytes)", off, len(env.debugLine))
	}
	b := &buf{sec: ".debug_line", data: env.debugLine[off:], off: int(off)}
	unitLen := uint64(b.u32("unit_length"))
	offSize := 4
	if unitLen == 0xffffffff {
		unitLen = b.u64("unit_length")
		offSize = 8
	} else if unitLen >= 0xfffffff0 {
		return nil, fmt.Errorf(".debug_line: at offset 0x%x: reserved unit_length 0x%x", off, unitLen)
	}
	if b.err != nil {
		return nil, b.err
	}
	if unitLen > uint64(len(b.data)-b.pos) {
		return nil, fmt.Errorf(".debug_line: at offset 0x%x: unit_length 0x%x runs past the end of the section", off, unitLen)
	}
	b.data = b.data[:b.pos+int(unitLen)]
	t := &lineTable{version: b.u16("version")}
	if b.err == nil && (t.version < 2 || t.version > 5) {
		return nil, fmt.Errorf(".debug_line: at offset 0x%x: version %d, want 2 to 5", off, t.version)
	}
	addrSize := 4
	if t.version >= 5 {
		addrSize = int(b.u8("address_size"))
		b.u8("segment_selector_size")
	}
	hdrLen := b.uint(offSize, "header_length")
	progStart := uint64(b.pos) + hdrLen
	minInst := uint64(b.u8("minimum_instruction_length"))
	maxOps := uint64(1)
	if t.version >= 4 {
		maxOps = uint64(b.u8("maximum_operations_per_instruction"))
	}
	defaultIsStmt := b.u8("default_is_stmt")
	_ = defaultIsStmt // addr2line ignores is_stmt
	lineBase := int64(int8(b.u8("line_base")))
	lineRange := uint64(b.u8("line_range"))
	opBase := b.u8("opcode_base")
	if b.err != nil {
		return nil, b.err
	}
	if lineRange == 0 {
		return nil, fmt.Errorf(".debug_line: at offset 0x%x: line_range is 0", off)
	}
	if maxOps == 0 {
		maxOps = 1
	}
	opLens := make([]uint8, opBase)
	for i := 1; i < int(opBase); i++ {
		opLens[i] = b.u8("standard_opcode_lengths")
	}

	var dirs []string
	type fileEnt struct {
		name string
		dir  uint64
	}
	var files []fileEnt
	if t.version >= 5 {
		var err error
		readEntries := func(what string, fn func(path string, dir uint64)) {
			nfmt := int(b.u8(what + "_entry_format_count"))
			type fmtEnt struct{ ct, form uint64 }
			fmts := make([]fmtEnt, 0, nfmt)
			for i := 0; i < nfmt; i++ {
				fmts = append(fmts, fmtEnt{b.uleb(what + " content type"), b.uleb(what + " form")})
			}
			count := b.uleb(what + "_count")
			if count > maxLineHeader || count > uint64(len(b.data)) {
				b.fail(fmt.Sprintf("%s_count %d is larger than the header", what, count))
				return
			}
			for i := uint64(0); i < count && b.err == nil; i++ {
				var path string
				var dir uint64
				for _, fe := range fmts {
					s, v, e := readLineForm(b, env, fe.form, offSize)
					if e != nil && err == nil {
						err = e
					}
					switch fe.ct {
					case lnctPath:
						path = s
					case lnctDirectoryIndex:
						dir = v
					}
				}
				fn(path, dir)
			}
		}
		readEntries("directory", func(p string, _ uint64) { dirs = append(dirs, p) })
		readEntries("file_name", func(p string, d uint64) { files = append(files, fileEnt{p, d}) })
		if err != nil && b.err == nil {
			b.err = err
		}
	} else {
		for i := 0; b.err == nil; i++ {
			d := b.cstr("include_directories")
			if d == "" || i > maxLineHeader {
				break
			}
			dirs = append(dirs, d)
		}
		for i := 0; b.err == nil; i++ {
			name := b.cstr("file_names")
			if name == "" || i > maxLineHeader {
				break
			}
			dir := b.uleb("directory index")
			b.uleb("mtime")
			b.uleb("length")
			files = append(files, fileEnt{name, dir})
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	if progStart > uint64(len(b.data)) {
		return nil, fmt.Errorf(".debug_line: at offset 0x%x: header_length 0x%x runs past the unit", off, hdrLen)
	}

	// concat_filename (binutils 2.40 bfd/dwarf2.c): before DWARF 5, file and
	// directory numbers start at 1 and directory 0 means "none".
	v5 := t.version >= 5
	name := func(fe fileEnt) string {
		if fe.name == "" {
			return ""
		}
		if isAbs(fe.name) {
			return fe.name
		}
		dir := fe.dir
		var sub string
		hasSub := false
		if v5 {
			if dir < uint64(len(dirs)) {
				sub, hasSub = dirs[dir], true
			}
		} else if dir >= 1 && dir-1 < uint64(len(dirs)) {
			sub, hasSub = dirs[dir-1], true
		}
		base := ""
		if !hasSub || !isAbs(sub) {
			base = env.compDir
		}
		if base == "" {
			base, sub, hasSub = sub, "", false
		}
		if base == "" {
			return fe.name
		}
		if hasSub {
			return base + "/" + sub + "/" + fe.name
		}
		return base + "/" + fe.name
	}
	if v5 {
		t.files = make([]string, len(files))
		for i, fe := range files {
			t.files[i] = name(fe)
		}
	} else {
		t.files = make([]string, len(files)+1)
		for i, fe := range files {
			t.files[i+1] = name(fe)
		}
	}

	// The state machine (DWARF 5 section 6.2.2 and 6.2.5).
	b.pos = int(progStart)
	// Each sequence's rows are gathered in rows (reused), sorted, and
	// appended to one array for the whole table; the sequences are
	// pointed into it once it has its final size.
	var (
		seqs   []lineSeq
		spans  [][2]int // per sequence, its rows in all
		all    []lineRow
		rows   []lineRow
		addr   uint64
		opIdx  uint64
		file   uint64 = 1
		line   int64  = 1
		disc   uint64
		dead   bool
		bad    bool // an address left the 32-bit space
		firstA uint64
	)
	reset := func() {
		addr, opIdx, file, line, disc, rows, bad = 0, 0, 1, 1, 0, rows[:0], false
	}
	emit := func(end bool) {
		if len(rows) == 0 {
			firstA = addr
		}
		if addr > 0xffffffff {
			bad = true
		}
		rows = append(rows, makeRow(uint32(addr), uint32(max(line, 0)), file, uint32(min(disc, 0xffffffff)), end))
		disc = 0
	}
	advance := func(opAdv uint64) {
		if maxOps == 1 {
			addr += minInst * opAdv
		} else {
			addr += minInst * ((opIdx + opAdv) / maxOps)
			opIdx = (opIdx + opAdv) % maxOps
		}
	}
	for n := 0; b.pos < len(b.data) && b.err == nil; n++ {
		if n > maxLineOps {
			return nil, fmt.Errorf(".debug_line: at offset 0x%x: more than %d opcodes", off, maxLineOps)
		}
		op := b.data[b.pos] // the loop condition leaves at least one byte
		b.pos++
		switch {
		case op >= opBase:
			// A special opcode (section 6.2.5.1): most of a program.
			adj := uint64(op - opBase)
			if maxOps == 1 {
				addr += minInst * (adj / lineRange)
			} else {
				advance(adj / lineRange)
			}
			line += lineBase + int64(adj%lineRange)
			if len(rows) == 0 {
				firstA = addr
			}
			if addr > 0xffffffff {
				bad = true
			}
			rows = append(rows, makeRow(uint32(addr), uint32(max(line, 0)), file, uint32(min(disc, 0xffffffff)), false))
			disc = 0
		case op == 0:
			size := b.uleb("extended opcode length")
			if size == 0 || size > uint64(len(b.data)-b.pos) {
				b.fail(fmt.Sprintf("extended opcode length %d", size))
				break
			}
			end := b.pos + int(size)
			switch b.u8("extended opcode") {
			case lneEndSequence:
				emit(true)
				if !bad && len(rows) > 1 {
					if sq := makeSeq(rows); !dead && env.live(uint32(firstA)) {
						spans = append(spans, [2]int{len(all), len(all) + len(sq.rows)})
						all = append(all, sq.rows...)
						seqs = append(seqs, sq)
					} else {
						t.dead = append(t.dead, [2]uint64{uint64(sq.lo), sq.hi})
					}
				}
				dead = false
				reset()
			case lneSetAddress:
				n := int(size) - 1
				if n != addrSize && n != 4 && n != 8 {
					b.fail(fmt.Sprintf("DW_LNE_set_address with %d-byte operand", n))
					break
				}
				addr = b.uint(n, "DW_LNE_set_address")
				opIdx = 0
				if len(rows) == 0 && (addr >= 0xfffffff0 && addr <= 0xffffffff || addr > 0xffffffff) {
					dead = true // ld.lld tombstone for discarded code
				}
			case lneSetDiscriminator:
				disc = b.uleb("discriminator")
			}
			b.pos = end
		case op == lnsCopy:
			emit(false)
		case op == lnsAdvancePC:
			advance(b.uleb("DW_LNS_advance_pc"))
		case op == lnsAdvanceLine:
			line += b.sleb("DW_LNS_advance_line")
		case op == lnsSetFile:
			file = b.uleb("DW_LNS_set_file")
		case op == lnsConstAddPC:
			advance((255 - uint64(opBase)) / lineRange)
		case op == lnsFixedAdvancePC:
			addr += uint64(b.u16("DW_LNS_fixed_advance_pc"))
			opIdx = 0
		case op == lnsNegateStmt, op == lnsSetBasicBlock, op == lnsSetPrologueEnd, op == lnsSetEpilogueBegin:
		default: // DW_LNS_set_column, DW_LNS_set_isa and unknown standard opcodes
			for i := 0; i < int(opLens[op]); i++ {
				b.uleb("standard opcode operand")
			}
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	if cap(all) > len(all)+len(all)/8 {
		all = slices.Clone(all)
	}
	for i := range seqs {
		sp := spans[i]
		seqs[i].rows = all[sp[0]:sp[1]:sp[1]]
	}
	t.seqs = newIvIndex(slices.Clip(seqs), func(s *lineSeq) (uint32, uint64) { return s.lo, s.hi })
	return t, nil
}

// makeSeq sorts a sequence's rows by address (producers do not always emit
// them in order) and keeps, for each address, the last row emitted there.
func makeSeq(rows []lineRow) lineSeq {
	if !slices.IsSortedFunc(rows, cmpRow) {
		slices.SortStableFunc(rows, cmpRow)
	}
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].addr == r.addr && out[n-1].end() == r.end() {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	last := out[len(out)-1]
	hi := uint64(last.addr)
	if !last.end() {
		hi++
	}
	return lineSeq{lo: out[0].addr, hi: hi, rows: out}
}

func cmpRow(a, b lineRow) int {
	if a.addr != b.addr {
		return cmp.Compare(a.addr, b.addr)
	}
	switch {
	case a.end() == b.end():
		return 0
	case b.end():
		return -1
	}
	return 1
}

// bestSeq returns the sequence that covers addr: among the sequences that
// contain it the one starting lowest (then the longest), as addr2line's
// sort_line_sequences resolves overlaps; nil when none does.
func (t *lineTable) bestSeq(addr uint32) *lineSeq {
	var best *lineSeq
	t.seqs.containing(addr, func(s *lineSeq) bool {
		if best == nil || s.lo < best.lo || (s.lo == best.lo && s.hi > best.hi) {
			best = s
		}
		return true
	})
	return best
}

// rowAt returns the last row of s at or below addr, unless that is the
// end of the sequence. Cost: O(log n), a binary search.
func (s *lineSeq) rowAt(addr uint32) (lineRow, bool) {
	rows := s.rows
	lo, hi := 0, len(rows)
	for lo < hi { // first row with rows[i].addr > addr
		m := int(uint(lo+hi) >> 1)
		if rows[m].addr > addr {
			hi = m
		} else {
			lo = m + 1
		}
	}
	i := lo - 1
	if i < 0 || rows[i].end() || i == len(rows)-1 {
		return lineRow{}, false
	}
	return rows[i], true
}

// fileName returns the name of DWARF file number n.
func (t *lineTable) fileName(n uint64) string {
	if n < uint64(len(t.files)) && t.files[n] != "" {
		return t.files[n]
	}
	return "<unknown>"
}

// readLineForm reads one attribute of a DWARF 5 directory or file entry,
// returning it as a string (for string forms) and as a number.
func readLineForm(b *buf, env *lineEnv, form uint64, offSize int) (string, uint64, error) {
	switch form {
	case formString:
		return b.cstr("string"), 0, nil
	case formLineStrp, formStrp:
		o := b.uint(offSize, "string offset")
		tab, name := env.debugLineStr, ".debug_line_str"
		if form == formStrp {
			tab, name = env.debugStr, ".debug_str"
		}
		if o >= uint64(len(tab)) {
			return "", 0, fmt.Errorf("%s: offset 0x%x past the end of the section (%d bytes)", name, o, len(tab))
		}
		s, ok := cstring(tab, uint32(o))
		if !ok {
			return "", 0, fmt.Errorf("%s: string at 0x%x not NUL-terminated", name, o)
		}
		return s, 0, nil
	case formUdata:
		return "", b.uleb("udata"), nil
	case formSdata:
		return "", uint64(b.sleb("sdata")), nil
	case formData1:
		return "", uint64(b.u8("data1")), nil
	case formData2:
		return "", uint64(b.u16("data2")), nil
	case formData4:
		return "", uint64(b.u32("data4")), nil
	case formData8:
		return "", b.u64("data8"), nil
	case formData16:
		b.skip(16, "data16")
		return "", 0, nil
	case formBlock:
		b.skip(b.uleb("block length"), "block")
		return "", 0, nil
	case formBlock1:
		b.skip(uint64(b.u8("block1 length")), "block1")
		return "", 0, nil
	case formBlock2:
		b.skip(uint64(b.u16("block2 length")), "block2")
		return "", 0, nil
	case formBlock4:
		b.skip(uint64(b.u32("block4 length")), "block4")
		return "", 0, nil
	case formStrx, formStrx1, formStrx2, formStrx3, formStrx4:
		// Needs DW_AT_str_offsets_base of a unit; no producer uses it here.
		switch form {
		case formStrx:
			b.uleb("strx")
		case formStrx1:
			b.u8("strx1")
		case formStrx2:
			b.u16("strx2")
		case formStrx3:
			b.skip(3, "strx3")
		case formStrx4:
			b.u32("strx4")
		}
		return "", 0, fmt.Errorf("DW_FORM_strx in a line table header is not supported")
	}
	b.fail(fmt.Sprintf("unsupported form 0x%x in a line table entry format", form))
	return "", 0, nil
}

// isAbs reports whether a DWARF path is absolute (POSIX or DOS style).
func isAbs(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || len(p) > 2 && p[1] == ':' && (p[2] == '/' || p[2] == '\\')
}
