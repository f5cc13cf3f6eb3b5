package crashdump

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/faultline-dev/faultline/unwinders"
)

// Names of the memory image formats ParseMemoryImage reads.
const (
	ImageIHex = "ihex" // Intel HEX
	ImageSRec = "srec" // Motorola S-records
	ImageRaw  = "raw"  // raw bytes at ImageOptions.Base
)

// ImageOptions tell ParseMemoryImage where a raw binary sits.
type ImageOptions struct {
	Base    uint32 // load address of a raw binary
	HasBase bool   // Base was given; a raw binary needs it
}

// DetectImage returns the format of a memory image from its content: Intel
// HEX when the first non-blank line starts with ':' and two hex digits, an
// S-record file when it starts with 'S', a record digit and two hex
// digits, else raw bytes.
func DetectImage(data []byte) string {
	t := bytes.TrimLeft(data, " \t\r\n")
	line := t
	if i := bytes.IndexAny(t, "\r\n"); i >= 0 {
		line = t[:i]
	}
	allHex := func(b []byte) bool {
		for _, c := range b {
			if !isHexDigit(c) {
				return false
			}
		}
		return len(b) > 0
	}
	switch {
	case len(line) >= 3 && line[0] == ':' && allHex(line[1:3]):
		return ImageIHex
	case len(line) >= 4 && line[0] == 'S' && line[1] >= '0' && line[1] <= '9' && allHex(line[2:4]):
		return ImageSRec
	}
	return ImageRaw
}

// ParseMemoryImage decodes a memory image (Intel HEX, Motorola S-records
// or raw bytes, detected by DetectImage) into regions, adjacent records
// merged. It returns the regions in address order, the format, and
// warnings. Records must not overlap, checksums must match, and a raw
// image needs opt.HasBase. Errors are *FormatError naming the file, the
// byte offset and what was expected.
func ParseMemoryImage(data []byte, name string, opt ImageOptions) ([]unwinders.Region, string, []string, error) {
	format := DetectImage(data)
	var (
		chunks   []chunk
		warnings []string
		err      error
	)
	switch format {
	case ImageIHex:
		chunks, warnings, err = parseIHex(data, name)
	case ImageSRec:
		chunks, warnings, err = parseSRec(data, name)
	default:
		if !opt.HasBase {
			return nil, format, nil, &FormatError{File: name, Offset: -1,
				Msg: "raw binary memory image without a load address: give --base ADDR (or use Intel HEX or S-records, which carry addresses)"}
		}
		if len(data) == 0 {
			return nil, format, nil, &FormatError{File: name, Offset: -1, Msg: "empty memory image"}
		}
		if len(data) > MaxRegionSize {
			return nil, format, nil, &FormatError{File: name, Offset: -1, Err: ErrTooLarge,
				Msg: fmt.Sprintf("%d bytes: larger than the %d byte region limit", len(data), MaxRegionSize)}
		}
		if uint64(opt.Base)+uint64(len(data)) > 1<<32 {
			return nil, format, nil, &FormatError{File: name, Offset: -1,
				Msg: fmt.Sprintf("%d bytes at base 0x%08x run past 4 GiB", len(data), opt.Base)}
		}
		chunks = []chunk{{addr: uint64(opt.Base), data: data, off: 0}}
	}
	if err != nil {
		return nil, format, nil, err
	}
	regions, err := mergeChunks(chunks, name, format)
	return regions, format, warnings, err
}

// chunk is the data of one record.
type chunk struct {
	addr uint64
	data []byte
	off  int64 // file offset of the record, for messages
}

// mergeChunks sorts the records, rejects overlaps and joins adjacent ones.
func mergeChunks(cs []chunk, name, format string) ([]unwinders.Region, error) {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].addr < cs[j].addr })
	var out []unwinders.Region
	var total int64
	for i, c := range cs {
		if len(c.data) == 0 {
			continue
		}
		end := c.addr + uint64(len(c.data))
		if end > 1<<32 {
			return nil, &FormatError{File: name, Offset: c.off, Msg: fmt.Sprintf("record at 0x%x with %d bytes runs past 4 GiB", c.addr, len(c.data))}
		}
		if i > 0 && len(out) > 0 {
			last := &out[len(out)-1]
			switch {
			case c.addr < last.End():
				prev := cs[i-1]
				return nil, &FormatError{File: name, Offset: max(c.off, prev.off),
					Msg: fmt.Sprintf("records overlap: 0x%08x-0x%08x and 0x%08x-0x%08x (the records at offsets %d and %d): want each address once",
						prev.addr, prev.addr+uint64(len(prev.data)), c.addr, end, min(c.off, prev.off), max(c.off, prev.off))}
			case c.addr == last.End() && len(last.Data)+len(c.data) <= MaxRegionSize:
				last.Data = append(last.Data, c.data...)
				total += int64(len(c.data))
				continue
			}
		}
		total += int64(len(c.data))
		if total > MaxTotalSize {
			return nil, &FormatError{File: name, Offset: c.off, Err: ErrTooLarge, Msg: fmt.Sprintf("more than %d bytes of memory", MaxTotalSize)}
		}
		out = append(out, unwinders.Region{Name: fmt.Sprintf("%s@0x%08x", name, c.addr), Addr: uint32(c.addr), Data: c.data[:len(c.data):len(c.data)]})
	}
	if len(out) == 0 {
		return nil, &FormatError{File: name, Offset: -1, Msg: fmt.Sprintf("the %s image holds no data", format)}
	}
	return out, nil
}

// textLines calls fn for each line of data with its offset, the line
// without CR and surrounding blanks, and the offset of the trimmed text.
// fn returns false to stop.
func textLines(data []byte, fn func(off int64, line []byte) (bool, error)) error {
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		line := data[off:]
		if end >= 0 {
			line = data[off : off+end]
			next = off + end + 1
		}
		lead := len(line) - len(bytes.TrimLeft(line, " \t"))
		t := bytes.TrimRight(line[lead:], " \t\r")
		more, err := fn(int64(off+lead), t)
		if err != nil || !more {
			return err
		}
		off = next
	}
	return nil
}

// hexBytes decodes a record's hex digits after its first tagLen
// characters; bad digits are reported at their offset.
func hexBytes(name string, off int64, line []byte, tagLen int, kind string) ([]byte, error) {
	h := line[tagLen:]
	for i, c := range h {
		if !isHexDigit(c) {
			return nil, &FormatError{File: name, Offset: off + int64(tagLen+i), Msg: fmt.Sprintf("invalid hex digit %q in %s record: want hex digits", c, kind)}
		}
	}
	if len(h)%2 != 0 {
		return nil, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("%s record with an odd number of hex digits (%d)", kind, len(h))}
	}
	b := make([]byte, len(h)/2)
	for i := range b {
		b[i] = hexNibble(h[2*i])<<4 | hexNibble(h[2*i+1])
	}
	return b, nil
}

// parseIHex decodes Intel HEX: ":" count u8, address u16, type u8, data,
// checksum u8 (the two's complement of the sum of the other bytes). Types
// 00 data, 01 end of file, 02 extended segment address (base = value <<
// 4), 03 start segment address, 04 extended linear address (upper 16
// bits), 05 start linear address.
func parseIHex(data []byte, name string) ([]chunk, []string, error) {
	var (
		cs       []chunk
		base     uint64
		sawEOF   bool
		warnings []string
	)
	err := textLines(data, func(off int64, line []byte) (bool, error) {
		if len(line) == 0 {
			return true, nil
		}
		if line[0] != ':' {
			return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("line starts with %q: want ':' (Intel HEX record)", line[0])}
		}
		b, err := hexBytes(name, off, line, 1, "Intel HEX")
		if err != nil {
			return false, err
		}
		if len(b) < 5 {
			return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("Intel HEX record of %d bytes: want at least 5 (count, address, type, checksum)", len(b))}
		}
		n := int(b[0])
		if len(b) != n+5 {
			return false, &FormatError{File: name, Offset: off + 1, Msg: fmt.Sprintf("Intel HEX record count %d but %d data bytes: want count = data bytes", n, len(b)-5)}
		}
		var sum byte
		for _, v := range b {
			sum += v
		}
		if sum != 0 {
			var s byte
			for _, v := range b[:len(b)-1] {
				s += v
			}
			return false, &FormatError{File: name, Offset: off + int64(len(line)) - 2,
				Msg: fmt.Sprintf("Intel HEX checksum 0x%02x: want 0x%02x", b[len(b)-1], byte(-s))}
		}
		addr := uint64(b[1])<<8 | uint64(b[2])
		payload := b[4 : 4+n]
		switch typ := b[3]; typ {
		case 0x00:
			cs = append(cs, chunk{addr: base + addr, data: payload, off: off})
		case 0x01:
			sawEOF = true
			return false, nil
		case 0x02, 0x04:
			if n != 2 {
				return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("Intel HEX type %02x record with %d data bytes: want 2", typ, n)}
			}
			v := uint64(payload[0])<<8 | uint64(payload[1])
			if typ == 0x02 {
				base = v << 4
			} else {
				base = v << 16
			}
		case 0x03, 0x05:
			// Start address: not memory.
		default:
			return false, &FormatError{File: name, Offset: off + 7, Msg: fmt.Sprintf("Intel HEX record type %02x: want 00-05", typ)}
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if !sawEOF {
		warnings = append(warnings, name+": no Intel HEX end-of-file record (:00000001FF): the file may be cut short")
	}
	return cs, warnings, nil
}

// parseSRec decodes Motorola S-records: "S" type, count u8 (bytes that
// follow: address, data, checksum), address (2 bytes for S0/S1/S5/S9, 3
// for S2/S6/S8, 4 for S3/S7), data, checksum (the ones' complement of the
// sum of count, address and data). S0 header, S1-S3 data, S5/S6 record
// count (checked), S7-S9 start address (ends the file).
func parseSRec(data []byte, name string) ([]chunk, []string, error) {
	var (
		cs       []chunk
		nData    uint64
		sawEnd   bool
		warnings []string
	)
	addrLen := [10]int{2, 2, 3, 4, 0, 2, 3, 4, 3, 2}
	err := textLines(data, func(off int64, line []byte) (bool, error) {
		if len(line) == 0 {
			return true, nil
		}
		if len(line) < 2 || line[0] != 'S' || line[1] < '0' || line[1] > '9' {
			return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("line starts with %q: want an S-record (S0-S9)", line[:min(2, len(line))])}
		}
		typ := int(line[1] - '0')
		if typ == 4 {
			return false, &FormatError{File: name, Offset: off, Msg: "S4 record: reserved, want S0-S3 or S5-S9"}
		}
		b, err := hexBytes(name, off, line, 2, "S-record")
		if err != nil {
			return false, err
		}
		al := addrLen[typ]
		if len(b) < 1 || int(b[0]) != len(b)-1 {
			got := -1
			if len(b) > 0 {
				got = int(b[0])
			}
			return false, &FormatError{File: name, Offset: off + 2, Msg: fmt.Sprintf("S%d record count %d but %d bytes follow it: want count = address + data + checksum bytes", typ, got, len(b)-1)}
		}
		if len(b) < 1+al+1 {
			return false, &FormatError{File: name, Offset: off + 2, Msg: fmt.Sprintf("S%d record of %d bytes: too short for its %d-byte address and checksum", typ, len(b), al)}
		}
		var sum byte
		for _, v := range b[:len(b)-1] {
			sum += v
		}
		if want := ^sum; b[len(b)-1] != want {
			return false, &FormatError{File: name, Offset: off + int64(len(line)) - 2,
				Msg: fmt.Sprintf("S-record checksum 0x%02x: want 0x%02x", b[len(b)-1], want)}
		}
		var addr uint64
		for _, v := range b[1 : 1+al] {
			addr = addr<<8 | uint64(v)
		}
		payload := b[1+al : len(b)-1]
		switch typ {
		case 1, 2, 3:
			cs = append(cs, chunk{addr: addr, data: payload, off: off})
			nData++
		case 5, 6:
			if addr != nData&(1<<(8*al)-1) {
				return false, &FormatError{File: name, Offset: off, Msg: fmt.Sprintf("S%d record count %d: the file has %d data records before it", typ, addr, nData)}
			}
		case 7, 8, 9:
			sawEnd = true
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, nil, err
	}
	if !sawEnd {
		warnings = append(warnings, name+": no S7/S8/S9 termination record: the file may be cut short")
	}
	return cs, warnings, nil
}
