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

// oracleTask is one task of fixtures/rtos/freertos/<build>.tasks.json,
// written by oracle.py from GDB (see that file).
type oracleTask struct {
	ID           string            `json:"id"`
	Name         string            `json:"name"`
	Priority     int               `json:"priority"`
	BasePriority int               `json:"base_priority"`
	State        string            `json:"state"`
	Current      bool              `json:"current"`
	Regs         map[string]string `json:"regs"`
}

const fixtureDir = "../fixtures/rtos/freertos"

func loadFixture(t testing.TB, build string) (Input, []oracleTask) {
	t.Helper()
	elfBuild := build
	elf, err := elfsym.Open("../firmware-samples/rtos-freertos/build/" + elfBuild + ".elf")
	if err != nil {
		t.Fatal(err)
	}
	dumpBuild := strings.TrimSuffix(build, "-strip")
	d, err := crashdump.Load(filepath.Join(fixtureDir, dumpBuild+".json"))
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
	var o struct {
		Tasks []oracleTask `json:"tasks"`
	}
	b, err := os.ReadFile(filepath.Join(fixtureDir, dumpBuild+".tasks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return Input{ELF: elf, Mem: im, Regs: d.Regs}, o.Tasks
}

func fixtureBuilds(t testing.TB) []string {
	m, _ := filepath.Glob(filepath.Join(fixtureDir, "*.tasks.json"))
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".tasks.json"))
	}
	if len(out) == 0 {
		t.Fatal("no oracle fixtures")
	}
	for _, b := range []string{"gcc-m3-O2-strip", "gcc-m3-O2-cfg-strip", "gcc-m4f-O2-mpu-strip"} {
		if _, err := os.Stat("../firmware-samples/rtos-freertos/build/" + b + ".elf"); err == nil {
			out = append(out, b)
		}
	}
	return out
}

// Every task GDB saw is found with its name, state, priorities and the
// registers of its saved context (for the current task: the crash's).
func TestFreeRTOSAgainstOracle(t *testing.T) {
	for _, build := range fixtureBuilds(t) {
		t.Run(build, func(t *testing.T) {
			in, want := loadFixture(t, build)
			k, err := Discover(in)
			if err != nil || k == nil {
				t.Fatalf("Discover: %v, %v", k, err)
			}
			wantSource := "debug types"
			if strings.HasSuffix(build, "-strip") {
				wantSource = "default layout"
			}
			if k.Kind != "freertos" || k.Source != wantSource {
				t.Errorf("kernel %q source %q", k.Kind, k.Source)
			}
			if len(k.Threads) != len(want) {
				t.Errorf("%d threads, oracle has %d; warnings %q", len(k.Threads), len(want), k.Warnings)
			}
			if len(k.Threads) == 0 || !k.Threads[0].Current {
				t.Fatalf("first thread is not the current one")
			}
			got := map[uint32]Thread{}
			for _, th := range k.Threads {
				got[th.ID] = th
			}
			for _, w := range want {
				id, _ := strconv.ParseUint(strings.TrimPrefix(w.ID, "0x"), 16, 32)
				th, ok := got[uint32(id)]
				if !ok {
					t.Errorf("task %s (%s) not found", w.Name, w.ID)
					continue
				}
				if th.Err != nil {
					t.Errorf("task %s: %v", w.Name, th.Err)
				}
				if th.Name != w.Name || string(th.State) != w.State || th.Priority != w.Priority || th.Current != w.Current {
					t.Errorf("task %s: got %q %s prio %d current %v, oracle %q %s prio %d current %v",
						w.Name, th.Name, th.State, th.Priority, th.Current, w.Name, w.State, w.Priority, w.Current)
				}
				if !strings.HasSuffix(build, "-strip") && th.BasePriority != w.BasePriority {
					t.Errorf("task %s: base priority %d, oracle %d", w.Name, th.BasePriority, w.BasePriority)
				}
				if w.Current {
					continue
				}
				for name, v := range w.Regs {
					reg, ok := unwinders.ParseReg(name)
					if !ok {
						continue
					}
					wv, _ := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
					if gv, ok := th.Regs.Get(reg); !ok || gv != uint32(wv) {
						t.Errorf("task %s: %s = 0x%x (known %v), oracle %s", w.Name, name, gv, ok, v)
					}
				}
			}
		})
	}
}

func loadFixtureMaybe(t *testing.T, build string) (Input, []oracleTask) {
	if _, err := os.Stat(filepath.Join(fixtureDir, strings.TrimSuffix(build, "-strip")+".tasks.json")); err != nil {
		return Input{}, nil
	}
	return loadFixture(t, build)
}

// BenchmarkFreeRTOSDiscover lists the 13 tasks of the gcc-m3-O2 oracle
// dump (layouts from the debug types, every list walked, every saved
// context read).
func BenchmarkFreeRTOSDiscover(b *testing.B) {
	in, _ := loadFixture(b, "gcc-m3-O2")
	b.ReportAllocs()
	for b.Loop() {
		k, err := Discover(in)
		if err != nil || len(k.Threads) != 13 {
			b.Fatal(k, err)
		}
	}
}

// patchMem overlays words on a memory.
type patchMem struct {
	base  unwinders.Memory
	words map[uint32]uint32
}

func (m patchMem) Read(addr uint32, p []byte) error {
	if err := m.base.Read(addr, p); err != nil {
		return err
	}
	for a, v := range m.words {
		for i := range 4 {
			if b := a + uint32(i); b >= addr && b < addr+uint32(len(p)) {
				p[b-addr] = byte(v >> (8 * i))
			}
		}
	}
	return nil
}

// The ARM_CM33_NTZ port with MPU wrappers saves CONTROL between PSPLIM and
// EXC_RETURN. No rtk build uses it, so this test rewrites every saved
// context of the gcc-m33-O2 dump into that layout (one word lower, CONTROL
// where PSPLIM was) and checks that the MPU port decodes the same
// registers as the oracle's.
func TestFreeRTOSCM33MPUFrame(t *testing.T) {
	in, want := loadFixture(t, "gcc-m33-O2")
	k, err := Discover(in)
	if err != nil {
		t.Fatal(err)
	}
	pm := patchMem{base: in.Mem, words: map[uint32]uint32{}}
	for _, th := range k.Threads {
		if th.Current {
			continue
		}
		top, _ := unwinders.ReadU32(in.Mem, th.ID)
		psplim, _ := unwinders.ReadU32(in.Mem, top)
		pm.words[th.ID] = top - 4
		pm.words[top-4] = psplim
		pm.words[top] = 0x2
	}
	st := freertosStatic(in.ELF, 0)
	r := &frReader{in: Input{ELF: in.ELF, Mem: pm, Regs: in.Regs}, l: st.l, k: &Kernel{}, ctx: layoutCM33M}
	checked := 0
	for _, w := range want {
		if w.Current {
			continue
		}
		id, _ := strconv.ParseUint(strings.TrimPrefix(w.ID, "0x"), 16, 32)
		var th Thread
		r.savedContext(&th, uint32(id))
		if th.Err != nil {
			t.Fatalf("%s: %v", w.Name, th.Err)
		}
		if c, ok := th.Regs.Get(unwinders.CONTROL); !ok || c != 2 {
			t.Errorf("%s: CONTROL %#x %v", w.Name, c, ok)
		}
		for name, v := range w.Regs {
			reg, ok := unwinders.ParseReg(name)
			if !ok {
				continue
			}
			wv, _ := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32)
			if gv, ok := th.Regs.Get(reg); !ok || gv != uint32(wv) {
				t.Errorf("%s: %s = %#x, oracle %s", w.Name, name, gv, v)
			}
		}
		checked++
	}
	if checked != 12 {
		t.Errorf("%d tasks checked", checked)
	}
}

// The saved-context layout is read from each firmware's own PendSV handler
// and is the layout of the FreeRTOS port the look-alike copies for its
// core (port.c's header): ARM_CM0 V11.1+, ARM_CM3, ARM_CM4F, ARM_CM33_NTZ.
func TestFreeRTOSSaveLayoutFromHandler(t *testing.T) {
	m, _ := filepath.Glob("../firmware-samples/rtos-freertos/build/*.elf")
	if len(m) == 0 {
		t.Fatal("no rtk builds")
	}
	want := map[string]*ctxLayout{"m0": layoutCM0V11, "m3": layoutCM3, "m4f": layoutCM4F, "m33": layoutCM33}
	for _, p := range m {
		b := strings.TrimSuffix(filepath.Base(p), ".elf")
		core := strings.Split(b, "-")[1]
		f, err := elfsym.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		l, err := decodeSaveLayout(f)
		if err != nil {
			t.Errorf("%s: %v", b, err)
			continue
		}
		if !strings.Contains(l.source, "PendSV_Handler at 0x") {
			t.Errorf("%s: source %q", b, l.source)
		}
		w := want[core]
		if strings.HasSuffix(b, "-tz") {
			w = layoutCM33TZ
		}
		if got, exp := describeSlots(l), describeSlots(w); got != exp {
			t.Errorf("%s: layout %s, want %s", b, got, exp)
		}
		if l.pspNF != w.pspNF || l.pspFP != w.pspFP || l.hasFP != w.hasFP {
			t.Errorf("%s: PSP at +%d/+%d fp %v, want +%d/+%d fp %v", b, l.pspNF, l.pspFP, l.hasFP, w.pspNF, w.pspFP, w.hasFP)
		}
		if w.hasFP {
			for i := 0; i < 16; i++ {
				found := false
				for _, s := range l.slots {
					if s.what == cwReg && s.reg == unwinders.S(16+i) && s.inFP && !s.inNF && s.offFP == w.pspNF+int32(4*i) {
						found = true
					}
				}
				if !found {
					t.Errorf("%s: s%d not saved at +%d with an FP context", b, 16+i, w.pspNF+int32(4*i))
				}
			}
		}
	}
}

// Without a decodable handler, the layout the build attributes allow that
// the saved contexts fit is chosen, with a warning: on ARMv6-M both the
// FreeRTOS V11.1+ ARM_CM0 layout and the older one are possible.
func TestFreeRTOSLayoutFallback(t *testing.T) {
	for _, c := range []struct {
		build string
		want  *ctxLayout
	}{{"gcc-m0-O2", layoutCM0V11}, {"clang-m0-Os", layoutCM0V11}, {"gcc-m3-O2", layoutCM3}} {
		in, want := loadFixture(t, c.build)
		st := freertosStatic(in.ELF, 0)
		k := &Kernel{}
		r := &frReader{in: in, l: st.l, k: k}
		var tcbs []uint32
		cur := uint32(0)
		for _, w := range want {
			id, _ := strconv.ParseUint(strings.TrimPrefix(w.ID, "0x"), 16, 32)
			tcbs = append(tcbs, uint32(id))
			if w.Current {
				cur = uint32(id)
			}
		}
		alts := []*ctxLayout{layoutCM3, layoutCM0V11}
		if c.want == layoutCM3 {
			alts = []*ctxLayout{layoutCM0V11, layoutCM3}
		}
		got := r.chooseLayout(&frStatic{ctxAlts: alts, ctxErr: errNoHandler}, tcbs, cur)
		if got != c.want {
			t.Errorf("%s: chose %s", c.build, got.name)
		}
		if len(k.Warnings) != 1 || !strings.Contains(k.Warnings[0], "not read from the firmware's PendSV handler") || !strings.Contains(k.Warnings[0], "12 of 12 switched-out tasks fit") {
			t.Errorf("%s: warnings %q", c.build, k.Warnings)
		}
	}
}

// A task whose saved SP is below its stack's start has one usage figure
// that counts the overflow: no fill bytes "never used" (the stack went
// past them) and more bytes used than the stack holds (issue: "92% used"
// beside "saved SP 232 bytes below the stack's start").
func TestFreeRTOSOverflowUsage(t *testing.T) {
	for _, build := range []string{"gcc-m3-O2", "clang-m4f-O2", "gcc-m0-O2"} {
		in, _ := loadFixture(t, build)
		k, err := Discover(in)
		if err != nil {
			t.Fatal(err)
		}
		seen := false
		for _, th := range k.Threads {
			s := th.Stack
			if th.Name != "deep" {
				if s.Overflow {
					t.Errorf("%s: %s overflowed", build, th.Name)
				}
				if u := s.UsedBytes(); u < 0 || u > int(s.End-s.Start) {
					t.Errorf("%s: %s uses %d of %d bytes", build, th.Name, u, s.End-s.Start)
				}
				continue
			}
			seen = true
			if !s.Overflow || s.SP >= s.Start {
				t.Fatalf("%s: deep: overflow %v, SP 0x%08x, start 0x%08x", build, s.Overflow, s.SP, s.Start)
			}
			if s.HighWaterBytes != 0 {
				t.Errorf("%s: deep: %d bytes never used below an SP %d bytes under the start", build, s.HighWaterBytes, s.Start-s.SP)
			}
			if u := s.UsedBytes(); u != int(s.End-s.SP) || u <= int(s.End-s.Start) {
				t.Errorf("%s: deep: %d bytes used, want %d (past the %d-byte stack)", build, u, s.End-s.SP, s.End-s.Start)
			}
		}
		if !seen {
			t.Errorf("%s: no deep task", build)
		}
	}
}

// Without debug types, where the task control block keeps the
// notification state is read from the notification wait function's code:
// on every build that has one it is where the debug types say (the cfg
// build: 3 entries at another offset, its monitor task waits on the last).
func TestFreeRTOSNotifyScan(t *testing.T) {
	m, _ := filepath.Glob("../firmware-samples/rtos-freertos/build/*.elf")
	found := 0
	for _, p := range m {
		if strings.HasSuffix(p, "-strip.elf") {
			continue
		}
		f, err := elfsym.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		ns := scanNotify(f)
		l, err := typesLayout(NewTypes(f.DWARF()))
		if err != nil {
			t.Fatal(err)
		}
		_, has := f.Symbol("ulTaskGenericNotifyTake")
		if ns.present != has {
			t.Errorf("%s: present %v, the symbol %v", p, ns.present, has)
		}
		if !has {
			continue
		}
		found++
		if ns.off != l.notifyState || ns.n != l.notifyN {
			t.Errorf("%s: the code says ucNotifyState[%d] at %d, the debug types [%d] at %d", p, ns.n, ns.off, l.notifyN, l.notifyState)
		}
	}
	if found == 0 {
		t.Error("no build waits on a notification")
	}
}

// Without debug types, a state is given only when the kernel's own
// invariants confirm the layout it is read with: a task control block
// whose list items do not name it as their owner (here: the MPU build,
// whose TCB starts with MPU settings, read with the default layout) gets
// no state, and a task on the suspended list that may be waiting on a
// notification gets none when the notification state cannot be located.
func TestFreeRTOSStrippedStatesNotGuessed(t *testing.T) {
	in, want := loadFixture(t, "gcc-m4f-O2-mpu")
	k := &Kernel{}
	r := &frReader{in: in, l: defaultLayout(), k: k, ctx: freertosStatic(in.ELF, 0).ctx}
	sl := r.stateLists()
	for _, w := range want {
		id, _ := strconv.ParseUint(strings.TrimPrefix(w.ID, "0x"), 16, 32)
		th := r.task(uint32(id), w.Current, sl)
		switch {
		case w.Current && th.State != Running:
			t.Errorf("%s: %s, want running", w.Name, th.State)
		case !w.Current && th.State != Unknown:
			t.Errorf("%s: state %s read with a layout that does not fit", w.Name, th.State)
		case !w.Current && !strings.Contains(strings.Join(th.Diagnosis, "; "), "does not fit"):
			t.Errorf("%s: diagnosis %q", w.Name, th.Diagnosis)
		}
	}

	in, want = loadFixture(t, "gcc-m3-O2-cfg-strip")
	st := freertosStatic(in.ELF, 0)
	if !st.notifyWait || !st.notifyFromCode || st.l.notifyState != 88 || st.l.notifyN != 3 {
		t.Fatalf("notify wait %v, from code %v, at %d [%d]", st.notifyWait, st.notifyFromCode, st.l.notifyState, st.l.notifyN)
	}
	r = &frReader{in: in, l: st.l, k: &Kernel{}, ctx: st.ctx, notifyWait: true} // the offset not confirmed
	sl = r.stateLists()
	for _, w := range want {
		if w.Name != "monitor" {
			continue
		}
		id, _ := strconv.ParseUint(strings.TrimPrefix(w.ID, "0x"), 16, 32)
		th := r.task(uint32(id), false, sl)
		if th.State != Unknown || !strings.Contains(strings.Join(th.Diagnosis, "; "), "blocked on a task notification") {
			t.Errorf("monitor: %s %q, want unknown and why", th.State, th.Diagnosis)
		}
		r.notifyOK = true
		if th := r.task(uint32(id), false, sl); th.State != Blocked || th.WaitingOn != "task notification (index 2)" {
			t.Errorf("monitor with the offset confirmed: %s %q", th.State, th.WaitingOn)
		}
	}
}
