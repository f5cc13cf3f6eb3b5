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

// openImages opens every ELF of paths (openFirmware) and, with more than
// one, checks that they claim disjoint addresses (elfsym.NewImages: an
// overlap is an error naming both files and the range). It returns the
// first, the primary image, through which the others are reached
// (elfsym.File.Images), and a function that closes them all.
func openImages(paths []string) (*elfsym.File, func(), error) {
	var files []*elfsym.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, p := range paths {
		f, err := openFirmware(p)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, nil, usagef("--elf is required")
	}
	if len(files) > 1 {
		if _, err := elfsym.NewImages(files...); err != nil {
			closeAll()
			return nil, nil, err
		}
	}
	return files[0], closeAll, nil
}
