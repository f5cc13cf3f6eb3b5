package crashdump

// A generator of imported-format fixtures that does not use the importers:
// it reads a QEMU oracle dump (fixtures/qemu, faultline.dump/1) with
// encoding/json, computes the state before the exception by hand from the
// stacked frame in its RAM file (cortex-m.md section 1), and lays the bytes
// of each field format out field by field from cortex-m.md section 7. Each
// layout checks its own offsets against the table as it goes (at()), so a
// mistake in the generator cannot hide behind the same mistake in a parser.
//
//	go test ./crashdump -run TestImportFixtures -update   # rewrite fixtures/import

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the fixtures under fixtures/import")

// importSources are the oracle dumps the import fixtures derive from: a
// fault on the main stack, one on the process stack, one with an extended
// (FP, lazily stacked) frame.
var importSources = []string{"gcc-m3-O2-null_write_deep", "gcc-m3-O2-psp_thread", "gcc-m4f-O2-fpu_crash"}

// srcDump is what the generator reads from a native oracle dump.
type srcDump struct {
	CPU  string
	Regs map[string]uint32 // lower-case names, as in the manifest
	Mem  []srcRegion       // in manifest order: RAM, SCB block, FP block
}

type srcRegion struct {
	Addr uint32
	Data []byte
}

func mustHex32(t testing.TB, s string) uint32 {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return uint32(v)
}

// readSource reads fixtures/qemu/<name>.json with encoding/json only.
func readSource(t testing.TB, name string) *srcDump {
	path := filepath.Join("..", "fixtures", "qemu", name+".json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		CPU       string            `json:"cpu"`
		Registers map[string]string `json:"registers"`
		Memory    []struct {
			Address, File, Hex string
		} `json:"memory"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	s := &srcDump{CPU: m.CPU, Regs: map[string]uint32{}}
	for k, v := range m.Registers {
		s.Regs[k] = mustHex32(t, v)
	}
	for _, e := range m.Memory {
		r := srcRegion{Addr: mustHex32(t, e.Address)}
		if e.File != "" {
			if r.Data, err = os.ReadFile(filepath.Join(filepath.Dir(path), e.File)); err != nil {
				t.Fatal(err)
			}
		} else if r.Data, err = hex.DecodeString(e.Hex); err != nil {
			t.Fatal(err)
		}
		s.Mem = append(s.Mem, r)
	}
	return s
}

// word reads a little-endian word from the source memory.
func (s *srcDump) word(t testing.TB, a uint32) uint32 {
	for _, r := range s.Mem {
		if a >= r.Addr && uint64(a)+4 <= uint64(r.Addr)+uint64(len(r.Data)) {
			return binary.LittleEndian.Uint32(r.Data[a-r.Addr:])
		}
	}
	t.Fatalf("0x%08x not in the source dump", a)
	return 0
}

// preState is the state before the exception, computed by hand: the
// handler's LR is EXC_RETURN; bit 2 picks PSP or MSP, bit 4 clear means an
// extended frame (0x68 bytes instead of 0x20); stacked xPSR bit 9 means a
// 4-byte pad above the frame (cortex-m.md section 1).
type preState struct {
	R           [13]uint32 // r0-r12
	SP, LR, PC  uint32
	XPSR        uint32
	MSP, PSP    uint32 // before the exception
	EntryMSP    uint32 // at handler entry (the source dump's)
	EntryPSP    uint32
	ExcPSR      uint32 // the handler's xPSR
	FP          bool
	S           [32]uint32
	FPSCR       uint32
	FrameAddr   uint32
	FrameOnPSP  bool
	HandlerRegs map[string]uint32
}

func computePre(t testing.TB, s *srcDump) preState {
	g := s.Regs
	exc := g["lr"]
	var p preState
	p.HandlerRegs = g
	p.FrameOnPSP = exc&4 != 0
	p.FrameAddr = g["msp"]
	if p.FrameOnPSP {
		p.FrameAddr = g["psp"]
	}
	f := p.FrameAddr
	// Basic frame: r0 r1 r2 r3 r12 lr pc xpsr at +0x00..+0x1C.
	for i := 0; i < 4; i++ {
		p.R[i] = s.word(t, f+uint32(4*i))
	}
	p.R[12] = s.word(t, f+0x10)
	p.LR = s.word(t, f+0x14)
	p.PC = s.word(t, f+0x18)
	p.XPSR = s.word(t, f+0x1C)
	for i := 4; i < 12; i++ { // r4-r11 are not stacked: the handler's
		p.R[i] = g[fmt.Sprintf("r%d", i)]
	}
	size := uint32(0x20)
	if exc&0x10 == 0 {
		size = 0x68
	}
	p.SP = f + size
	if p.XPSR&(1<<9) != 0 {
		p.SP += 4
	}
	p.EntryMSP, p.EntryPSP = g["msp"], g["psp"]
	p.MSP, p.PSP = g["msp"], g["psp"]
	if p.FrameOnPSP {
		p.PSP = p.SP
	} else {
		p.MSP = p.SP
	}
	p.ExcPSR = g["xpsr"]
	if _, ok := g["fpscr"]; ok {
		// Lazy stacking was pending in the FP fixture (FPCCR.LSPACT): the
		// live S0-S31 and FPSCR at handler entry are the interrupted code's.
		p.FP = true
		for i := 0; i < 32; i++ {
			p.S[i] = g[fmt.Sprintf("s%d", i)]
		}
		p.FPSCR = g["fpscr"]
	}
	return p
}

// layout builds bytes and checks offsets as it goes.
type layout struct {
	t testing.TB
	b bytes.Buffer
}

// at checks that the next byte is written at offset want (the spec's
// offset for the field about to be written).
func (l *layout) at(want int, field string) {
	l.t.Helper()
	if l.b.Len() != want {
		l.t.Fatalf("%s at offset %d, want %d", field, l.b.Len(), want)
	}
}
func (l *layout) u8(v uint8)   { l.b.WriteByte(v) }
func (l *layout) u16(v uint16) { _ = binary.Write(&l.b, binary.LittleEndian, v) }
func (l *layout) u32(v ...uint32) {
	for _, x := range v {
		_ = binary.Write(&l.b, binary.LittleEndian, x)
	}
}
func (l *layout) raw(b []byte) { l.b.Write(b) }

// buildCrashCatcher lays out a CrashCatcher dump, version 3.0 or (major 2)
// 2.0, which has no MSP/PSP words: exceptionPSR sits at 76 and the FP block
// at 80 (cortex-m.md section 7). It also returns the
// byte ranges of each write call, for the hex transcript (one line per
// call, as CrashCatcher_DumpMemory emits them).
func buildCrashCatcher(t testing.TB, s *srcDump, p preState, major byte, overflow bool) ([]byte, [][2]int) {
	l := &layout{t: t}
	var calls [][2]int
	call := func(fn func()) {
		start := l.b.Len()
		fn()
		calls = append(calls, [2]int{start, l.b.Len()})
	}
	call(func() { l.at(0, "signature"); l.raw([]byte{'c', 'C', major, 0}) })
	var flags uint32
	if p.FP {
		flags = 1
	}
	call(func() { l.at(4, "flags"); l.u32(flags) })
	call(func() { l.at(8, "r0-r3"); l.u32(p.R[0], p.R[1], p.R[2], p.R[3]) })
	call(func() { l.at(24, "r4-r11"); l.u32(p.R[4:12]...) })
	call(func() { l.at(56, "r12"); l.u32(p.R[12]) })
	call(func() { l.at(60, "sp"); l.u32(p.SP) })
	call(func() { l.at(64, "lr pc xpsr"); l.u32(p.LR, p.PC, p.XPSR) })
	fpAt := 88
	if major == 2 {
		call(func() { l.at(76, "exceptionPSR (v2)"); l.u32(p.ExcPSR) })
		fpAt = 80
	} else {
		call(func() { l.at(76, "msp psp exceptionPSR"); l.u32(p.EntryMSP, p.EntryPSP, p.ExcPSR) })
	}
	if p.FP {
		call(func() {
			l.at(fpAt, "s0-s31 fpscr")
			l.u32(p.S[:]...)
			l.u32(p.FPSCR)
			l.at(fpAt+132, "end of FP block")
		})
	}
	for _, r := range s.Mem {
		if r.Addr == 0xE000ED00 {
			// CrashCatcher dumps the fault status registers as their own
			// last region 0xE000ED28..0xE000ED3C; keep the rest of the
			// SCB block (CPUID..SHCSR) as a region before it.
			call(func() { l.u32(r.Addr, r.Addr+0x28) })
			call(func() { l.raw(r.Data[:0x28]) })
			continue
		}
		call(func() { l.u32(r.Addr, r.Addr+uint32(len(r.Data))) })
		call(func() { l.raw(r.Data) })
	}
	for _, r := range s.Mem {
		if r.Addr == 0xE000ED00 {
			call(func() { l.u32(0xE000ED28, 0xE000ED3C) })
			call(func() { l.raw(r.Data[0x28:0x3C]) })
		}
	}
	if overflow {
		call(func() { l.raw([]byte{0xAC, 0xCE, 0x55, 0xED}) })
	}
	return l.b.Bytes(), calls
}

// crashCatcherTranscript is a console capture of the hex form: banner,
// one CRLF line per write call, trailer; then a second, repeated dump
// that is cut short (the handler dumps again until a key is pressed).
func crashCatcherTranscript(bin []byte, calls [][2]int) []byte {
	var b bytes.Buffer
	b.WriteString("boot ok\r\nrunning scenario\r\n\r\n\r\nCRASH ENCOUNTERED\r\nEnable logging and then press any key to start dump.\r\n")
	for _, c := range calls {
		b.WriteString(strings.ToUpper(hex.EncodeToString(bin[c[0]:c[1]])))
		b.WriteString("\r\n")
	}
	b.WriteString("\r\nEnd of dump\r\n")
	b.WriteString("\r\n\r\nCRASH ENCOUNTERED\r\nEnable logging and then press any key to start dump.\r\n")
	for _, c := range calls[:3] {
		b.WriteString(strings.ToUpper(hex.EncodeToString(bin[c[0]:c[1]])))
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// buildZephyr lays out a Zephyr coredump: header v2 with the CRC flag, an
// arch block v2 (r0 r1 r2 r3 r12 lr pc xpsr sp r4..r11, with SP the SP
// before the exception as Zephyr 3.x records it), a threads metadata block
// Zephyr would write (content irrelevant here: 8 bytes), the memory blocks
// and the CRC-32/IEEE trailer.
func buildZephyr(t testing.TB, s *srcDump, p preState) []byte {
	l := &layout{t: t}
	l.at(0, "id")
	l.raw([]byte{'Z', 'E'})
	l.at(2, "hdr_version")
	l.u16(2)
	l.at(4, "tgt_code")
	l.u16(3)
	l.at(6, "ptr_size_bits")
	l.u8(5)
	l.at(7, "flag")
	l.u8(1)
	l.at(8, "reason")
	l.u32(0)
	l.at(12, "arch block")
	l.u8('A')
	l.u16(2)
	l.u16(68)
	l.at(17, "arch payload")
	l.u32(p.R[0], p.R[1], p.R[2], p.R[3], p.R[12], p.LR, p.PC, p.XPSR, p.SP)
	l.u32(p.R[4:12]...)
	l.at(17+68, "after the arch block")
	l.u8('T')
	l.u16(1)
	l.u16(8)
	l.u32(0x20000000, 0) // opaque
	for _, r := range s.Mem {
		start := l.b.Len()
		l.u8('M')
		l.u16(1)
		l.u32(r.Addr, r.Addr+uint32(len(r.Data)))
		l.at(start+11, "memory data")
		l.raw(r.Data)
	}
	crc := crc32.ChecksumIEEE(l.b.Bytes())
	l.u8('C')
	l.u16(1)
	l.u32(crc)
	return l.b.Bytes()
}

// zephyrLog is the logging backend's form with log prefixes, 64 hex digits
// a line.
func zephyrLog(bin []byte) []byte {
	var b bytes.Buffer
	b.WriteString("*** Booting Zephyr OS ***\n[00:00:00.010,000] <err> os: ***** MPU FAULT *****\n")
	b.WriteString("[00:00:00.020,000] <err> coredump: #CD:BEGIN#\n")
	for i := 0; i < len(bin); i += 32 {
		fmt.Fprintf(&b, "[00:00:00.030,000] <err> coredump: #CD:%s\n", hex.EncodeToString(bin[i:min(i+32, len(bin))]))
	}
	b.WriteString("[00:00:00.040,000] <err> coredump: #CD:END#\n[00:00:00.050,000] <err> os: Halting system\n")
	return b.Bytes()
}

// buildMemfault lays out a Memfault CORE v2 dump: header, the register
// block (pre-exception state, MSP/PSP at handler entry as the SDK records
// them), a device serial metadata block, the memory blocks and the footer.
func buildMemfault(t testing.TB, s *srcDump, p preState) []byte {
	l := &layout{t: t}
	l.at(0, "magic")
	l.u32(0x45524F43)
	l.at(4, "version")
	l.u32(2)
	l.at(8, "total size")
	l.u32(0) // patched below
	l.at(12, "register block")
	l.u8(0)
	l.raw([]byte{0, 0, 0})
	l.u32(0, 19*4)
	l.at(24, "registers")
	l.u32(p.R[:]...)
	l.u32(p.SP, p.LR, p.PC, p.XPSR, p.EntryMSP, p.EntryPSP)
	l.at(24+76, "after the registers")
	serial := []byte("DAABBCCDD")
	l.u8(2)
	l.raw([]byte{0, 0, 0})
	l.u32(0, uint32(len(serial)))
	l.raw(serial)
	for _, r := range s.Mem {
		start := l.b.Len()
		l.u8(1)
		l.raw([]byte{0, 0, 0})
		l.u32(r.Addr, uint32(len(r.Data)))
		l.at(start+12, "memory data")
		l.raw(r.Data)
	}
	l.u32(0x504D5544, 0, 0, 0)
	b := l.b.Bytes()
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)))
	return b
}

// gdbRegisters prints the handler-entry registers the way GDB's "info
// registers" does (as a user halted in HardFault_Handler would paste them).
func gdbRegisters(s *srcDump) []byte {
	var b bytes.Buffer
	b.WriteString("(gdb) info registers\n")
	for _, n := range []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xpsr", "msp", "psp", "primask", "basepri", "faultmask", "control"} {
		v := s.Regs[n]
		name := n
		if n == "xpsr" {
			name = "xPSR"
		}
		switch n {
		case "sp", "msp", "psp":
			fmt.Fprintf(&b, "%-15s0x%-18x0x%x\n", name, v, v)
		case "pc":
			fmt.Fprintf(&b, "%-15s0x%-18x0x%x <HardFault_Handler>\n", name, v, v)
		default:
			fmt.Fprintf(&b, "%-15s0x%-18x%d\n", name, v, v)
		}
	}
	if v, ok := s.Regs["fpscr"]; ok { // "info all-registers" on an FPU core
		for i := 0; i < 32; i++ {
			x := s.Regs[fmt.Sprintf("s%d", i)]
			fmt.Fprintf(&b, "%-15s%-19g(raw 0x%08x)\n", fmt.Sprintf("s%d", i), math.Float32frombits(x), x)
		}
		fmt.Fprintf(&b, "%-15s0x%-18x%d\n", "fpscr", v, v)
	}
	return b.Bytes()
}

// openocdRegisters prints them as OpenOCD's "reg" does.
func openocdRegisters(s *srcDump) []byte {
	var b bytes.Buffer
	b.WriteString("===== arm v7m registers\n")
	for i, n := range []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xPSR", "msp", "psp", "primask", "basepri", "faultmask", "control"} {
		dirty := ""
		if n == "pc" {
			dirty = " (dirty)"
		}
		fmt.Fprintf(&b, "(%d) %s (/32): 0x%08x%s\n", i, n, s.Regs[strings.ToLower(n)], dirty)
	}
	if v, ok := s.Regs["fpscr"]; ok {
		for i := 0; i < 16; i++ { // OpenOCD shows the double registers too: ignored
			fmt.Fprintf(&b, "(%d) d%d (/64): 0x%08x%08x\n", 23+i, i, s.Regs[fmt.Sprintf("s%d", 2*i+1)], s.Regs[fmt.Sprintf("s%d", 2*i)])
		}
		for i := 0; i < 32; i++ {
			fmt.Fprintf(&b, "(%d) s%d (/32): 0x%08x\n", 39+i, i, s.Regs[fmt.Sprintf("s%d", i)])
		}
		fmt.Fprintf(&b, "(71) fpscr (/32): 0x%08x\n", v)
	}
	return b.Bytes()
}

// ihexImage writes all memory regions as Intel HEX: 16 data bytes a
// record, an extended linear address record (type 04) whenever the upper
// 16 bits change, and the EOF record.
func ihexImage(s *srcDump) []byte {
	var b bytes.Buffer
	rec := func(addr uint16, typ byte, data []byte) {
		sum := byte(len(data)) + byte(addr>>8) + byte(addr) + typ
		for _, c := range data {
			sum += c
		}
		fmt.Fprintf(&b, ":%02X%04X%02X%s%02X\r\n", len(data), addr, typ, strings.ToUpper(hex.EncodeToString(data)), byte(-sum))
	}
	upper := -1
	for _, r := range s.Mem {
		for i := 0; i < len(r.Data); i += 16 {
			a := r.Addr + uint32(i)
			if int(a>>16) != upper {
				upper = int(a >> 16)
				rec(0, 4, []byte{byte(upper >> 8), byte(upper)})
			}
			rec(uint16(a), 0, r.Data[i:min(i+16, len(r.Data))])
		}
	}
	rec(0, 1, nil)
	return b.Bytes()
}

// srecImage writes all memory regions as S3 records (32-bit addresses),
// an S0 header, an S5 count and an S7 end record.
func srecImage(s *srcDump) []byte {
	var b bytes.Buffer
	rec := func(typ int, addr []byte, data []byte) {
		n := len(addr) + len(data) + 1
		sum := byte(n)
		for _, c := range addr {
			sum += c
		}
		for _, c := range data {
			sum += c
		}
		fmt.Fprintf(&b, "S%d%02X%s%s%02X\n", typ, n, strings.ToUpper(hex.EncodeToString(addr)), strings.ToUpper(hex.EncodeToString(data)), ^sum)
	}
	rec(0, []byte{0, 0}, []byte("faultline"))
	count := 0
	for _, r := range s.Mem {
		for i := 0; i < len(r.Data); i += 32 {
			a := r.Addr + uint32(i)
			rec(3, []byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}, r.Data[i:min(i+32, len(r.Data))])
			count++
		}
	}
	if count < 1<<16 {
		rec(5, []byte{byte(count >> 8), byte(count)}, nil)
	}
	rec(7, []byte{0, 0, 0, 0}, nil)
	return b.Bytes()
}

// importFixture is one generated file.
type importFixture struct {
	source string // the oracle dump
	file   string // under fixtures/import
	data   []byte
	pre    bool // holds the pre-exception state (else the handler's, like the source)
}

// buildImportFixtures builds every import fixture from the sources.
func buildImportFixtures(t testing.TB) []importFixture {
	var out []importFixture
	for _, name := range importSources {
		s := readSource(t, name)
		p := computePre(t, s)
		cc, calls := buildCrashCatcher(t, s, p, 3, false)
		cc2, _ := buildCrashCatcher(t, s, p, 2, false)
		z := buildZephyr(t, s, p)
		out = append(out,
			importFixture{name, name + ".crashcatcher.bin", cc, true},
			importFixture{name, name + ".crashcatcher.txt", crashCatcherTranscript(cc, calls), true},
			importFixture{name, name + ".crashcatcher-v2.bin", cc2, true},
			importFixture{name, name + ".zephyr.bin", z, true},
			importFixture{name, name + ".zephyr.log", zephyrLog(z), true},
			importFixture{name, name + ".memfault.bin", buildMemfault(t, s, p), true},
			importFixture{name, name + ".regs.gdb.txt", gdbRegisters(s), false},
			importFixture{name, name + ".regs.openocd.txt", openocdRegisters(s), false},
			importFixture{name, name + ".mem.hex", ihexImage(s), false},
			importFixture{name, name + ".mem.srec", srecImage(s), false},
		)
	}
	return out
}

func importDir() string { return filepath.Join("..", "fixtures", "import") }
