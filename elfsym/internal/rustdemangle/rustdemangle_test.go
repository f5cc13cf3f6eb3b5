package rustdemangle

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

var (
	// c++filt prints v0 crate disambiguators ("core[c1f1a4ba060b9bfa]")
	// and the types of constant generic arguments ("10: usize"), which
	// rustfilt leaves out by default, and drops a ".0" suffix that
	// rustfilt keeps; llvm-cxxfilt prints that suffix as " (.0)".
	crateHash  = regexp.MustCompile(`\[[0-9a-f]+\]`)
	constType  = regexp.MustCompile(`(\d): [iu](8|16|32|64|128|size)\b`)
	llvmSuffix = regexp.MustCompile(` \((\.[0-9A-Za-z_.$]+)\)$`)
	dotSuffix  = regexp.MustCompile(`\.[0-9A-Za-z_.$]+$`)
	// Legacy: the hash element that rustfilt drops by default.
	legacyHash = regexp.MustCompile(`::h[0-9a-f]{16}$`)
)

// TestV0Oracle: every v0 symbol of testdata/v0.txt (rustc 1.95 output, see
// gen.sh) demangles as llvm-cxxfilt and c++filt print it, up to their
// documented differences from rustfilt's default output.
func TestV0Oracle(t *testing.T) {
	syms := lines(t, "testdata/v0.txt")
	gnu := lines(t, "testdata/v0.cxxfilt")
	llvm := lines(t, "testdata/v0.llvm-cxxfilt")
	if len(gnu) != len(syms) || len(llvm) != len(syms) {
		t.Fatal("oracle files out of step with v0.txt: run testdata/gen.sh")
	}
	for i, s := range syms {
		got, ok := Demangle(s)
		if !ok {
			t.Errorf("%s: not demangled; llvm-cxxfilt: %s", s, llvm[i])
			continue
		}
		if want := llvmSuffix.ReplaceAllString(llvm[i], "$1"); got != want {
			t.Errorf("%s:\n got %s\nllvm-cxxfilt %s", s, got, want)
		}
		g := constType.ReplaceAllString(crateHash.ReplaceAllString(gnu[i], ""), "$1")
		if strings.HasPrefix(s, "_R") && dotSuffix.MatchString(s) {
			g += dotSuffix.FindString(s)
		}
		if got != g {
			t.Errorf("%s:\n got %s\n c++filt %s", s, got, g)
		}
	}
}

// TestLegacyOracle: the legacy symbols of testdata/legacy.txt demangle as
// c++filt prints them without the hash, and as llvm-cxxfilt (which reads
// them as C++ and decodes no escapes) where an element has no escape.
func TestLegacyOracle(t *testing.T) {
	syms := lines(t, "testdata/legacy.txt")
	gnu := lines(t, "testdata/legacy.cxxfilt")
	llvm := lines(t, "testdata/legacy.llvm-cxxfilt")
	if len(gnu) != len(syms) || len(llvm) != len(syms) {
		t.Fatal("oracle files out of step with legacy.txt: run testdata/gen.sh")
	}
	for i, s := range syms {
		got, ok := Demangle(s)
		if !ok {
			t.Errorf("%s: not demangled; c++filt: %s", s, gnu[i])
			continue
		}
		if want := legacyHash.ReplaceAllString(strings.TrimSuffix(gnu[i], ".llvm.1234567890"), ""); got != want {
			t.Errorf("%s:\n got %s\n c++filt %s", s, got, want)
		}
		if !strings.Contains(s, "$") {
			l := legacyHash.ReplaceAllString(strings.TrimSuffix(llvm[i], " (.llvm.1234567890)"), "")
			if got != l {
				t.Errorf("%s:\n got %s\nllvm-cxxfilt %s", s, got, l)
			}
		}
	}
}

// TestCases pins the behaviours the issue names and the edges.
func TestCases(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// An identifier starting with "__" keeps both underscores.
		{"_ZN11cortex_m_rt18__cortex_m_rt_main17h4f3a9c1d7e2b6a05E", "cortex_m_rt::__cortex_m_rt_main"},
		// "_$" prefix: the underscore was added by the mangler.
		{"_ZN3app10_$LT$x$GT$17h0123456789abcdefE", "app::<x>"},
		{"_ZN4core3fmt5write17h8f7e6d5c4b3a2918E.llvm.9F3A", "core::fmt::write"},
		{"_RNvCs1234_7mycrate4main", "mycrate::main"},
		{"_RNCNvCs1234_7mycrate4main0", "mycrate::main::{closure#0}"},
		{"_RNCNvCs1234_7mycrate4mains_0", "mycrate::main::{closure#1}"},
		{"_RINvCs1234_7mycrate3fooKj5_E", "mycrate::foo::<5>"},
		{"_RINvCs1234_7mycrate3fooKb1_E", "mycrate::foo::<true>"},
		{"_RINvCs1234_7mycrate3fooKc61_E", "mycrate::foo::<'a'>"},
		{"_RINvCs1234_7mycrate3fooKan5_E", "mycrate::foo::<-5>"},
		{"_RINvCs1234_7mycrate3fooFUKCcEuE", `mycrate::foo::<unsafe extern "C" fn(char)>`},
		{"_RINvCs1234_7mycrate3fooRL_eE", "mycrate::foo::<&str>"},
		{"_RINvCs1234_7mycrate3fooTaEE", "mycrate::foo::<(i8,)>"},
	} {
		got, ok := Demangle(c.in)
		if !ok || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.in, got, ok, c.want)
		}
	}
	// Not Rust: C++ without a hash element, truncated or hostile input.
	for _, s := range []string{"_ZN3foo3barE", "_ZN3foo", "_R", "_RNvC", "_RB_", "_RNvCs1234_7mycrate4mainX", "main",
		"_R" + strings.Repeat("A", 100000), "_RINvCs1234_7mycrate3fooKj" + strings.Repeat("f", 40)} {
		if got, ok := Demangle(s); ok {
			t.Errorf("%q: demangled to %q, want not Rust", s, got)
		}
	}
}

func FuzzDemangle(f *testing.F) {
	for _, s := range []string{"_RNvCs1234_7mycrate4main", "_ZN11cortex_m_rt18__cortex_m_rt_main17h4f3a9c1d7e2b6a05E", "_RINvCs_3foo3barB4_E"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		Demangle(s) // must not panic or hang
	})
}
