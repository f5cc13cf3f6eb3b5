package rtos

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// zephyrBuilds are the builds of firmware-samples/rtos-zephyr with oracle
// fixtures in fixtures/rtos-zephyr.
var zephyrBuilds = []string{"gcc-m3-O2", "gcc-m4f-O2", "gcc-m3-O0", "clang-m3-O2", "clang-m4f-O2", "clang-m4f-Os", "gcc-m3-Os"}

// zephyrOracle is <build>.threads.json: what GDB read from each thread.
type zephyrOracle struct {
	Current string `json:"current"`
	Threads []struct {
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		State     int               `json:"thread_state"`
		Prio      int               `json:"prio"`
		Current   bool              `json:"current"`
		ExcReturn string            `json:"exc_return"`
		Registers map[string]string `json:"registers"`
		Stack     struct {
			Start string `json:"start"`
			Size  int    `json:"size"`
		} `json:"stack"`
		Frames []struct {
			Function string `json:"function"`
		} `json:"frames"`
	} `json:"threads"`
}

func hexU32(t testing.TB, s string) uint32 {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return uint32(v)
}

func loadZephyrOracle(t testing.TB, build string) zephyrOracle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "fixtures", "rtos-zephyr", build+".threads.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o zephyrOracle
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return o
}

// zephyrInput loads a build's ELF and a dump of it into an Input.
func zephyrInput(t testing.TB, elfPath, dumpPath string) Input {
	t.Helper()
	elf, err := elfsym.Open(elfPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { elf.Close() })
	d, err := crashdump.Load(dumpPath)
	if err != nil {
		t.Fatal(err)
	}
	im := &unwinders.Image{}
	if err := im.AddLayer(elf.Segments()...); err != nil {
		t.Fatal(err)
	}
	if err := im.AddLayer(d.Memory...); err != nil {
		t.Fatal(err)
	}
	return Input{ELF: elf, Mem: im, Regs: d.Regs}
}

// wantZephyr is what the sample application (firmware-samples/rtos-zephyr
// src/app.c) left each thread doing when net_rx crashed: written from the
// application's design, not from our output.
var wantZephyr = map[string]struct {
	state   State
	waiting string
}{
	"net_rx":    {Running, ""},
	"consumer":  {Blocked, "sem_data"},
	"logger":    {Blocked, "delay"},
	"suspender": {Suspended, ""},
	"filter":    {Blocked, "delay"},
	"worker":    {Ready, ""},
	"deferred":  {Suspended, "not started"},
	"idle":      {Ready, ""},
}

// TestZephyrOracle checks every thread of every build's native dump (RAM
// at the HardFault) against what GDB read through the debug types in QEMU:
// id, name, priority, stack bounds, and every register of the saved
// context (the current thread: the crash's own registers).
func TestZephyrOracle(t *testing.T) {
	for _, build := range zephyrBuilds {
		t.Run(build, func(t *testing.T) {
			o := loadZephyrOracle(t, build)
			in := zephyrInput(t, filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", build+".elf"),
				filepath.Join("..", "fixtures", "rtos-zephyr", build+".json"))
			k, err := Discover(in)
			if err != nil {
				t.Fatal(err)
			}
			if k == nil || k.Kind != "zephyr" || k.Source != "debug types" {
				t.Fatalf("kernel %+v, want zephyr from debug types", k)
			}
			if len(k.Warnings) != 0 {
				t.Errorf("warnings: %q", k.Warnings)
			}
			checkZephyrThreads(t, k, o, true)
		})
	}
}

// checkZephyrThreads compares discovered threads with the oracle; regs
// says whether the switched-out threads' registers are compared.
func checkZephyrThreads(t *testing.T, k *Kernel, o zephyrOracle, regs bool) {
	t.Helper()
	if len(k.Threads) != len(o.Threads) {
		t.Fatalf("%d threads, want %d: %+v", len(k.Threads), len(o.Threads), k.Threads)
	}
	if !k.Threads[0].Current || k.Threads[0].ID != hexU32(t, o.Current) {
		t.Errorf("first thread %+v: want the current one %s", k.Threads[0], o.Current)
	}
	byID := map[uint32]Thread{}
	for _, th := range k.Threads {
		byID[th.ID] = th
	}
	for _, ot := range o.Threads {
		th, ok := byID[hexU32(t, ot.ID)]
		if !ok {
			t.Errorf("thread %s %s not found", ot.ID, ot.Name)
			continue
		}
		if th.Err != nil {
			t.Errorf("%s: %v", ot.Name, th.Err)
		}
		if th.Name != ot.Name || th.Priority != ot.Prio || th.Current != ot.Current {
			t.Errorf("thread %s: name %q prio %d current %v, want %q %d %v", ot.ID, th.Name, th.Priority, th.Current, ot.Name, ot.Prio, ot.Current)
		}
		w := wantZephyr[ot.Name]
		if th.State != w.state || !strings.HasPrefix(th.WaitingOn, w.waiting) || (w.waiting == "" && th.WaitingOn != "") {
			t.Errorf("%s: state %s waiting on %q, want %s %q", ot.Name, th.State, th.WaitingOn, w.state, w.waiting)
		}
		if start := hexU32(t, ot.Stack.Start); th.Stack.Start != start || th.Stack.End != start+uint32(ot.Stack.Size) {
			t.Errorf("%s: stack [0x%x, 0x%x), want start %s size %d", ot.Name, th.Stack.Start, th.Stack.End, ot.Stack.Start, ot.Stack.Size)
		}
		if th.Stack.HighWaterBytes <= 0 || th.Stack.HighWaterBytes >= ot.Stack.Size || th.Stack.Overflow || len(th.Diagnosis) != 0 {
			t.Errorf("%s: high water %d of %d, overflow %v, diagnosis %q", ot.Name, th.Stack.HighWaterBytes, ot.Stack.Size, th.Stack.Overflow, th.Diagnosis)
		}
		if th.Current || !regs {
			continue
		}
		for name, v := range ot.Registers {
			r, ok := unwinders.ParseReg(name)
			if !ok {
				t.Fatalf("register %q", name)
			}
			got, known := th.Regs.Get(r)
			if !known || got != hexU32(t, v) {
				t.Errorf("%s: %s = 0x%x (known %v), want %s", ot.Name, name, got, known, v)
			}
		}
	}
}

// TestZephyrCoredump reads the Zephyr coredump each build's fault handler
// wrote (the threads block holds _kernel, memory blocks hold each thread
// and its stack, nothing else): every thread must match the oracle, the
// current one with the registers before the exception from the arch block.
func TestZephyrCoredump(t *testing.T) {
	for _, build := range zephyrBuilds {
		t.Run(build, func(t *testing.T) {
			o := loadZephyrOracle(t, build)
			elfPath := filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", build+".elf")
			elf, err := elfsym.Open(elfPath)
			if err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			d, err := crashdump.Load(filepath.Join("..", "fixtures", "rtos-zephyr", build+".zephyr.log"))
			if err != nil {
				t.Fatal(err)
			}
			if len(d.SymbolRegions) != 1 || d.SymbolRegions[0].Symbol != "_kernel" {
				t.Fatalf("symbol regions %+v: want the threads block as _kernel", d.SymbolRegions)
			}
			mk := func() Input {
				im := &unwinders.Image{}
				if err := im.AddLayer(elf.Segments()...); err != nil {
					t.Fatal(err)
				}
				if err := im.AddLayer(d.Memory...); err != nil {
					t.Fatal(err)
				}
				return Input{ELF: elf, Mem: im, Regs: d.Regs}
			}
			// Without the threads block, _kernel is not in the dump.
			if _, err := Discover(mk()); err == nil || !strings.Contains(err.Error(), "does not hold _kernel") {
				t.Errorf("without the threads block: %v, want the dump does not hold _kernel", err)
			}
			if w := d.PlaceSymbolRegions(SymbolLookup(elf)); len(w) != 0 {
				t.Fatalf("placing: %q", w)
			}
			k, err := Discover(mk())
			if err != nil {
				t.Fatal(err)
			}
			checkZephyrThreads(t, k, o, true)
			cur := k.Threads[0]
			for _, ot := range o.Threads {
				if !ot.Current {
					continue
				}
				for name, v := range ot.Registers {
					r, _ := unwinders.ParseReg(name)
					if got, known := cur.Regs.Get(r); !known || got != hexU32(t, v) {
						t.Errorf("current %s: %s = 0x%x (known %v), want %s", ot.Name, name, got, known, v)
					}
				}
			}
		})
	}
}

// TestZephyrDefaultLayout: the documented default layout is the one the
// debug types give for the M3 builds (gcc and clang).
func TestZephyrDefaultLayout(t *testing.T) {
	for _, build := range []string{"gcc-m3-O2", "clang-m3-O2", "gcc-m3-O0"} {
		elf, err := elfsym.Open(filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", build+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		l, err := zephyrDWARFLayout(NewTypes(elf.DWARF()))
		elf.Close()
		if err != nil {
			t.Fatal(err)
		}
		def := zephyrDefaultLayout()
		l.source = def.source
		if l != def {
			t.Errorf("%s: debug types give\n%+v\nthe default layout is\n%+v", build, l, def)
		}
	}
}

// TestZephyrStripped: without debug information discovery reads the
// offsets table; without the table too, the default layout (with a
// warning). Names, priorities and every switched-out thread's registers
// must still match the oracle.
func TestZephyrStripped(t *testing.T) {
	o := loadZephyrOracle(t, "gcc-m3-O2")
	for _, tc := range []struct{ elf, source, warning string }{
		{"gcc-m3-O2-nodebug", "thread info offsets", ""},
		{"gcc-m3-O2-nodebug-openocd", "thread info offsets", ""}, // Zephyr < 2.6's table name
		{"gcc-m3-O2-nodebug-notable", "default layout", "using the default layout"},
	} {
		for _, dump := range []string{"gcc-m3-O2.json", "gcc-m3-O2.zephyr.log"} {
			t.Run(tc.elf+"/"+dump, func(t *testing.T) {
				elfPath := filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", tc.elf+".elf")
				elf, err := elfsym.Open(elfPath)
				if err != nil {
					t.Fatal(err)
				}
				defer elf.Close()
				d, err := crashdump.Load(filepath.Join("..", "fixtures", "rtos-zephyr", dump))
				if err != nil {
					t.Fatal(err)
				}
				d.PlaceSymbolRegions(SymbolLookup(elf))
				im := &unwinders.Image{}
				if err := im.AddLayer(elf.Segments()...); err != nil {
					t.Fatal(err)
				}
				if err := im.AddLayer(d.Memory...); err != nil {
					t.Fatal(err)
				}
				k, err := Discover(Input{ELF: elf, Mem: im, Regs: d.Regs})
				if err != nil {
					t.Fatal(err)
				}
				if k.Source != tc.source {
					t.Errorf("source %q, want %q", k.Source, tc.source)
				}
				if w := strings.Join(k.Warnings, "\n"); (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) {
					t.Errorf("warnings %q, want one with %q", k.Warnings, tc.warning)
				}
				if len(k.Threads) != len(o.Threads) {
					t.Fatalf("%d threads, want %d", len(k.Threads), len(o.Threads))
				}
				for i, ot := range o.Threads {
					th := k.Threads[i]
					if th.ID != hexU32(t, ot.ID) || th.Name != ot.Name || th.Priority != ot.Prio || th.Err != nil {
						t.Errorf("thread %d: %+v, want %s %q prio %d", i, th, ot.ID, ot.Name, ot.Prio)
					}
					if w := wantZephyr[ot.Name].state; th.State != w && !(w == Blocked && th.State == Blocked) {
						t.Errorf("%s: state %s, want %s", ot.Name, th.State, w)
					}
					if ot.Current {
						continue
					}
					for name, v := range ot.Registers {
						r, _ := unwinders.ParseReg(name)
						if got, known := th.Regs.Get(r); !known || got != hexU32(t, v) {
							t.Errorf("%s: %s = 0x%x (known %v), want %s", ot.Name, name, got, known, v)
						}
					}
				}
			})
		}
	}
}

// TestZephyrNotAThread: without debug types, bytes that are not a thread
// are never listed as one. A thread whose name field holds no text (no NUL,
// control bytes) ends the list read through the offsets table (the
// threads before it stay); under the default layout, a guess, any such
// thread means the layout does not fit, and no thread is listed at all.
func TestZephyrNotAThread(t *testing.T) {
	o := loadZephyrOracle(t, "gcc-m3-O2")
	victim := -1 // the third thread of the list
	for i, ot := range o.Threads {
		if i == 2 {
			victim = int(hexU32(t, ot.ID))
		}
	}
	for _, tc := range []struct {
		elf     string
		threads int
		warning string
	}{
		{"gcc-m3-O2-nodebug", 2, "which is not a thread (its name field holds no text"},
		{"gcc-m3-O2-nodebug-notable", 0, "the default layout does not fit this firmware's kernel data (thread 3 of the list"},
	} {
		t.Run(tc.elf, func(t *testing.T) {
			elf, err := elfsym.Open(filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", tc.elf+".elf"))
			if err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			d, err := crashdump.Load(filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m3-O2.zephyr.log"))
			if err != nil {
				t.Fatal(err)
			}
			d.PlaceSymbolRegions(SymbolLookup(elf))
			// The name (offset 108, 32 bytes) of the third thread: bytes
			// 1..32, no NUL.
			name := uint32(victim) + 108
			for _, r := range d.Memory {
				if r.Contains(name) && uint64(name)+32 <= r.End() {
					for i := range 32 {
						r.Data[name-r.Addr+uint32(i)] = byte(i + 1)
					}
				}
			}
			im := &unwinders.Image{}
			if err := im.AddLayer(elf.Segments()...); err != nil {
				t.Fatal(err)
			}
			if err := im.AddLayer(d.Memory...); err != nil {
				t.Fatal(err)
			}
			k, err := Discover(Input{ELF: elf, Mem: im, Regs: d.Regs})
			if err != nil {
				t.Fatal(err)
			}
			if len(k.Threads) != tc.threads {
				t.Errorf("%d threads, want %d", len(k.Threads), tc.threads)
			}
			for _, th := range k.Threads {
				if th.ID == uint32(victim) || strings.Contains(th.Name, "\\x") {
					t.Errorf("thread %+v listed: its bytes are not a thread", th)
				}
			}
			if w := strings.Join(k.Warnings, "\n"); !strings.Contains(w, tc.warning) {
				t.Errorf("warnings %q, want one with %q", k.Warnings, tc.warning)
			}
		})
	}
}

// BenchmarkZephyrDiscover measures discovery of the 8 threads of the
// gcc-m4f-O2 native dump (layouts from the debug types).
func BenchmarkZephyrDiscover(b *testing.B) {
	in := zephyrInput(b, filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", "gcc-m4f-O2.elf"),
		filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m4f-O2.json"))
	b.ReportAllocs()
	for b.Loop() {
		k, err := Discover(in)
		if err != nil || len(k.Threads) != 8 {
			b.Fatal(k, err)
		}
	}
}

// TestLayoutsCache: a Layouts gives the same kernel as no cache, from
// several goroutines, and recomputes for another ELF.
func TestLayoutsCache(t *testing.T) {
	in := zephyrInput(t, filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", "gcc-m3-O2.elf"),
		filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m3-O2.json"))
	want, err := Discover(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Layouts = NewLayouts()
	done := make(chan *Kernel, 4)
	for range 4 {
		go func() {
			k, _ := Discover(in)
			done <- k
		}()
	}
	for range 4 {
		k := <-done
		if k == nil || k.Source != want.Source || len(k.Threads) != len(want.Threads) {
			t.Fatalf("cached: %+v", k)
		}
		for i := range k.Threads {
			if k.Threads[i].Regs != want.Threads[i].Regs || k.Threads[i].Name != want.Threads[i].Name {
				t.Errorf("thread %d differs with the cache", i)
			}
		}
	}
	// Another ELF (no debug types) through the same cache: its own layout.
	other := zephyrInput(t, filepath.Join("..", "firmware-samples", "rtos-zephyr", "build", "gcc-m3-O2-nodebug-notable.elf"),
		filepath.Join("..", "fixtures", "rtos-zephyr", "gcc-m3-O2.json"))
	other.Layouts = in.Layouts
	if k, err := Discover(other); err != nil || k.Source != "default layout" {
		t.Errorf("other ELF through the cache: %v %+v", err, k)
	}
}
