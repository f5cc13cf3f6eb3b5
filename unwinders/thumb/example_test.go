package thumb_test

import (
	"debug/elf"
	"fmt"
	"log"

	"github.com/faultline-dev/faultline/unwinders"
	"github.com/faultline-dev/faultline/unwinders/thumb"
)

// frameSize is a minimal prologue scan: it adds up the stack a function
// allocates before its first call or branch, tracking the constants that
// MOVW/MOVT and literal loads put in registers, so that both
// "sub.w sp, sp, #4992" and "ldr r4, =-100012; add sp, r4" are understood.
func frameSize(m unwinders.Memory, fn uint32) (int32, error) {
	type konst struct {
		v  uint32
		ok bool
	}
	var regs [16]konst
	size := int32(0)
	d := thumb.NewDecoder(m, fn, fn+64)
	var in thumb.Inst
	for d.Next(&in) == nil && !in.WritesPC() {
		var k konst
		switch in.Op {
		case thumb.OpMOVW:
			k = konst{uint32(in.Imm), true}
		case thumb.OpMOVT:
			k = regs[in.Rd]
			k.v = k.v&0xffff | uint32(in.Imm)<<16
		case thumb.OpLDRLit:
			v, err := unwinders.ReadU32(m, in.Target)
			k = konst{v, err == nil}
		}
		if delta, known := in.SPDelta(); known {
			size -= delta
		} else if (in.Op == thumb.OpADD || in.Op == thumb.OpSUB) && in.Rd == unwinders.SP &&
			in.Rn == unwinders.SP && regs[in.Rm].ok && in.ShiftN == 0 {
			delta := int32(regs[in.Rm].v)
			if in.Op == thumb.OpSUB {
				delta = -delta
			}
			size -= delta
		} else {
			return 0, fmt.Errorf("%#x: %v: SP change not understood", in.Addr, in)
		}
		for r := range regs {
			if in.Writes&(1<<r) != 0 {
				regs[r] = konst{}
			}
		}
		if k.ok {
			regs[in.Rd] = k
		}
	}
	return size, nil
}

// Example_frameSize measures two large frames: ARMv6-M code builds one
// from a literal pool constant (ldr r4, [pc, #24]; add sp, r4), ARMv7-M
// code from SUB.W and SUB immediates.
func Example_frameSize() {
	for _, c := range []struct{ elf, fn string }{
		{"testdata/gcc-m0-O2.elf", "big100k"},  // push {r4, r5, lr}; ldr r4, =0xfffe7954; add sp, r4
		{"testdata/clang-m4f-O2.elf", "big5k"}, // push (5 regs); str.w r8, [sp, #-4]!; sub.w sp, #4992; sub sp, #8
	} {
		im, addr := load(c.elf, c.fn)
		n, err := frameSize(im, addr)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s %s: %d bytes\n", c.elf, c.fn, n)
	}
	// Output:
	// testdata/gcc-m0-O2.elf big100k: 100024 bytes
	// testdata/clang-m4f-O2.elf big5k: 5024 bytes
}

// load returns the executable sections of an ELF as a Memory and the
// address of a function.
func load(path, fn string) (*unwinders.Image, uint32) {
	f, err := elf.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	var im unwinders.Image
	var regions []unwinders.Region
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR != 0 && s.Type == elf.SHT_PROGBITS {
			b, err := s.Data()
			if err != nil {
				log.Fatal(err)
			}
			regions = append(regions, unwinders.Region{Name: s.Name, Addr: uint32(s.Addr), Data: b})
		}
	}
	if err := im.AddLayer(regions...); err != nil {
		log.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == fn {
			return &im, uint32(s.Value) &^ 1
		}
	}
	log.Fatalf("%s: no symbol %s", path, fn)
	return nil, 0
}
