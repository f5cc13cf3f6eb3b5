package crashdump

import (
	"fmt"
	"io/fs"
	"os"
	"sort"

	"github.com/faultline-dev/faultline/crashdump/fault"
	"github.com/faultline-dev/faultline/unwinders"
)

// FormatRaw is the Format of a dump that Combine assembled from memory
// images and register text.
const FormatRaw = "memory+registers"

// CombineOptions tell Combine how to read its inputs.
type CombineOptions struct {
	CPU   string       // the dump's CPU ("cortex-m4"); "" when not known
	Image ImageOptions // the load address of raw binary images
}

// Combine builds a dump from register text (GDB "info registers" or
// OpenOCD "reg" output, see ParseRegisterText) and memory images (Intel HEX,
// S-records or raw binary, see ParseMemoryImage), read from files. The
// registers are taken as the dump's registers as they are: capture point a
// (a halted handler) or b (the interrupted code) both work. Dump.Path is
// the first image's path; Dump.Fault comes from the SCB registers the
// images hold. Images must not overlap. Errors are *FormatError naming the
// file at fault.
func Combine(regsPath string, imagePaths []string, opt CombineOptions) (*Dump, error) {
	text, err := readInput(regsPath, MaxManifestSize)
	if err != nil {
		return nil, err
	}
	var images []NamedImage
	var total int64
	for _, p := range imagePaths {
		b, err := readInput(p, min(int64(MaxRegionSize), MaxTotalSize-total))
		if err != nil {
			return nil, err
		}
		total += int64(len(b))
		images = append(images, NamedImage{Name: p, Data: b})
	}
	return CombineData(text, regsPath, images, opt)
}

// NamedImage is the content of one memory image and the name used in
// messages.
type NamedImage struct {
	Name string
	Data []byte
}

// CombineData is Combine on data already read.
func CombineData(regsText []byte, regsName string, images []NamedImage, opt CombineOptions) (*Dump, error) {
	if len(images) == 0 {
		return nil, &FormatError{File: regsName, Offset: -1, Msg: "no memory image to go with the registers"}
	}
	regs, err := ParseRegisterText(regsText, regsName)
	if err != nil {
		return nil, err
	}
	if !regs.Known(unwinders.PC) {
		return nil, &FormatError{File: regsName, Offset: -1, Msg: "no pc: want the program counter among the registers"}
	}
	d := &Dump{Path: images[0].Name, Format: FormatRaw, CPU: opt.CPU, Regs: regs}
	type owned struct {
		r    unwinders.Region
		file string
	}
	var all []owned
	for _, im := range images {
		rs, _, warnings, err := ParseMemoryImage(im.Data, im.Name, opt.Image)
		if err != nil {
			return nil, err
		}
		d.Warnings = append(d.Warnings, warnings...)
		for _, r := range rs {
			all = append(all, owned{r, im.Name})
			d.Memory = append(d.Memory, r)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].r.Addr < all[j].r.Addr })
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if uint64(b.r.Addr) < a.r.End() {
			return nil, &FormatError{File: b.file, Offset: -1,
				Msg: fmt.Sprintf("memory 0x%08x-0x%08x overlaps 0x%08x-0x%08x of %s: want disjoint images", b.r.Addr, b.r.End(), a.r.Addr, a.r.End(), a.file)}
		}
	}
	if err := d.faultFromMemory(fault.SCB{}); err != nil {
		return nil, err
	}
	return d, nil
}

// readInput reads a regular file of at most limit bytes, with errors as
// *FormatError.
func readInput(path string, limit int64) ([]byte, error) {
	b, err := readLimited(path, limit,
		func() (fs.FileInfo, error) { return os.Stat(path) },
		func() (*os.File, error) { return os.OpenFile(path, openRead, 0) })
	if err != nil {
		return nil, &FormatError{File: path, Offset: -1, Msg: "cannot read: " + fsReason(err), Err: err}
	}
	return b, nil
}
