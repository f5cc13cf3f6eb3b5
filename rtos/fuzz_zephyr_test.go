package rtos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// fuzzZephyrELF is the build whose coredumps seed the Zephyr fuzz targets.
var fuzzZephyrELF = filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", "gcc-m3-O2.elf")

// checkKernel checks what Discover may return for any input: bounded
// thread count, the current thread first, no thread without a reason
// when its context is missing.
func checkKernel(t *testing.T, k *Kernel) {
	if k == nil {
		return
	}
	if len(k.Threads) > maxZephyrThreads+1 {
		t.Fatalf("%d threads: more than the bound", len(k.Threads))
	}
	for i, th := range k.Threads {
		if th.Current && i != 0 {
			t.Fatalf("current thread at position %d", i)
		}
		if !th.Current && th.Err == nil && !th.Regs.Known(unwinders.PC) {
			t.Fatalf("thread 0x%08x has neither registers nor an error", th.ID)
		}
		if th.Stack.HighWaterBytes > int(th.Stack.End-th.Stack.Start) {
			t.Fatalf("high water %d above the stack size", th.Stack.HighWaterBytes)
		}
		_ = strings.ToValidUTF8(th.Name, "?")
	}
}

// FuzzZephyrCoredump decodes a Zephyr coredump (the threads block
// included), places the threads block at _kernel and lists the threads:
// never a panic, a hang or an unbounded list. Seeds: the coredump the
// Zephyr-like kernel wrote and the hostile corpus made from it.
func FuzzZephyrCoredump(f *testing.F) {
	elf, err := elfsym.Open(fuzzZephyrELF)
	if err != nil {
		f.Fatal(err)
	}
	seeds, _ := filepath.Glob(filepath.Join("..", "fixtures", "hostile", "zephyr-threads", "*"))
	seeds = append(seeds, filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m3-O2.zephyr.log"))
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	flash := elf.Segments()
	layouts := NewLayouts() // the ELF's layouts are read once, not per input
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := crashdump.Parse(data, "fuzz.bin", nil)
		if err != nil {
			return
		}
		d.PlaceSymbolRegions(SymbolLookup(elf))
		im := &unwinders.Image{}
		if err := im.AddLayer(flash...); err != nil {
			t.Fatal(err)
		}
		if err := im.AddLayer(d.Memory...); err != nil {
			return
		}
		k, _ := Discover(Input{ELF: elf, Mem: im, Regs: d.Regs, Layouts: layouts})
		checkKernel(t, k)
	})
}

// FuzzZephyrMemory lists the threads of the Zephyr-like kernel with RAM
// replaced by the fuzzer's bytes (at 0x20000000, where _kernel, the
// threads and their stacks live): every pointer, state and saved stack
// pointer is hostile.
func FuzzZephyrMemory(f *testing.F) {
	elf, err := elfsym.Open(fuzzZephyrELF)
	if err != nil {
		f.Fatal(err)
	}
	ram, err := os.ReadFile(filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m3-O2.ram.bin"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(ram[:0x3000])
	f.Add(ram)
	flash := elf.Segments()
	var regs unwinders.Registers
	regs.Set(unwinders.SP, 0x20002000)
	regs.Set(unwinders.PC, 0x100)
	layouts := NewLayouts()
	f.Fuzz(func(t *testing.T, data []byte) {
		im := &unwinders.Image{}
		if err := im.AddLayer(flash...); err != nil {
			t.Fatal(err)
		}
		if err := im.AddLayer(unwinders.Region{Name: "fuzz", Addr: 0x20000000, Data: data}); err != nil {
			return
		}
		k, _ := Discover(Input{ELF: elf, Mem: im, Regs: regs, Layouts: layouts})
		checkKernel(t, k)
	})
}
