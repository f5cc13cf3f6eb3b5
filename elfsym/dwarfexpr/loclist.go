package dwarfexpr

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxListEntries bounds the walk of one location list.
const maxListEntries = 10000

// ErrNoLocation: no entry of the location list covers the PC (the
// variable has no location there: optimized out).
var ErrNoLocation = errors.New("no location at this PC")

// LocList4 finds in a DWARF 2-4 .debug_loc list at off the expression that
// holds at pc; base is the unit's base address (DW_AT_low_pc).
func LocList4(sec []byte, off uint64, base, pc uint32) ([]byte, error) {
	if off >= uint64(len(sec)) {
		return nil, fmt.Errorf(".debug_loc offset 0x%x past the section (%d bytes)", off, len(sec))
	}
	p := int(off)
	for range maxListEntries {
		if p+8 > len(sec) {
			return nil, fmt.Errorf(".debug_loc list at 0x%x truncated at 0x%x", off, p)
		}
		lo := binary.LittleEndian.Uint32(sec[p:])
		hi := binary.LittleEndian.Uint32(sec[p+4:])
		p += 8
		if lo == 0 && hi == 0 {
			return nil, ErrNoLocation
		}
		if lo == 0xffffffff {
			base = hi
			continue
		}
		if p+2 > len(sec) {
			return nil, fmt.Errorf(".debug_loc list at 0x%x truncated at 0x%x", off, p)
		}
		n := int(binary.LittleEndian.Uint16(sec[p:]))
		p += 2
		if p+n > len(sec) {
			return nil, fmt.Errorf(".debug_loc expression at 0x%x past the section", p)
		}
		if pc >= base+lo && pc < base+hi {
			return sec[p : p+n], nil
		}
		p += n
	}
	return nil, fmt.Errorf(".debug_loc list at 0x%x longer than %d entries", off, maxListEntries)
}

// LocListx returns the .debug_loclists offset of DW_FORM_loclistx index i
// for a unit whose DW_AT_loclists_base is base (32-bit DWARF).
func LocListx(sec []byte, base uint64, i uint64) (uint64, error) {
	at := base + 4*i
	if base > uint64(len(sec)) || i > uint64(len(sec)) || at+4 > uint64(len(sec)) {
		return 0, fmt.Errorf("loclistx index %d past .debug_loclists", i)
	}
	return base + uint64(binary.LittleEndian.Uint32(sec[at:])), nil
}

// LocList5 finds in a DWARF 5 .debug_loclists list at off the expression
// that holds at pc; base is the unit's base address, addr resolves
// .debug_addr indexes.
func LocList5(sec []byte, off uint64, base, pc uint32, addr func(uint64) (uint32, bool)) ([]byte, error) {
	if off >= uint64(len(sec)) {
		return nil, fmt.Errorf(".debug_loclists offset 0x%x past the section (%d bytes)", off, len(sec))
	}
	r := &reader{b: sec, pos: int(off)}
	ax := func(i uint64) (uint32, error) {
		if addr == nil {
			return 0, fmt.Errorf(".debug_addr needed by the list at 0x%x is not available", off)
		}
		v, ok := addr(i)
		if !ok {
			return 0, fmt.Errorf(".debug_addr index %d not found", i)
		}
		return v, nil
	}
	var def []byte
	for range maxListEntries {
		kind := r.u8()
		if r.err != nil {
			return nil, fmt.Errorf(".debug_loclists list at 0x%x: %w", off, r.err)
		}
		var lo, hi uint32
		ranged := true
		switch kind {
		case 0: // end_of_list
			if def != nil {
				return def, nil
			}
			return nil, ErrNoLocation
		case 1: // base_addressx
			v, err := ax(r.uleb())
			if err != nil {
				return nil, err
			}
			base = v
			continue
		case 2: // startx_endx
			a, err := ax(r.uleb())
			if err != nil {
				return nil, err
			}
			b, err := ax(r.uleb())
			if err != nil {
				return nil, err
			}
			lo, hi = a, b
		case 3: // startx_length
			a, err := ax(r.uleb())
			if err != nil {
				return nil, err
			}
			lo = a
			hi = a + uint32(r.uleb())
		case 4: // offset_pair
			lo = base + uint32(r.uleb())
			hi = base + uint32(r.uleb())
		case 5: // default_location
			ranged = false
		case 6: // base_address
			base = uint32(r.fixed(4))
			continue
		case 7: // start_end
			lo = uint32(r.fixed(4))
			hi = uint32(r.fixed(4))
		case 8: // start_length
			lo = uint32(r.fixed(4))
			hi = lo + uint32(r.uleb())
		default:
			return nil, fmt.Errorf(".debug_loclists list at 0x%x: unknown entry kind %d at 0x%x", off, kind, r.pos-1)
		}
		n := r.uleb()
		if r.err != nil || n > uint64(len(sec)-r.pos) {
			return nil, fmt.Errorf(".debug_loclists list at 0x%x truncated", off)
		}
		e := sec[r.pos : r.pos+int(n)]
		r.pos += int(n)
		if !ranged {
			def = e
			continue
		}
		if pc >= lo && pc < hi {
			return e, nil
		}
	}
	return nil, fmt.Errorf(".debug_loclists list at 0x%x longer than %d entries", off, maxListEntries)
}
