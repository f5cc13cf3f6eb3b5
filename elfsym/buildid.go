package elfsym

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
)

// BuildID returns the GNU build ID of the file (the descriptor of the
// NT_GNU_BUILD_ID note, type 3, owner "GNU") as lower-case hex, or "" when
// the file has none (linked without --build-id). Notes are looked for in
// SHT_NOTE sections, then in PT_NOTE segments.
func (f *File) BuildID() string {
	for i := range f.sections {
		s := &f.sections[i]
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if id, ok := FindBuildIDNote(s.data); ok {
			return hex.EncodeToString(id)
		}
	}
	for _, p := range f.progs {
		if p.Type != elf.PT_NOTE || uint64(p.Off)+uint64(p.Filesz) > uint64(len(f.data)) {
			continue
		}
		if id, ok := FindBuildIDNote(f.data[p.Off : p.Off+p.Filesz]); ok {
			return hex.EncodeToString(id)
		}
	}
	return ""
}

// FindBuildIDNote scans a little-endian ELF note area (gABI "Note
// Section": namesz, descsz, type, then the name and the descriptor, each
// padded to 4 bytes) for the GNU build ID note and returns its descriptor.
// The scan is bounded by the area's length; a malformed note ends it.
func FindBuildIDNote(b []byte) ([]byte, bool) {
	for off := 0; off+12 <= len(b); {
		namesz := int64(binary.LittleEndian.Uint32(b[off:]))
		descsz := int64(binary.LittleEndian.Uint32(b[off+4:]))
		typ := binary.LittleEndian.Uint32(b[off+8:])
		name := int64(off + 12)
		desc := name + (namesz+3)&^3
		end := desc + (descsz+3)&^3
		if desc+descsz > int64(len(b)) {
			return nil, false
		}
		if typ == ntGNUBuildID && namesz == 4 && string(b[name:name+4]) == "GNU\x00" && descsz > 0 {
			return b[desc : desc+descsz], true
		}
		if end > int64(len(b)) {
			return nil, false
		}
		off = int(end)
	}
	return nil, false
}

// ntGNUBuildID is the note type of the GNU build ID (binutils
// include/elf/common.h NT_GNU_BUILD_ID).
const ntGNUBuildID = 3
