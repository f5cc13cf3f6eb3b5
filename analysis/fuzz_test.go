package analysis

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// FuzzAutoWalk drives every strategy's chain over a real firmware image
// with random stack memory and registers: no panic, no hang, always a stop
// reason within the frame limit.
func FuzzAutoWalk(f *testing.F) {
	elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/build/gcc-m3-O2-unwind.elf"))
	if err != nil {
		f.Fatal(err)
	}
	defer elf.Close()
	for _, name := range []string{"null_write_deep", "irq_crash", "psp_thread"} {
		ram, err := os.ReadFile(filepath.Join(repo, "fixtures/qemu", "gcc-m3-O2-unwind-"+name+".ram.bin"))
		if err != nil {
			f.Fatal(err)
		}
		d, err := crashdump.Load(filepath.Join(repo, "fixtures/qemu", "gcc-m3-O2-unwind-"+name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		var seed [24]byte
		for i, r := range []unwinders.Reg{unwinders.PC, unwinders.LR, unwinders.SP, unwinders.R7, unwinders.XPSR, unwinders.PSP} {
			binary.LittleEndian.PutUint32(seed[4*i:], d.Regs.Value(r))
		}
		// Keep the seeds small: the top of the stack only.
		top := ram[max(0, len(ram)-2048):]
		f.Add(seed[:], top)
	}
	f.Add(make([]byte, 24), make([]byte, 256))
	f.Fuzz(func(t *testing.T, regs []byte, ram []byte) {
		if len(regs) < 24 || len(ram) > 1<<16 {
			return
		}
		base := uint32(0x20004000) - uint32(len(ram))&^3
		d := &crashdump.Dump{Path: "fuzz", CPU: "cortex-m3", Memory: []unwinders.Region{{Name: "ram", Addr: base, Data: ram}}}
		for i, r := range []unwinders.Reg{unwinders.PC, unwinders.LR, unwinders.SP, unwinders.R7, unwinders.XPSR, unwinders.PSP} {
			d.Regs.Set(r, binary.LittleEndian.Uint32(regs[4*i:]))
		}
		d.Regs.Set(unwinders.MSP, d.Regs.Value(unwinders.SP))
		for _, s := range Strategies() {
			if !s.Available {
				continue
			}
			r, err := Analyze(elf, d, Options{Unwinder: s.Name, MaxFrames: 32})
			if err != nil {
				continue
			}
			if r.Stop == "" || len(r.Walk.Frames) > 32 {
				t.Fatalf("%s: stop %q, %d frames", s.Name, r.Stop, len(r.Walk.Frames))
			}
		}
	})
}
