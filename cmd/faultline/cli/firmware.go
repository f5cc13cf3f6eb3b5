package cli

import (
	"debug/elf"
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// checkFirmwareHeader refuses an ELF that cannot be Cortex-M firmware
// from its header alone: a relocatable object (a .o file: its code is not
// at its run addresses). Files debug/elf cannot read are left to elfsym,
// which says what is wrong with them.
func checkFirmwareHeader(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if f.Type == elf.ET_REL {
		return fmt.Errorf("%s: a relocatable object (ELF type ET_REL, a .o file), not linked firmware: give the linked executable", path)
	}
	return nil
}

// checkCortexM refuses firmware whose build attributes say it is for
// another ARM profile (Cortex-A or Cortex-R: Tag_CPU_arch_profile 'A' or
// 'R', or an architecture that has no M profile).
func checkCortexM(path string, f *elfsym.File) error {
	a := f.Info().Attributes
	if a == nil {
		return nil
	}
	core := a.CPUName
	if core == "" {
		core = "ARM" + a.CPUArch
	}
	switch a.Profile {
	case "A", "R":
		return fmt.Errorf("%s: built for a Cortex-%s core (%s, build attribute Tag_CPU_arch_profile '%s'), not Cortex-M: faultline decodes Cortex-M firmware only", path, a.Profile, core, a.Profile)
	case "M", "S":
		return nil
	}
	// No profile: architectures before ARMv6-M have no M profile.
	switch a.CPUArch {
	case "Pre-v4", "v4", "v4T", "v5T", "v5TE", "v5TEJ", "v6", "v6KZ", "v6T2", "v6K",
		"v8-A", "v8-R", "v8.1-A", "v8.2-A", "v8.3-A", "v9":
		return fmt.Errorf("%s: built for %s (build attribute Tag_CPU_arch), not a Cortex-M core: faultline decodes Cortex-M firmware only", path, core)
	}
	return nil
}

// openFirmware opens the ELF given with --elf and checks that it can be
// Cortex-M firmware.
func openFirmware(path string) (*elfsym.File, error) {
	if err := checkFirmwareHeader(path); err != nil {
		return nil, err
	}
	f, err := elfsym.Open(path)
	if err != nil {
		return nil, err
	}
	if err := checkCortexM(path, f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkDumpRegisters refuses a dump that holds no register at all:
// nothing can be decoded from it (a backtrace needs at least the PC),
// and reporting "PC unknown" with exit status 0 would hide the problem.
func checkDumpRegisters(d *crashdump.Dump) error {
	known := 0
	d.Regs.Each(func(unwinders.Reg, uint32) { known++ })
	if known == 0 {
		return fmt.Errorf("%s: the dump holds no registers: nothing to decode (want at least pc and sp; format %s)", d.Path, strings.TrimSpace(d.Format))
	}
	return nil
}
