package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseValue parses a --set value: a number as ParseNumber reads it, or a
// negative one ("-1", "-0x10"), returned as its 64-bit two's complement
// (the emulator stores the low bytes the symbol holds).
func ParseValue(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(t, "-"); ok {
		v, err := ParseNumber(rest, 64)
		if err != nil {
			return 0, err
		}
		if v > 1<<63 {
			return 0, fmt.Errorf("out of range")
		}
		return -v, nil
	}
	return ParseNumber(t, 64)
}

// ParseNumber parses a decimal, 0x hex, 0o octal or 0b binary number that
// fits in bits bits; k/K, m/M suffixes multiply by 1024, 1024*1024 (for
// --map sizes).
func ParseNumber(s string, bits int) (uint64, error) {
	s = strings.TrimSpace(s)
	mul := uint64(1)
	if n := len(s); n > 1 && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		switch s[n-1] {
		case 'k', 'K':
			mul, s = 1<<10, s[:n-1]
		case 'm', 'M':
			mul, s = 1<<20, s[:n-1]
		}
	}
	v, err := strconv.ParseUint(strings.ReplaceAll(s, "_", ""), 0, 64)
	if err != nil {
		return 0, fmt.Errorf("not a number (want decimal, 0x hex, 0o octal or 0b binary)")
	}
	if v != 0 && v*mul/mul != v {
		return 0, fmt.Errorf("out of range")
	}
	v *= mul
	if bits < 64 && v >= 1<<bits {
		return 0, fmt.Errorf("out of range")
	}
	return v, nil
}
