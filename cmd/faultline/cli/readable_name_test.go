package cli

import "testing"

// TestReadableName: the emulate summary names functions as analyze does,
// C++ and both Rust manglings included (a legacy identifier starting with
// "__" keeps both underscores).
func TestReadableName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"main", "main"},
		{"_Z8div_zeroi", "div_zero(int)"},
		{"_ZN18__cortex_m_rt_main17h0123456789abcdefE", "__cortex_m_rt_main"},
		{"_RNvCs1234_7mycrate4main", "mycrate::main"},
	} {
		if got := readableName(tc.in); got != tc.want {
			t.Errorf("readableName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
