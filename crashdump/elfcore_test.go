package crashdump

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/unwinders"
)

// Every QEMU oracle dump written as an ELF core and read back is the same
// dump: registers (FP ones included), memory, fault registers, CPU, build
// ID and truth.
func TestELFCoreRoundTrip(t *testing.T) {
	paths, _ := filepath.Glob("../fixtures/qemu/*.json")
	if len(paths) < 100 {
		t.Fatalf("%d fixtures", len(paths))
	}
	for _, p := range paths {
		d, err := Load(p)
		if err != nil {
			t.Fatal(err)
		}
		d.BuildID = "57dac794fb05f6051e02302940eb03bbd758fb12"
		var b bytes.Buffer
		if err := d.WriteELFCore(&b); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		got, err := Parse(b.Bytes(), "core.elf", nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got.Format != FormatELFCore || got.CPU != d.CPU || got.BuildID != d.BuildID || !got.Regs.Equal(&d.Regs) || got.Fault != d.Fault || len(got.Warnings) != 0 {
			t.Errorf("%s: read back %s cpu %q id %q fault %+v warnings %q", p, got.Format, got.CPU, got.BuildID, got.Fault, got.Warnings)
		}
		if len(got.Memory) != len(d.Memory) {
			t.Fatalf("%s: %d regions, want %d", p, len(got.Memory), len(d.Memory))
		}
		for i := range d.Memory {
			if got.Memory[i].Addr != d.Memory[i].Addr || !bytes.Equal(got.Memory[i].Data, d.Memory[i].Data) {
				t.Errorf("%s: region %d differs", p, i)
			}
		}
		if (got.Truth == nil) != (d.Truth == nil) || (d.Truth != nil && len(got.Truth.Frames) != len(d.Truth.Frames)) {
			t.Errorf("%s: truth not kept", p)
		}
	}
}

// A core GDB wrote (gcore through faultline's gdbserver) holds r0-r15 and
// xPSR in NT_PRSTATUS and the memory GDB chose; the values are those of
// the source dump.
func TestELFCoreFromGDB(t *testing.T) {
	d, err := Load("../fixtures/elfcore/gcc-m3-O2-null_write_deep.gcore.elf")
	if err != nil {
		t.Fatal(err)
	}
	src, err := Load("../fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	if err != nil {
		t.Fatal(err)
	}
	for r := unwinders.R0; r <= unwinders.XPSR; r++ {
		if d.Regs.Value(r) != src.Regs.Value(r) {
			t.Errorf("%v = 0x%x, source 0x%x", r, d.Regs.Value(r), src.Regs.Value(r))
		}
	}
	if len(d.Memory) != 5 || d.Memory[4].Addr != 0x20003618 {
		t.Errorf("memory %v", d.Memory)
	}
}

// A core cut short keeps what it holds and names what is missing.
func TestELFCorePartial(t *testing.T) {
	src, err := Load("../fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	if err != nil {
		t.Fatal(err)
	}
	// The last region is the SCB block: put the RAM last.
	src.Memory[0], src.Memory[1] = src.Memory[1], src.Memory[0]
	var b bytes.Buffer
	if err := src.WriteELFCore(&b); err != nil {
		t.Fatal(err)
	}
	full := b.Bytes()
	d, err := Parse(full[:len(full)-0x100], "cut.elf", nil)
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(d.Warnings, "\n")
	if !strings.Contains(w, "segment 2 (0x20000000, 16384 bytes) is cut short: the file holds 16128 of its bytes; memory from 0x20003f00 on is missing") {
		t.Errorf("warnings %q", w)
	}
	if n := len(d.Memory); n != 2 || len(d.Memory[1].Data) != 16128 {
		t.Errorf("regions %d", n)
	}
}

func FuzzELFCore(f *testing.F) {
	paths, _ := filepath.Glob("../fixtures/elfcore/*.elf")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
			addMutants(f, b, 8)
		}
	}
	if d, err := Load("../fixtures/qemu/gcc-m4f-O2-fpu_crash.json"); err == nil {
		var b bytes.Buffer
		if d.WriteELFCore(&b) == nil {
			f.Add(b.Bytes())
		}
		d.Threads = threeThreads(d)
		b.Reset()
		if d.WriteELFCore(&b) == nil {
			f.Add(b.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if matchELFCore(data) {
			fuzzDump(t, data, parseELFCore)
		}
	})
}

// threeThreads gives d two more threads whose registers are d's with
// other PCs and SPs.
func threeThreads(d *Dump) []Thread {
	ts := []Thread{{ID: 1, Name: "main", Regs: d.Regs}}
	for i, name := range []string{"rx task", "idle"} {
		r := d.Regs
		r.Set(unwinders.PC, 0x100+uint32(i)*0x10)
		r.Set(unwinders.SP, 0x20001000+uint32(i)*0x100)
		ts = append(ts, Thread{ID: uint32(i + 2), Name: name, Regs: r})
	}
	return ts
}

// WriteELFCore writes Dump.Threads as one NT_PRSTATUS each, the names in
// faultline's thread-name note; the core reads back with the same
// threads, names and core registers, the first being the crash's.
func TestELFCoreThreadsRoundTrip(t *testing.T) {
	d, err := Load("../fixtures/qemu/gcc-m4f-O2-fpu_crash.json")
	if err != nil {
		t.Fatal(err)
	}
	d.Threads = threeThreads(d)
	var b bytes.Buffer
	if err := d.WriteELFCore(&b); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(b.Bytes(), "threads.core", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Threads) != 3 {
		t.Fatalf("%d threads, want 3", len(back.Threads))
	}
	for i, th := range back.Threads {
		want := d.Threads[i]
		if th.ID != uint32(i+1) || th.Name != want.Name {
			t.Errorf("thread %d: id %d name %q, want %d %q", i, th.ID, th.Name, i+1, want.Name)
		}
		for r := unwinders.R0; r <= unwinders.XPSR; r++ {
			if i == 0 && r == unwinders.SP {
				continue // NT_PRSTATUS holds GDB's SP; the FAULTLINE note restores the dump's
			}
			if g, w := th.Regs.Value(r), want.Regs.Value(r); g != w {
				t.Errorf("thread %d %v = %#x, want %#x", i, r, g, w)
			}
		}
	}
	if back.Threads[0].Regs != back.Regs || back.Regs.Value(unwinders.SP) != d.Regs.Value(unwinders.SP) {
		t.Error("the first thread's registers are not the crash's")
	}
}

// GDB's gcore of a FreeRTOS dump writes the running thread's stack as a
// segment of its own over the .bss segment (0x200019d8-0x20003fb8 over
// 0x20000000-0x20002908): where they overlap the bytes are the same, and
// the two are one memory. A core whose overlapping segments hold other
// bytes there is refused, naming both and the first differing address.
func TestELFCoreOverlappingSegments(t *testing.T) {
	const path = "../fixtures/elfcore/freertos-gcc-m3-O2.gcore.elf"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(data, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ram *unwinders.Region
	for i := range d.Memory {
		if d.Memory[i].Addr == 0x20000000 {
			ram = &d.Memory[i]
		}
	}
	if ram == nil || ram.End() != 0x20003fb8 || len(d.Threads) != 13 {
		t.Fatalf("memory %v, %d threads; want RAM 0x20000000-0x20003fb8 as one region and 13 threads", d.Memory, len(d.Threads))
	}
	src, err := os.ReadFile("../fixtures/rtos/freertos/gcc-m3-O2.ram.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ram.Data, src[:len(ram.Data)]) {
		t.Error("the merged RAM differs from the source dump's")
	}
	// The stack segment's byte for 0x20002000 lies in the overlap (its
	// file offset from the program headers, as readelf -l shows it).
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	stackOff := -1
	for _, p := range ef.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr == 0x200019d8 {
			stackOff = int(p.Off)
		}
	}
	if stackOff < 0 {
		t.Fatal("no stack segment at 0x200019d8")
	}
	bad := append([]byte(nil), data...)
	bad[stackOff+0x20002000-0x200019d8] ^= 0xff
	_, err = Parse(bad, path, nil)
	if err == nil || !strings.Contains(err.Error(), "holds other bytes there (first at 0x20002000)") {
		t.Errorf("err %v, want the overlap with other bytes named", err)
	}
}
