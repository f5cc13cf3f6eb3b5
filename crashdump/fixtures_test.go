package crashdump

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// qemuFixtures lists the QEMU + GDB oracle dumps (fixtures/qemu/README.md).
func qemuFixtures(t testing.TB) []string {
	paths, err := filepath.Glob(filepath.Join("..", "fixtures", "qemu", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// unstack reads the basic exception frame that the registers at a
// handler's entry point to (cortex-m.md section 1): MSP or PSP by
// EXC_RETURN bit 2.
func unstack(t *testing.T, d *Dump, im unwinders.Memory) *unwinders.Registers {
	t.Helper()
	lr, _ := d.Regs.Get(unwinders.LR)
	spReg := unwinders.MSP
	if lr&4 != 0 {
		spReg = unwinders.PSP
	}
	sp, ok := d.Regs.Get(spReg)
	if !ok {
		t.Fatalf("%s unknown", spReg)
	}
	r := new(unwinders.Registers)
	for i, reg := range []unwinders.Reg{unwinders.R0, unwinders.R1, unwinders.R2, unwinders.R3, unwinders.R12, unwinders.LR, unwinders.PC, unwinders.XPSR} {
		v, err := unwinders.ReadU32(im, sp+uint32(4*i))
		if err != nil {
			t.Fatalf("exception frame at 0x%08x: %v", sp, err)
		}
		r.Set(reg, v)
	}
	return r
}

// TestQEMUFixtures loads every oracle dump, checks it against the values
// the oracle README records for its scenario, decodes its fault and checks
// that it survives Write and Load.
func TestQEMUFixtures(t *testing.T) {
	paths := qemuFixtures(t)
	if len(paths) == 0 {
		t.Skip("no fixtures in ../fixtures/qemu")
	}
	// What QEMU 7.2 reports per scenario (fixtures/qemu/README.md table).
	type expect struct {
		bits    []string // CFSR bits
		address any      // uint32 or nil
		notes   []string // notes that must appear when decoding with the unstacked frame
	}
	expects := map[string]expect{
		"null_write_deep": {[]string{"DACCVIOL", "MMARVALID"}, uint32(0), []string{"a NULL pointer dereference", "MemManage is disabled in SHCSR"}},
		"null_fnptr":      {[]string{"IACCVIOL"}, nil, []string{"the stacked PC is 0x00000000: a call through a NULL function pointer"}},
		"udf":             {[]string{"UNDEFINSTR"}, nil, []string{"UNDEFINSTR: the instruction at the stacked PC (0x"}},
		"div0":            {[]string{"DIVBYZERO"}, nil, []string{"DIVBYZERO: an SDIV or UDIV"}},
		"irq_crash":       {[]string{"PRECISERR", "BFARVALID"}, uint32(0x30000010), []string{"the CFSR says it was BusFault (PRECISERR, BFARVALID)", "The fault happened inside the IRQ "}},
		"psp_thread":      {[]string{"DACCVIOL", "MMARVALID"}, uint32(0), []string{"a NULL pointer dereference"}},
		"fpu_crash":       {[]string{"DACCVIOL", "MMARVALID"}, uint32(0), []string{"a NULL pointer dereference"}},
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			d, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if d.Format != FormatNative || d.Profile() != unwinders.V7M || d.Truth == nil || d.Truth.Source != "qemu-gdb" {
				t.Errorf("format %q cpu %q truth %+v", d.Format, d.CPU, d.Truth)
			}
			im, err := d.Image()
			if err != nil {
				t.Fatal(err)
			}
			// The explicit fault object and the SCB block in memory are
			// two readings of the same registers: they must agree.
			mem := fault.FromMemory(im)
			for _, reg := range []string{"CFSR", "HFSR", "MMFAR", "BFAR"} {
				if *mem.Field(reg) != *d.Fault.Field(reg) {
					t.Errorf("%s: memory %+v, fault object %+v", reg, *mem.Field(reg), *d.Fault.Field(reg))
				}
			}
			if !d.Fault.SHCSR.OK || !d.Fault.CCR.OK {
				t.Errorf("SHCSR/CCR not read from the SCB block: %+v", d.Fault)
			}

			var scenario string
			for s := range expects {
				if strings.HasSuffix(name, "-"+s) {
					scenario = s
				}
			}
			want, ok := expects[scenario]
			if !ok {
				t.Fatalf("unknown scenario in %s", name)
			}
			rep := fault.DecodeInput(fault.Input{Profile: d.Profile(), Regs: &d.Regs, SCB: d.Fault, Faulting: unstack(t, d, im)})
			if rep.Exception != "HardFault" || rep.Number != 3 {
				t.Errorf("exception %q %d, want HardFault 3", rep.Exception, rep.Number)
			}
			var bits []string
			for _, c := range rep.Causes {
				if c.Register == "CFSR" {
					bits = append(bits, c.Bit)
				}
			}
			if !slices.Equal(bits, want.bits) {
				t.Errorf("CFSR causes %v, want %v", bits, want.bits)
			}
			if !slices.ContainsFunc(rep.Causes, func(c fault.Cause) bool { return c.Register == "HFSR" && c.Bit == "FORCED" }) {
				t.Errorf("no HFSR.FORCED in %+v", rep.Causes)
			}
			switch a := want.address.(type) {
			case nil:
				if rep.Address != nil {
					t.Errorf("address 0x%08x, want none", *rep.Address)
				}
			case uint32:
				if rep.Address == nil || *rep.Address != a {
					t.Errorf("address %v, want 0x%08x", rep.Address, a)
				}
			}
			for _, note := range want.notes {
				if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, note) }) {
					t.Errorf("no note contains %q:\n%s", note, rep)
				}
			}
			// The dump's own registers (handler entry) give the same
			// exception and causes.
			plain := fault.Decode(d.Profile(), &d.Regs, d.Fault)
			if plain.Exception != rep.Exception || !slices.Equal(plain.Causes, rep.Causes) {
				t.Errorf("Decode without the frame: %v", plain)
			}

			out := filepath.Join(t.TempDir(), "copy.json")
			if err := d.Write(out); err != nil {
				t.Fatal(err)
			}
			back, err := Load(out)
			if err != nil {
				t.Fatal(err)
			}
			sameDump(t, back, d)
		})
	}
}
