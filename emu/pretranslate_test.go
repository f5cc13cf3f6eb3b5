package emu

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// allocProbe hooks an allocator's entry points and counts the calls: the
// smallest heap probe.
type allocProbe struct {
	funcs            []allocFunc
	entries, returns int
}

type allocFunc struct {
	name string
	fn   ProbeFunc
}

var (
	newlibFuncs = []allocFunc{
		{"malloc", ProbeFunc{Op: uc.HeapOpAlloc, Ptr: -1, Size: 0, Count: -1}},
		{"_malloc_r", ProbeFunc{Op: uc.HeapOpAlloc, Ptr: -1, Size: 1, Count: -1}},
		{"free", ProbeFunc{Op: uc.HeapOpFree, Ptr: 0, Size: -1, Count: -1}},
		{"_free_r", ProbeFunc{Op: uc.HeapOpFree, Ptr: 1, Size: -1, Count: -1}},
	}
	heap4Funcs = []allocFunc{
		{"pvPortMalloc", ProbeFunc{Op: uc.HeapOpAlloc, Ptr: -1, Size: 0, Count: -1}},
		{"vPortFree", ProbeFunc{Op: uc.HeapOpFree, Ptr: 0, Size: -1, Count: -1}},
	}
)

func (p *allocProbe) Start(r *ProbeRun) error {
	ram, ok := r.RegionAt(0x20000000)
	if !ok {
		return errors.New("no RAM at 0x20000000")
	}
	if err := r.Attach(ram.Addr, ram.Size); err != nil {
		return err
	}
	for i, f := range p.funcs {
		addr, _, fn, ok := r.Symbol(f.name)
		if !ok || !fn {
			return errors.New("no function " + f.name)
		}
		if err := r.HookFunc(addr, i, f.fn); err != nil {
			return err
		}
	}
	return nil
}

func (p *allocProbe) Block(*ProbeRun, uint32)       {}
func (p *allocProbe) Access(*ProbeRun, ProbeAccess) {}
func (p *allocProbe) Checkpoint()                   {}
func (p *allocProbe) Restore(*ProbeRun) error       { return nil }
func (p *allocProbe) Calls(_ *ProbeRun, calls []ProbeCall) {
	for _, c := range calls {
		if c.Returned() {
			p.returns++
		}
		if c.Entry() {
			p.entries++
		}
	}
}

// TestHeapPretranslate: a heap probe's run translates the allocator's own
// code without the data-access hook at its first entry (pretranslate.go),
// and sees every call; with the MPU on from the start it does not (the
// MPU check needs the hook in every block), and sees the same calls.
func TestHeapPretranslate(t *testing.T) {
	skipWithoutCgo(t)
	defer func() { testSetup = nil }()
	run := func(elf string, funcs []allocFunc, mpu bool) (*machine, *allocProbe) {
		t.Helper()
		var m *machine
		testSetup = func(mm *machine) error {
			m = mm
			if mpu {
				// PRIVDEFENA and a 32-byte no-access region at 0.
				m.scs.MPURASR[0] = 4<<1 | 1
				m.scs.MPUCtrl = mpuEnable | mpuPRIVDEFENA
				return m.syncChecks()
			}
			return nil
		}
		p := &allocProbe{funcs: funcs}
		_, err := Run(context.Background(), Config{ELF: "../firmware-samples/heap/build/" + elf + ".elf", Timeout: time.Minute,
			Probe: p, Sets: map[string]uint64{"heap_scenario": 7, "heap_iterations": 500}})
		var nf *NoFaultError
		if !errors.As(err, &nf) {
			t.Fatalf("want the firmware to exit, got %v", err)
		}
		return m, p
	}
	for _, c := range []struct {
		elf   string
		funcs []allocFunc
	}{
		{"heap-c", newlibFuncs},
		{"heap-rtos", heap4Funcs}, // the allocator's code is in the first KiB
	} {
		m, p := run(c.elf, c.funcs, false)
		if !m.pretranslated || m.pretranslatedBlocks == 0 || m.pretranslatedBlocks > maxPretranslated {
			t.Errorf("%s: pretranslated %v, %d blocks; want some allocator blocks translated ahead", c.elf, m.pretranslated, m.pretranslatedBlocks)
		}
		if m.entryArmed {
			t.Errorf("%s: the run never stopped at the first allocator entry", c.elf)
		}
		if p.entries < 4*500 || p.entries != p.returns {
			t.Errorf("%s: %d entries, %d returns; want at least 2000 of each", c.elf, p.entries, p.returns)
		}
		t.Logf("%s: %d blocks translated ahead, %d calls", c.elf, m.pretranslatedBlocks, p.entries)
		m2, p2 := run(c.elf, c.funcs, true)
		if m2.pretranslatedBlocks != 0 {
			t.Errorf("%s: with the MPU on, %d blocks were translated ahead; want none", c.elf, m2.pretranslatedBlocks)
		}
		if p2.entries != p.entries || p2.returns != p.returns {
			t.Errorf("%s: with the MPU on: %d entries, %d returns; want %d, %d", c.elf, p2.entries, p2.returns, p.entries, p.returns)
		}
	}
}

// TestBlockExits decodes the ends of blocks the walk follows.
func TestBlockExits(t *testing.T) {
	for _, c := range []struct {
		name    string
		code    []byte // at 0x1000
		targets []uint32
		fall    bool
	}{
		{"beq", []byte{0x00, 0xbf, 0x02, 0xd0}, []uint32{0x100a}, true},   // nop; beq 0x100a
		{"b", []byte{0x00, 0xbf, 0x02, 0xe0}, []uint32{0x100a}, false},    // nop; b 0x100a
		{"cbz", []byte{0x10, 0xb1}, []uint32{0x1008}, true},               // cbz r0, 0x1008
		{"bl", []byte{0x00, 0xf0, 0x02, 0xf8}, nil, true},                 // bl 0x1008
		{"pop pc", []byte{0x10, 0xbd}, nil, false},                        // pop {r4, pc}
		{"bx lr", []byte{0x70, 0x47}, nil, false},                         // bx lr
		{"it pop", []byte{0x08, 0xbf, 0x10, 0xbd}, nil, true},             // it eq; popeq {r4, pc}
		{"tbb", []byte{0xd0, 0xe8, 0x00, 0xf0}, nil, false},               // tbb [r0, r0]
		{"b.w", []byte{0x00, 0xf0, 0x02, 0xb8}, []uint32{0x1008}, false},  // b.w 0x1008
		{"add", []byte{0x01, 0x30}, nil, true},                            // adds r0, #1 (a block cut short)
		{"bne.w", []byte{0x40, 0xf0, 0x02, 0x80}, []uint32{0x1008}, true}, // bne.w 0x1008
		{"ldr pc", []byte{0x5d, 0xf8, 0x04, 0xfb}, nil, false},            // ldr pc, [sp], #4
		{"blx r3", []byte{0x98, 0x47}, nil, true},                         // blx r3
		{"mov pc", []byte{0xf7, 0x46}, nil, false},                        // mov pc, lr
		{"cbnz", []byte{0x00, 0xbf, 0x08, 0xb9}, []uint32{0x1008}, true},  // nop; cbnz r0, 0x1008
	} {
		mem := fakeMemory{base: 0x1000, b: c.code}
		next, targets, fall := blockExits(mem, 0x1000, 0x1000+uint32(len(c.code)))
		if next != 0x1000+uint32(len(c.code)) || fall != c.fall || len(targets) != len(c.targets) || (len(targets) > 0 && targets[0] != c.targets[0]) {
			t.Errorf("%s: next %#x targets %#x fall %v; want targets %#x fall %v", c.name, next, targets, fall, c.targets, c.fall)
		}
	}
}

type fakeMemory struct {
	base uint32
	b    []byte
}

func (f fakeMemory) Read(addr uint32, p []byte) error {
	if addr < f.base || uint64(addr)+uint64(len(p)) > uint64(f.base)+uint64(len(f.b)) {
		return errors.New("unmapped")
	}
	copy(p, f.b[addr-f.base:])
	return nil
}

// TestAllocatorCallees: the functions only the allocator calls are found
// (FreeRTOS heap_4's list insertion, newlib's malloc_trim and _sbrk_r), and
// a function the firmware also calls itself (memset, from its own code and
// from calloc), or that other code calls too (memmove: realloc and the
// stdio that mallinfo's object brings in), is not.
func TestAllocatorCallees(t *testing.T) {
	for _, c := range []struct {
		elf       string
		want, not []string
	}{
		{"heap-rtos", []string{"list_insert"}, []string{"memset", "busy"}},
		{"heap-c", []string{"_malloc_trim_r", "_sbrk_r"}, []string{"memset", "memcpy", "memmove", "busy", "make_packet"}},
	} {
		path := "../firmware-samples/heap/build/" + c.elf + ".elf"
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		img, err := loadImage(path, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		var entries []uint32
		for _, n := range []string{"malloc", "_malloc_r", "free", "_free_r", "calloc", "_calloc_r", "realloc", "_realloc_r", "pvPortMalloc", "vPortFree"} {
			if s, ok := img.byName[n]; ok && s.fn {
				entries = append(entries, s.addr)
			}
		}
		got := map[string]bool{}
		for _, a := range img.allocatorCallees(entries) {
			got[img.funcAt(a)] = true
		}
		for _, n := range c.want {
			if !got[n] {
				t.Errorf("%s: %s is not found private to the allocator (found %v)", c.elf, n, got)
			}
		}
		for _, n := range c.not {
			if got[n] {
				t.Errorf("%s: %s is found private to the allocator, but the firmware calls it", c.elf, n)
			}
		}
	}
}
