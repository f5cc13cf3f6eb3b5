package crashdump

import "encoding/binary"

// ELF note types this package reads (binutils include/elf/common.h).
const (
	ntGNUBuildID = 3 // owner "GNU": the build ID
	ntPRStatus   = 1 // owner "CORE": struct elf_prstatus, registers at offset 72
	ntARMVFP     = 0x400
)

// note is one ELF note (gABI "Note Section").
type note struct {
	name string
	typ  uint32
	desc []byte
	off  int // offset of the note header in the area
}

// parseNotes splits a little-endian note area into its notes: namesz,
// descsz, type, then the name and the descriptor, each padded to 4
// bytes. It stops at the first note that does not fit and returns the
// offset where it stopped (len(b) when all fit). At most maxNotes notes
// are returned.
func parseNotes(b []byte, maxNotes int) ([]note, int) {
	var out []note
	off := 0
	for off+12 <= len(b) && len(out) < maxNotes {
		namesz := int64(binary.LittleEndian.Uint32(b[off:]))
		descsz := int64(binary.LittleEndian.Uint32(b[off+4:]))
		typ := binary.LittleEndian.Uint32(b[off+8:])
		name := int64(off + 12)
		desc := name + (namesz+3)&^3
		end := desc + (descsz+3)&^3
		if desc+descsz > int64(len(b)) || name+namesz > int64(len(b)) {
			return out, off
		}
		nm := b[name : name+namesz]
		for len(nm) > 0 && nm[len(nm)-1] == 0 {
			nm = nm[:len(nm)-1]
		}
		out = append(out, note{name: string(nm), typ: typ, desc: b[desc : desc+descsz], off: off})
		if end > int64(len(b)) {
			return out, len(b)
		}
		off = int(end)
	}
	return out, off
}

// findBuildIDNote returns the descriptor of the GNU build-id note in a
// note area.
func findBuildIDNote(b []byte) ([]byte, bool) {
	ns, _ := parseNotes(b, 64)
	for _, n := range ns {
		if n.name == "GNU" && n.typ == ntGNUBuildID && len(n.desc) > 0 {
			return n.desc, true
		}
	}
	return nil, false
}
