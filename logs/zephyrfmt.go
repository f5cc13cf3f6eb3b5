package logs

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// format prints a cbprintf package as Zephyr's cbpprintf does: the format
// string (appended to the package, else read where its pointer points)
// with the arguments packed after it (ARM AAPCS: 4-byte slots, 8-byte
// aligned long long and double), %s from the package's appended copy or,
// for a read-only string, from memory.
func (r *zRing) format(pkg []byte) (string, error) {
	le := binary.LittleEndian
	if len(pkg) < 8 {
		return "", fmt.Errorf("package of %d bytes", len(pkg))
	}
	argsEnd := int(pkg[0]) * 4
	strCnt, ro, rw := int(pkg[1]), int(pkg[2]), int(pkg[3])
	if argsEnd < 8 || argsEnd > len(pkg) {
		return "", fmt.Errorf("package length %d words, %d bytes stored", pkg[0], len(pkg))
	}
	strs := map[int]string{}
	pos := argsEnd + ro + 2*rw
	for k := 0; k < strCnt; k++ {
		if pos >= len(pkg) {
			return "", fmt.Errorf("appended string %d of %d past the package's end", k+1, strCnt)
		}
		loc := int(pkg[pos])
		end := pos + 1
		for end < len(pkg) && pkg[end] != 0 {
			end++
		}
		if end >= len(pkg) {
			return "", fmt.Errorf("appended string %d not NUL-terminated", k+1)
		}
		strs[loc] = string(pkg[pos+1 : end])
		pos = end + 1
	}
	str := func(word int, ptr uint32) (string, error) {
		if s, ok := strs[word]; ok {
			return s, nil
		}
		if ptr == 0 {
			return "(null)", nil
		}
		s, ok := cStringRaw(r.mem, ptr, maxZString)
		if !ok {
			return "", fmt.Errorf("string at 0x%08x (argument word %d) not in the dump or the ELF", ptr, word)
		}
		return s, nil
	}
	f, err := str(1, le.Uint32(pkg[4:]))
	if err != nil || f == "" {
		return "", fmt.Errorf("no format string: %v", err)
	}
	if len(f) > maxZFormat {
		f = f[:maxZFormat]
	}
	off := 8
	next := func(size int) (uint64, error) {
		if size == 8 {
			off = (off + 7) &^ 7
		}
		if off+size > argsEnd {
			return 0, fmt.Errorf("format %q needs more arguments than the package's %d bytes", f, argsEnd)
		}
		v := uint64(le.Uint32(pkg[off:]))
		if size == 8 {
			v |= uint64(le.Uint32(pkg[off+4:])) << 32
		}
		off += size
		return v, nil
	}
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		// %[flags][width][.precision][length]conversion
		j := i + 1
		var flags string
		for j < len(f) && strings.IndexByte("-+ #0", f[j]) >= 0 {
			flags += string(f[j])
			j++
		}
		width, prec := -1, -1
		if j < len(f) && f[j] == '*' {
			v, err := next(4)
			if err != nil {
				return "", err
			}
			width = int(int32(v))
			if width < 0 {
				flags += "-"
				width = -width
			}
			j++
		} else {
			for j < len(f) && f[j] >= '0' && f[j] <= '9' {
				width = max(width, 0)*10 + int(f[j]-'0')
				j++
			}
		}
		if j < len(f) && f[j] == '.' {
			j++
			prec = 0
			if j < len(f) && f[j] == '*' {
				v, err := next(4)
				if err != nil {
					return "", err
				}
				prec = int(int32(v))
				if prec < 0 {
					prec = -1
				}
				j++
			} else {
				for j < len(f) && f[j] >= '0' && f[j] <= '9' {
					prec = prec*10 + int(f[j]-'0')
					j++
				}
			}
		}
		length := ""
		for j < len(f) && strings.IndexByte("hljztL", f[j]) >= 0 {
			length += string(f[j])
			j++
		}
		if j >= len(f) {
			b.WriteString(f[i:])
			break
		}
		conv := f[j]
		i = j
		size := 4
		switch length {
		case "ll", "j":
			size = 8
		}
		var s string
		switch conv {
		case '%':
			b.WriteByte('%')
			continue
		case 'd', 'i':
			v, err := next(size)
			if err != nil {
				return "", err
			}
			var n int64
			switch {
			case size == 8:
				n = int64(v)
			case length == "hh":
				n = int64(int8(v))
			case length == "h":
				n = int64(int16(v))
			default:
				n = int64(int32(v))
			}
			s = cInt(n < 0, uint64(abs64(n)), 10, flags, width, prec, false)
		case 'u', 'x', 'X', 'o':
			v, err := next(size)
			if err != nil {
				return "", err
			}
			switch {
			case size == 8:
			case length == "hh":
				v = uint64(uint8(v))
			case length == "h":
				v = uint64(uint16(v))
			default:
				v = uint64(uint32(v))
			}
			base := 10
			switch conv {
			case 'x', 'X':
				base = 16
			case 'o':
				base = 8
			}
			s = cInt(false, v, base, flags, width, prec, false)
			if conv == 'X' {
				s = strings.ToUpper(s)
			}
		case 'p':
			v, err := next(4)
			if err != nil {
				return "", err
			}
			if v == 0 {
				s = pad("(nil)", flags, width)
			} else {
				s = cInt(false, v, 16, flags+"#", width, prec, true)
			}
		case 'c':
			v, err := next(4)
			if err != nil {
				return "", err
			}
			s = pad(string([]byte{byte(v)}), flags, width)
		case 's':
			word := off / 4
			v, err := next(4)
			if err != nil {
				return "", err
			}
			t, err := str(word, uint32(v))
			if err != nil {
				return "", err
			}
			if prec >= 0 && prec < len(t) {
				t = t[:prec]
			}
			s = pad(t, flags, width)
		case 'f', 'F', 'e', 'E', 'g', 'G', 'a', 'A':
			if length == "L" {
				return "", fmt.Errorf("format %q: long double is not decoded", f)
			}
			v, err := next(8)
			if err != nil {
				return "", err
			}
			s = cFloat(math.Float64frombits(v), conv, flags, width, prec)
		case 'n':
			if _, err := next(4); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("format %q: conversion %%%c is not decoded", f, conv)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

func abs64(n int64) uint64 {
	if n < 0 {
		return uint64(-n)
	}
	return uint64(n)
}

// cInt formats an integer as Zephyr's cbprintf does.
func cInt(neg bool, v uint64, base int, flags string, width, prec int, ptr bool) string {
	// Zephyr's cbprintf prints 0 for %.0d of 0 (C prints nothing): the
	// console is the reference.
	digits := strconv.FormatUint(v, base)
	if prec > len(digits) {
		digits = strings.Repeat("0", prec-len(digits)) + digits
	}
	prefix := ""
	switch {
	case neg:
		prefix = "-"
	case strings.Contains(flags, "+") && base == 10:
		prefix = "+"
	case strings.Contains(flags, " ") && base == 10:
		prefix = " "
	}
	if strings.Contains(flags, "#") {
		switch {
		case base == 16 && (v != 0 || ptr):
			prefix += "0x"
		case base == 8 && !strings.HasPrefix(digits, "0"):
			digits = "0" + digits
		}
	}
	if strings.Contains(flags, "0") && !strings.Contains(flags, "-") && prec < 0 && width > len(prefix)+len(digits) {
		digits = strings.Repeat("0", width-len(prefix)-len(digits)) + digits
	}
	return pad(prefix+digits, flags, width)
}

func pad(s, flags string, width int) string {
	if width <= len(s) {
		return s
	}
	if strings.Contains(flags, "-") {
		return s + strings.Repeat(" ", width-len(s))
	}
	return strings.Repeat(" ", width-len(s)) + s
}

// cFloat formats a double as C's printf does (finite values through Go's
// strconv, which rounds the same way; inf and nan spelled as C does).
func cFloat(x float64, conv byte, flags string, width, prec int) string {
	lower := conv >= 'a'
	var s string
	switch {
	case math.IsInf(x, 0) || math.IsNaN(x):
		s = "inf"
		if math.IsNaN(x) {
			s = "nan"
		}
		if !lower {
			s = strings.ToUpper(s)
		}
		if math.Signbit(x) {
			s = "-" + s
		}
		return pad(s, strings.ReplaceAll(flags, "0", ""), width)
	}
	if prec < 0 {
		prec = 6
	}
	verb := strings.ToLower(string(conv))
	if verb == "a" {
		s = strconv.FormatFloat(x, 'x', prec, 64)
	} else {
		var f strings.Builder
		f.WriteByte('%')
		for _, c := range "+ #0-" {
			if strings.ContainsRune(flags, c) {
				f.WriteRune(c)
			}
		}
		if width >= 0 {
			f.WriteString(strconv.Itoa(width))
		}
		f.WriteString("." + strconv.Itoa(prec) + verb)
		s = fmt.Sprintf(f.String(), x)
		if !lower {
			s = strings.ToUpper(s)
		}
		return s
	}
	if !lower {
		s = strings.ToUpper(s)
	}
	return pad(s, flags, width)
}

// renderZ prints a message as Zephyr's log_output does on a console with
// the default flags (timestamp, level; no colours) and LF line ends:
// "[hh:mm:ss.mmm,uuu] <lvl> module: text", a hexdump's lines indented
// under the text; printk text (level "raw") as it is.
func renderZ(e Entry, zb ZephyrBuffer) string {
	if e.Level == "raw" {
		return e.Text
	}
	var p strings.Builder
	if zb.Freq != 0 && zb.Div != 0 {
		// log_output.c's arithmetic, in its 32-bit types.
		ts := e.Timestamp / uint64(zb.Div)
		total := ts / uint64(zb.Freq)
		sec := uint32(total)
		hours := sec / 3600
		sec -= hours * 3600
		mins := sec / 60
		sec -= mins * 60
		rem := uint32(ts % uint64(zb.Freq))
		ms := (rem * 1000) / zb.Freq
		us := (1000 * (rem*1000 - ms*zb.Freq)) / zb.Freq
		fmt.Fprintf(&p, "[%02d:%02d:%02d.%03d,%03d] ", hours, mins, sec, ms, us)
	} else {
		fmt.Fprintf(&p, "[%08d] ", e.Timestamp)
	}
	fmt.Fprintf(&p, "<%s> ", e.Level)
	if e.Thread != "" {
		n := e.ThreadName
		if n == "" {
			n = "?" + e.Thread // the name is not in the dump
		}
		fmt.Fprintf(&p, "[%s] ", n)
	}
	if e.Source != "" {
		fmt.Fprintf(&p, "%s: ", e.Source)
	}
	prefix := p.Len()
	var b strings.Builder
	b.WriteString(p.String())
	b.WriteString(e.Text)
	data, _ := hex.DecodeString(e.Data)
	for k := 0; k < len(data); k += 16 {
		line := data[k:min(k+16, len(data))]
		b.WriteString("\n" + strings.Repeat(" ", prefix))
		for i := 0; i < 16; i++ {
			if i > 0 && i%8 == 0 {
				b.WriteByte(' ')
			}
			if i < len(line) {
				fmt.Fprintf(&b, "%02x ", line[i])
			} else {
				b.WriteString("   ")
			}
		}
		b.WriteByte('|')
		for i := 0; i < 16; i++ {
			if i > 0 && i%8 == 0 {
				b.WriteByte(' ')
			}
			switch {
			case i >= len(line):
				b.WriteByte(' ')
			case line[i] >= 0x20 && line[i] < 0x7f:
				b.WriteByte(line[i])
			default:
				b.WriteByte('.')
			}
		}
	}
	b.WriteByte('\n')
	return b.String()
}
