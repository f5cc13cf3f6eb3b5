package crashdump

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// CrashCatcher hex dumps behind log prefixes (a timestamp that changes on
// every line, a level, a tag) decode to the same dump as without them,
// with the same warnings.
func TestCrashCatcherHexLogPrefix(t *testing.T) {
	paths, _ := filepath.Glob("../fixtures/capture/*.crashcatcher.hex")
	if len(paths) < 10 {
		t.Fatalf("%d capture fixtures", len(paths))
	}
	for _, p := range paths {
		plain, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for i, l := range bytes.SplitAfter(plain, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			fmt.Fprintf(&b, "[00:%02d:%02d.%03d] <err> crash: %s", i/60%60, i%60, i*7%1000, l)
		}
		want, err := Parse(plain, "plain", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(b.Bytes(), "prefixed", nil)
		if err != nil {
			t.Fatalf("%s with prefixes: %v", p, err)
		}
		if got.Format != want.Format || !got.Regs.Equal(&want.Regs) || got.Fault != want.Fault || len(got.Memory) != len(want.Memory) || !slices.Equal(got.Warnings, want.Warnings) {
			t.Errorf("%s: prefixed dump differs: warnings %q vs %q", p, got.Warnings, want.Warnings)
			continue
		}
		for i := range got.Memory {
			if !bytes.Equal(got.Memory[i].Data, want.Memory[i].Data) {
				t.Errorf("%s: region %d differs", p, i)
			}
		}
	}
}
