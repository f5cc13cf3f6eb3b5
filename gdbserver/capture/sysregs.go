package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/gdbserver/client"
)

// A server whose target description lacks the banked stack pointers and
// the special registers (QEMU 7.2's gdbstub: r0-r15, xpsr and the FPU
// only) leaves the process stack unknown, and with it every frame past an
// exception taken from thread mode on PSP. recoverSysRegs reads them from
// the core itself, without anything in the firmware: it saves the
// registers and the instruction bytes at the current PC, writes there one
// Thumb-2 MRS per missing register (MRS r0, MSP; MRS r1, PSP; ...),
// single-steps through them (servers mask interrupts while stepping),
// reads r0..rN, then writes the bytes and every register back and checks
// both by reading them again. MRS changes no flag and no memory, so
// restoring r0..rN and PC restores the core.

// sysReg is a special register MRS reads (ARMv7-M ARM B5.2.2, SYSm).
type sysReg struct {
	name string
	sysm uint16
	main bool // ARMv7-M/ARMv8-M Mainline only (BASEPRI, FAULTMASK)
}

var sysRegs = []sysReg{
	{"msp", 8, false}, {"psp", 9, false}, {"primask", 16, false},
	{"basepri", 17, true}, {"faultmask", 19, true}, {"control", 20, false},
}

// mrs encodes MRS Rd, SYSm (T1, 0xF3EF 0x8000|Rd<<8|SYSm) as memory
// bytes (two little-endian halfwords).
func mrs(rd int, sysm uint16) []byte {
	var b [4]byte
	binary.LittleEndian.PutUint16(b[0:], 0xf3ef)
	binary.LittleEndian.PutUint16(b[2:], 0x8000|uint16(rd)<<8|sysm)
	return b[:]
}

// baseline reports whether the core is ARMv6-M or ARMv8-M Baseline (no
// BASEPRI, FAULTMASK).
func baseline(cpu string) bool {
	switch cpu {
	case "cortex-m0", "cortex-m0plus", "cortex-m1", "cortex-m23":
		return true
	}
	return false
}

// recoverSysRegs adds the special registers the description lacks to
// vals (little-endian, as the server would have given them). It returns
// a note for the capture's warnings; on any failure it adds nothing,
// leaves the target as found when it can, and says why.
func recoverSysRegs(c *client.Client, desc *client.Description, vals client.RegisterValues, cpu string) (note string, err error) {
	_, okM := vals["msp"]
	_, okP := vals["psp"]
	if okM && okP {
		return "", nil // the stack pointers are there: the masks are not worth a step
	}
	var want []sysReg
	for _, s := range sysRegs {
		if _, ok := vals[s.name]; ok {
			continue
		}
		if s.main && (cpu == "" || baseline(cpu)) {
			continue
		}
		want = append(want, s)
	}
	if len(want) == 0 {
		return "", nil
	}
	names := make([]string, len(want))
	for i, s := range want {
		names[i] = strings.ToUpper(s.name)
	}
	pcReg, ok1 := desc.Lookup("pc")
	xpsr, okX := vals.U32("xpsr")
	pc, okPC := vals.U32("pc")
	if !ok1 || !okPC || !okX {
		return fmt.Sprintf("the server gives no %s and no pc/xpsr to read them with: left unknown", strings.Join(names, "/")), nil
	}
	var rRegs []client.Register
	for i := range want {
		r, ok := desc.Lookup(fmt.Sprintf("r%d", i))
		if !ok {
			return fmt.Sprintf("the server gives no %s and no r%d to read them into: left unknown", strings.Join(names, "/"), i), nil
		}
		rRegs = append(rRegs, r)
	}
	code := make([]byte, 0, 4*len(want))
	for i, s := range want {
		code = append(code, mrs(i, s.sysm)...)
	}
	// The registers as found: g (the block to compare and, without P, to
	// write back) and each value read.
	g0, err := c.Command("g")
	if err != nil {
		return "", err
	}
	scratch := pc &^ 1
	saved, holes, err := c.ReadMemory(scratch, uint32(len(code)), nil)
	if err != nil {
		return "", err
	}
	if len(holes) > 0 {
		return fmt.Sprintf("the server gives no %s; the instruction bytes at pc 0x%08x cannot be read (%s): not stepped, left unknown", strings.Join(names, "/"), scratch, holes[0].Reply), nil
	}
	restored := false
	restore := func() error {
		if restored {
			return nil
		}
		restored = true
		var errs []error
		if err := c.WriteMemory(scratch, saved); err != nil {
			errs = append(errs, fmt.Errorf("writing back the %d bytes at 0x%08x: %w", len(saved), scratch, err))
		} else if back, h, err := c.ReadMemory(scratch, uint32(len(saved)), nil); err != nil || len(h) > 0 || !bytes.Equal(back, saved) {
			errs = append(errs, fmt.Errorf("the %d bytes at 0x%08x read back differ from those saved (%x, read %x, %v)", len(saved), scratch, saved, back, err))
		}
		// P for r0..rN and pc, else G with the block as g gave it; not
		// at all when they read back as found (the step did not run).
		if g1, err := c.Command("g"); err == nil && bytes.Equal(g0, g1) {
			return errors.Join(errs...)
		}
		usedP := true
		for _, r := range append(rRegs, pcReg) {
			b, ok := vals[r.Name]
			if !ok {
				usedP = false
				break
			}
			ok, err := c.WriteRegister(r.Num, b)
			if err != nil {
				errs = append(errs, fmt.Errorf("writing back %s: %w", r.Name, err))
				break
			}
			if !ok {
				usedP = false
				break
			}
		}
		if !usedP {
			if err := c.WriteAllRegisters(g0); err != nil {
				errs = append(errs, fmt.Errorf("writing back the registers (G): %w", err))
			}
		}
		g1, err := c.Command("g")
		if err != nil {
			errs = append(errs, err)
		} else if !bytes.Equal(g0, g1) {
			errs = append(errs, fmt.Errorf("the registers read back (g) differ from those found: %s, now %s", g0, g1))
		}
		after, _, err := c.ReadRegisters(desc, nil)
		if err != nil {
			errs = append(errs, err)
		} else {
			for n, b := range vals {
				if a, ok := after[n]; ok && !bytes.Equal(a, b) {
					errs = append(errs, fmt.Errorf("register %s read back %x, found %x", n, a, b))
				}
			}
		}
		return errors.Join(errs...)
	}
	fail := func(why string) (string, error) {
		if err := restore(); err != nil {
			return "", fmt.Errorf("reading %s by stepping MRS at pc 0x%08x: %s; and the target could NOT be restored as found: %w", strings.Join(names, "/"), scratch, why, err)
		}
		return fmt.Sprintf("the server gives no %s; stepping MRS at pc 0x%08x failed (%s): left unknown (target restored and checked)", strings.Join(names, "/"), scratch, why), nil
	}
	if err := c.WriteMemory(scratch, code); err != nil {
		return fail(fmt.Sprintf("writing the instructions: %v", err))
	}
	if back, h, err := c.ReadMemory(scratch, uint32(len(code)), nil); err != nil || len(h) > 0 || !bytes.Equal(back, code) {
		// Flash behind a probe is not written by M.
		return fail("the instructions written did not read back (memory not writable this way)")
	}
	for i := range want {
		stop, err := c.Step()
		if err != nil {
			return fail(fmt.Sprintf("step %d: %v", i+1, err))
		}
		if err := stopOK(stop); err != nil {
			return fail(fmt.Sprintf("step %d: %v", i+1, err))
		}
	}
	got, _, err := c.ReadRegisters(desc, func(n string) bool { return n == "pc" || strings.HasPrefix(n, "r") })
	if err != nil {
		return fail(err.Error())
	}
	if p, ok := got.U32("pc"); !ok || p != scratch+uint32(len(code)) {
		return fail(fmt.Sprintf("after %d steps pc is 0x%08x, want 0x%08x (the instructions did not run as written)", len(want), p, scratch+uint32(len(code))))
	}
	rec := map[string][]byte{}
	for i, s := range want {
		b, ok := got[rRegs[i].Name]
		if !ok || len(b) < 4 {
			return fail(fmt.Sprintf("%s: no value read back", rRegs[i].Name))
		}
		rec[s.name] = b[:4]
	}
	if err := restore(); err != nil {
		return "", fmt.Errorf("read %s by stepping MRS at pc 0x%08x, but the target could NOT be restored as found: %w", strings.Join(names, "/"), scratch, err)
	}
	// In unprivileged thread mode MRS reads the stack pointers and masks
	// as zero: keep CONTROL only.
	if xpsr&0x1ff == 0 {
		if ctl, ok := rec["control"]; !ok || ctl[0]&1 != 0 {
			why := "CONTROL.nPRIV=1"
			if !ok {
				why = "CONTROL not read"
			}
			for n := range rec {
				if n != "control" {
					delete(rec, n)
				}
			}
			if len(rec) == 0 {
				return fmt.Sprintf("the server gives no %s; the core is in unprivileged thread mode (%s), where MRS reads them as zero: left unknown (target restored and checked)", strings.Join(names, "/"), why), nil
			}
		}
	}
	var read []string
	for _, s := range want {
		if b, ok := rec[s.name]; ok {
			vals[s.name] = b
			read = append(read, fmt.Sprintf("%s=0x%x", s.name, binary.LittleEndian.Uint32(b)))
		}
	}
	return fmt.Sprintf("the server gives no %s: read them from the core by writing %d MRS instructions over the %d bytes at pc 0x%08x and single-stepping them (%s); the bytes and every register were written back and checked by reading them again (--no-step leaves the target untouched and these unknown)",
		strings.Join(names, "/"), len(want), len(code), scratch, strings.Join(read, " ")), nil
}
