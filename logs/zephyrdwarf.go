package logs

import (
	"debug/dwarf"
)

// zDWARF is the message layout the firmware's debugging information
// states: struct log_msg_hdr (log_msg2_hdr before Zephyr 3.2) gives the
// timestamp's offset and size and whether a thread (tid) follows,
// struct log_msg the header size with its padding, struct log_msg_desc
// the package length's width; struct k_thread having a name member says
// the console prints thread names.
type zDWARF struct {
	lay        zLayout
	threadName bool
}

// Bound on the entries read looking for the structs.
const maxZDWARFEntries = 4 << 20

func readZDWARF(d *dwarf.Data) (zDWARF, bool) {
	if d == nil {
		return zDWARF{}, false
	}
	type member struct {
		off, bits int64
		typ       dwarf.Offset
		has       bool
	}
	structs := map[string]map[string]member{}
	sizes := map[string]int64{}
	want := map[string]bool{"log_msg_hdr": true, "log_msg2_hdr": true, "log_msg": true, "log_msg2": true,
		"log_msg_desc": true, "log_msg2_desc": true, "k_thread": true}
	r := d.Reader()
	for n := 0; n < maxZDWARFEntries; n++ {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit || e.Tag == 0 {
			continue
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if e.Tag != dwarf.TagStructType || !want[name] || !e.Children || structs[name] != nil {
			if e.Children {
				r.SkipChildren()
			}
			continue
		}
		if sz, ok := e.Val(dwarf.AttrByteSize).(int64); ok {
			sizes[name] = sz
		}
		ms := map[string]member{}
		for k := 0; k < 256; k++ {
			c, err := r.Next()
			if err != nil || c == nil || c.Tag == 0 {
				break
			}
			if c.Children {
				r.SkipChildren()
			}
			if c.Tag != dwarf.TagMember {
				continue
			}
			mn, _ := c.Val(dwarf.AttrName).(string)
			m := member{has: true}
			m.off, _ = c.Val(dwarf.AttrDataMemberLoc).(int64)
			m.bits, _ = c.Val(dwarf.AttrBitSize).(int64)
			m.typ, _ = c.Val(dwarf.AttrType).(dwarf.Offset)
			ms[mn] = m
		}
		structs[name] = ms
	}
	var out zDWARF
	out.threadName = structs["k_thread"]["name"].has
	hdr, desc, msg := "log_msg_hdr", "log_msg_desc", "log_msg"
	if structs[hdr] == nil {
		hdr, desc, msg = "log_msg2_hdr", "log_msg2_desc", "log_msg2"
	}
	h := structs[hdr]
	ts := h["timestamp"]
	bits := structs[desc]["package_len"].bits
	head := sizes[msg]
	if !ts.has || !h["source"].has || (bits != 10 && bits != 11) || head < 12 || head > 64 {
		return zDWARF{}, false
	}
	tsSize := typeSize(d, ts.typ)
	if tsSize != 4 && tsSize != 8 {
		return zDWARF{}, false
	}
	out.lay = zLayout{pkgBits: uint(bits), head: uint32(head), align: 8, ts8: tsSize == 8,
		srcOff: uint32(h["source"].off), tsOff: uint32(ts.off), tidOff: -1, fromDWARF: true}
	if head%16 == 0 && head > 16 {
		out.lay.align = 16
	}
	if t := h["tid"]; t.has {
		out.lay.tidOff = int(t.off)
	}
	return out, true
}

// typeSize follows typedefs and qualifiers to a byte size (0: unknown).
func typeSize(d *dwarf.Data, off dwarf.Offset) int64 {
	r := d.Reader()
	for i := 0; i < 8 && off != 0; i++ {
		r.Seek(off)
		e, err := r.Next()
		if err != nil || e == nil {
			return 0
		}
		if sz, ok := e.Val(dwarf.AttrByteSize).(int64); ok {
			return sz
		}
		off, _ = e.Val(dwarf.AttrType).(dwarf.Offset)
	}
	return 0
}
