package analysis

import (
	"strings"

	"github.com/faultline-dev/faultline/elfsym"
)

// demangleText rewrites every mangled symbol name in s (a word starting
// with _Z or _R, as the unwinders' notes and stop reasons quote raw ELF
// symbols) into its readable form, the way frames name functions.
func demangleText(elf *elfsym.File, s string) string {
	if elf == nil || (!strings.Contains(s, "_Z") && !strings.Contains(s, "_R")) {
		return s
	}
	var b strings.Builder
	i := 0
	for i < len(s) {
		if s[i] == '_' && i+1 < len(s) && (s[i+1] == 'Z' || s[i+1] == 'R') && (i == 0 || !symbolByte(s[i-1])) {
			j := i
			for j < len(s) && symbolByte(s[j]) {
				j++
			}
			b.WriteString(elf.Demangled(s[i:j]))
			i = j
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// symbolByte reports whether c may appear in an ELF symbol name as the
// notes quote it.
func symbolByte(c byte) bool {
	return c == '_' || c == '.' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
