package cli

import (
	"fmt"
	"strings"

	"github.com/faultline-dev/faultline/analysis/symstore"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
	"github.com/faultline-dev/faultline/unwinders"
)

// openFirmware opens the ELF given with --elf and checks that it can be
// Cortex-M firmware (symstore.OpenFirmware).
func openFirmware(path string) (*elfsym.File, error) { return symstore.OpenFirmware(path) }

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
