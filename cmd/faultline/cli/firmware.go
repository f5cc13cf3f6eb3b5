package cli

import (
	"github.com/faultline-dev/faultline/analysis/symstore"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// openFirmware opens the ELF given with --elf and checks that it can be
// Cortex-M firmware (symstore.OpenFirmware).
func openFirmware(path string) (*elfsym.File, error) { return symstore.OpenFirmware(path) }

// checkDumpRegisters refuses a dump that holds no register at all
// (symstore.CheckDumpRegisters).
func checkDumpRegisters(d *crashdump.Dump) error { return symstore.CheckDumpRegisters(d) }
