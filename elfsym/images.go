package elfsym

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/faultline-dev/faultline/unwinders"
)

// ErrOverlap is wrapped by NewImages when two images claim the same
// addresses.
var ErrOverlap = errors.New("images overlap")

// Claim is an address range one image of an Images holds: a load segment's
// bytes at their load address (and an executable segment's at its run
// address), or, for an image without any (a ROM's symbol file), its
// executable sections, else the span of its function symbols.
type Claim struct {
	Lo    uint32
	Hi    uint64 // one past the last byte
	Image int    // index in Images.Files
	What  string // the segment or sections, for messages
}

// Images is the firmware of a device made of several ELF files that share
// one address space: a bootloader and its application, a TrustZone Secure
// and Non-secure image, a ROM's symbol file. Each image claims its own
// address ranges (Claim); code at an address is unwound and symbolized with
// the image that claims it. Images implements unwinders.MultiProgram.
//
// All methods are safe for concurrent use.
type Images struct {
	files  []*File
	claims []Claim // sorted by Lo, disjoint
}

// maxImages bounds the images of one device.
const maxImages = 16

// NewImages checks that the files claim disjoint address ranges and
// returns them as one Images, in the order given (the first is the primary
// image: its vector table is the device's reset vector table). Two images
// that claim the same bytes are an error naming both files and the range
// (wrapping ErrOverlap); so is the same file given twice.
func NewImages(files ...*File) (*Images, error) {
	if len(files) == 0 {
		return nil, errors.New("elfsym: no image")
	}
	if len(files) > maxImages {
		return nil, fmt.Errorf("elfsym: %d images: at most %d", len(files), maxImages)
	}
	m := &Images{files: files}
	for i, f := range files {
		if f.set != nil {
			return nil, fmt.Errorf("elfsym: %s is already one of another set of images", f.Name())
		}
		for _, c := range claimsOf(f) {
			c.Image = i
			m.claims = append(m.claims, c)
		}
	}
	slices.SortStableFunc(m.claims, func(a, b Claim) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	// Sorted by start: an overlap shows between neighbours, or between a
	// range and the longest-reaching one before it.
	reach := -1
	for i, c := range m.claims {
		if reach >= 0 && uint64(c.Lo) < m.claims[reach].Hi {
			p := m.claims[reach]
			if p.Image != c.Image {
				hi := min(p.Hi, c.Hi)
				return nil, fmt.Errorf("%w: %s and %s both claim 0x%08x-0x%08x (%s; %s)", ErrOverlap,
					files[p.Image].Name(), files[c.Image].Name(), c.Lo, hi-1, p.What, c.What)
			}
		}
		if reach < 0 || c.Hi > m.claims[reach].Hi {
			reach = i
		}
	}
	if len(files) > 1 {
		for _, f := range files {
			f.set = m
		}
	}
	return m, nil
}

// Images returns the set of images f was made part of by NewImages (with
// more than one file), or nil.
func (f *File) Images() *Images { return f.set }

// ImageAt returns the image of f's set that claims addr: the file whose
// symbols, line tables and variables describe the code there. f itself
// when f is used alone or when no image claims addr.
func (f *File) ImageAt(addr uint32) *File {
	if f == nil || f.set == nil {
		return f
	}
	if g, ok := f.set.FileAt(addr); ok {
		return g
	}
	return f
}

// contentSegments returns f's Segments that hold some section's bytes: a
// symbol file (objcopy --extract-symbol) keeps load segments whose file
// bytes are no section's, which are not the device's memory.
func contentSegments(f *File) []unwinders.Region {
	var out []unwinders.Region
	for _, r := range f.segments {
		if len(r.Data) > 0 && !strings.HasSuffix(r.Name, "()") {
			out = append(out, r)
		}
	}
	return out
}

// claimsOf lists the ranges f claims.
func claimsOf(f *File) []Claim {
	var out []Claim
	for _, r := range contentSegments(f) {
		out = append(out, Claim{Lo: r.Addr, Hi: r.End(), What: r.Name})
	}
	if len(out) > 0 {
		return out
	}
	for i := 1; i < len(f.sections); i++ {
		s := &f.sections[i]
		if s.Alloc && s.Exec && s.Size > 0 {
			out = append(out, Claim{Lo: s.Addr, Hi: uint64(s.Addr) + uint64(s.Size), What: fmt.Sprintf("%s: section %s", f.name, s.Name)})
		}
	}
	if len(out) > 0 {
		return out
	}
	// A symbol file: the functions it names.
	if n := len(f.syms.funcs.items); n > 0 {
		lo := f.syms.funcs.starts[0]
		hi := f.syms.funcs.maxEnd[n-1]
		if hi > uint64(lo) {
			out = append(out, Claim{Lo: lo, Hi: hi, What: fmt.Sprintf("%s: its %d function symbols", f.name, n)})
		}
	}
	return out
}

// Files returns the images in the order given to NewImages.
func (m *Images) Files() []*File { return m.files }

// Claims returns every range the images claim, by address.
func (m *Images) Claims() []Claim { return slices.Clone(m.claims) }

// Index returns the index of the image that claims addr.
// Cost: a binary search over the claims.
func (m *Images) Index(addr uint32) (int, bool) {
	i, _ := slices.BinarySearchFunc(m.claims, addr, func(c Claim, a uint32) int {
		switch {
		case c.Lo > a:
			return 1
		case c.Hi <= uint64(a):
			return -1
		}
		return 0
	})
	if i < len(m.claims) && m.claims[i].Lo <= addr && uint64(addr) < m.claims[i].Hi {
		return m.claims[i].Image, true
	}
	return 0, false
}

// FileAt returns the image that claims addr.
func (m *Images) FileAt(addr uint32) (*File, bool) {
	i, ok := m.Index(addr)
	if !ok {
		return nil, false
	}
	return m.files[i], true
}

// Label is the name an image goes by in reports: its file's base name.
func (m *Images) Label(i int) string { return filepath.Base(m.files[i].Name()) }

// ProgramAt implements unwinders.MultiProgram.
func (m *Images) ProgramAt(addr uint32) (unwinders.Program, bool) {
	f, ok := m.FileAt(addr)
	if !ok {
		return nil, false
	}
	return f, true
}

// FuncAt implements unwinders.Program: the function of the image that
// claims addr.
func (m *Images) FuncAt(addr uint32) (unwinders.Function, bool) {
	f, ok := m.FileAt(addr)
	if !ok {
		return unwinders.Function{}, false
	}
	return f.FuncAt(addr)
}

// IsCode implements unwinders.Program: addr is code of the image that
// claims it.
func (m *Images) IsCode(addr uint32) bool {
	f, ok := m.FileAt(addr)
	return ok && f.IsCode(addr)
}

// Section implements unwinders.Program: the section of the first image
// that has one of that name (the primary image's vector table).
func (m *Images) Section(name string) (uint32, []byte, bool) {
	for _, f := range m.files {
		if a, d, ok := f.Section(name); ok {
			return a, d, true
		}
	}
	return 0, nil, false
}

// Symbol implements unwinders.Program: the named symbol of the first image
// that defines it.
func (m *Images) Symbol(name string) (uint32, bool) {
	for _, f := range m.files {
		if a, ok := f.Symbol(name); ok {
			return a, true
		}
	}
	return 0, false
}

// Segments returns the memory image of every image, primary image first:
// each one's Segments but those that hold no section's bytes (a symbol
// file's).
func (m *Images) Segments() []unwinders.Region {
	var out []unwinders.Region
	for _, f := range m.files {
		out = append(out, contentSegments(f)...)
	}
	return out
}
