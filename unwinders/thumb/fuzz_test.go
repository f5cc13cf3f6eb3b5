package thumb

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// FuzzDecode checks that Decode never panics, never reads beyond the
// instruction it reports (decoding code[:Len] gives the same result), agrees
// with DecodeAt over a Memory, and that every accessor and the printer work
// on whatever it returns. The corpus is seeded from every test vector and
// every instruction of the objdump listings.
func FuzzDecode(f *testing.F) {
	for _, seed := range seedInstructions(f) {
		f.Add(seed, uint32(0x08000000))
	}
	f.Add([]byte{}, uint32(0))
	f.Add([]byte{0xff}, uint32(2))
	f.Add([]byte{0x00, 0xf0}, uint32(0xfffffffe)) // 32-bit prefix, truncated, at the top of memory
	f.Fuzz(func(t *testing.T, code []byte, addr uint32) {
		in, err := Decode(code, addr)
		switch {
		case addr&1 != 0:
			if !errors.Is(err, ErrMisaligned) {
				t.Fatalf("odd address: err %v", err)
			}
			return
		case len(code) < 2 || (len(code) < 4 && Is32Bit(uint16(code[0])|uint16(code[1])<<8)):
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("short input %x: err %v", code, err)
			}
			return
		case err != nil:
			t.Fatalf("Decode(%x): %v", code, err)
		}
		if in.Len != 2 && in.Len != 4 || in.Len > len(code) {
			t.Fatalf("Decode(%x): Len %d", code, in.Len)
		}
		if (in.Len == 4) != Is32Bit(uint16(code[0])|uint16(code[1])<<8) {
			t.Fatalf("Decode(%x): Len %d disagrees with Is32Bit", code, in.Len)
		}
		again, err := Decode(code[:in.Len:in.Len], addr)
		if err != nil || again != in {
			t.Fatalf("Decode(%x) depends on bytes past Len: %+v vs %+v (%v)", code, in, again, err)
		}
		var im unwinders.Image
		if uint64(addr)+uint64(in.Len) <= 1<<32 {
			if err := im.AddLayer(unwinders.Region{Addr: addr, Data: code[:in.Len]}); err != nil {
				t.Fatal(err)
			}
			at, err := DecodeAt(&im, addr)
			if err != nil || at != in {
				t.Fatalf("DecodeAt(%x) = %+v, %v; Decode = %+v", code, at, err, in)
			}
		}
		if in.Op >= numOps || in.String() == "" || in.Op.String() == "" {
			t.Fatalf("Decode(%x): bad op %d / text %q", code, in.Op, in.String())
		}
		in.SPDelta()
		in.IsCall()
		in.IsReturn()
		in.IsBranch()
		in.IsConditional()
		_ = in.ITConds()
		_ = in.VRegListString()
		if in.IsCall() && (!in.WritesPC() || !in.WritesLR()) {
			t.Fatalf("Decode(%x): a call must write PC and LR", code)
		}
		var s ITState
		s.Apply(&in)
		s.Apply(&in)
	})
}

// seedInstructions returns the bytes of every vector and listed instruction.
func seedInstructions(tb testing.TB) [][]byte {
	var seeds [][]byte
	if f, err := os.Open("testdata/vectors.txt"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			var b []byte
			for _, h := range strings.Fields(strings.Split(line, "\t")[0]) {
				var v uint16
				for _, c := range h {
					v = v<<4 | uint16(strings.IndexRune("0123456789abcdef", c))
				}
				b = append(b, byte(v), byte(v>>8))
			}
			seeds = append(seeds, b)
		}
		f.Close()
	}
	// The listings of the hand-written encodings; the corpus of every
	// listing would make the fuzzer's baseline run take minutes.
	files, _ := filepath.Glob("testdata/objdump/*encodings.txt")
	seen := map[string]bool{}
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if l, ok := parseLine(sc.Text()); ok && l.code != nil && !seen[string(l.code)] {
				seen[string(l.code)] = true
				seeds = append(seeds, l.code)
			}
		}
		f.Close()
	}
	return seeds
}

// BenchmarkDecodeFunction decodes, in a straight line with IT tracking, the
// code of one function of a committed test ELF, as a prologue or epilogue
// scan would.
func BenchmarkDecodeFunction(b *testing.B) {
	code, addr := functionBytes(b, "testdata/gcc-m4f-O2.elf", "manyregs")
	b.SetBytes(int64(len(code)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		var it ITState
		for off := 0; off < len(code); {
			in, err := Decode(code[off:], addr+uint32(off))
			if err != nil {
				b.Fatal(err)
			}
			it.Apply(&in)
			off += in.Len
			n++
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "insts/op")
}

// BenchmarkDecoder is BenchmarkDecodeFunction through a Memory and the
// Decoder iterator.
func BenchmarkDecoder(b *testing.B) {
	code, addr := functionBytes(b, "testdata/gcc-m4f-O2.elf", "manyregs")
	var im unwinders.Image
	if err := im.AddLayer(unwinders.Region{Name: "text", Addr: addr, Data: code}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(code)))
	b.ReportAllocs()
	for b.Loop() {
		d := NewDecoder(&im, addr, addr+uint32(len(code)))
		var in Inst
		for d.Next(&in) == nil {
		}
	}
}
