package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// An emulated dump carries the ELF's GNU build ID (issue 23, item 15), so
// that --symbols finds its ELF by build ID: the store holds two ELFs with
// the same code and data that differ only in their build ID, which
// content pairing cannot tell apart.
func TestEmulateRecordsBuildID(t *testing.T) {
	skipWithoutEmulator(t)
	data, err := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build/gcc-m3-O2.elf"))
	if err != nil {
		t.Fatal(err)
	}
	// The note: namesz 4, descsz 20, type 3, "GNU\0", then the ID.
	hdr, _ := hex.DecodeString("040000001400000003000000474e5500")
	i := bytes.Index(data, hdr)
	if i < 0 {
		t.Fatal("no GNU build-id note in the sample")
	}
	other := bytes.Clone(data)
	other[i+len(hdr)+19] ^= 0xff
	store := t.TempDir()
	a, b := filepath.Join(store, "a.elf"), filepath.Join(store, "b.elf")
	if err := os.WriteFile(a, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, other, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, elf := range []string{a, b} {
		f, err := elfsym.Open(elf)
		if err != nil {
			t.Fatal(err)
		}
		id := f.BuildID()
		f.Close()
		dump := filepath.Join(t.TempDir(), "d.json")
		if _, errOut, code := run(t, "", "emulate", "--elf", elf, "--set", "crash_scenario=1", "-o", dump); code != 0 {
			t.Fatalf("emulate: exit %d: %s", code, errOut)
		}
		d, err := crashdump.Load(dump)
		if err != nil {
			t.Fatal(err)
		}
		if d.BuildID != id {
			t.Errorf("%s: dump build_id %q, want the ELF's %q", filepath.Base(elf), d.BuildID, id)
		}
		out, errOut, code := run(t, "", "analyze", "--format", "json", "--symbols", store, dump)
		if code != 0 {
			t.Fatalf("analyze --symbols: exit %d: %s", code, errOut)
		}
		var r struct {
			ELF struct {
				BuildID string `json:"build_id"`
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.ELF.BuildID != id {
			t.Errorf("%s: analyze --symbols chose the ELF with build ID %s, want %s", filepath.Base(elf), r.ELF.BuildID, id)
		}
	}
}
