package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fleetIDs are the build IDs of firmware-samples/buildid/build (readelf -n).
var fleetIDs = map[string]string{
	"gcc-m3-O2":    "57dac794fb05f6051e02302940eb03bbd758fb12",
	"gcc-m3-O2-fp": "c86f05c5f989296d2d3988cf4cb8b72153d448ac",
	"gcc-m3-Os":    "61824535e2bf9761c4ce2b8870ec5602a41a32c6",
}

// fleetBuild is the build a fixtures/fleet dump came from.
func fleetBuild(dump string) string {
	base := filepath.Base(dump)
	best := ""
	for b := range fleetIDs {
		if strings.HasPrefix(base, b+"-") && len(b) > len(best) {
			best = b
		}
	}
	return best
}

// A fleet of dumps from three firmware versions, some carrying their
// build ID and some not, decoded with --symbols: every dump with its own
// ELF, from a directory of ELFs and from a .build-id tree; the summary
// puts the same crash of the three versions in one bucket and lists the
// three build IDs.
func TestAnalyzeSymbolStore(t *testing.T) {
	tree := t.TempDir()
	for b, id := range fleetIDs {
		data, err := os.ReadFile(filepath.Join(repo, "firmware-samples/buildid/build", b+".elf"))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(tree, ".build-id", id[:2], id[2:]+".debug")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, store := range []string{filepath.Join(repo, "firmware-samples/buildid/build"), tree} {
		out, errOut, code := run(t, "", "analyze", "--format", "jsonl", "--symbols", store, filepath.Join(repo, "fixtures/fleet"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 9 {
			t.Fatalf("%d reports, want 9", len(lines))
		}
		for _, l := range lines {
			var r struct {
				Dump string
				ELF  struct {
					BuildID string `json:"build_id"`
				}
				Pairing struct{ Verdict string }
				Frames  []struct{ Function string }
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			b := fleetBuild(r.Dump)
			if r.ELF.BuildID != fleetIDs[b] || r.Pairing.Verdict == "mismatch" || len(r.Frames) < 4 {
				t.Errorf("%s (from %s) decoded with build %s, pairing %s", r.Dump, b, r.ELF.BuildID, r.Pairing.Verdict)
			}
		}
		out, _, code = run(t, "", "analyze", "--summary", "--format", "json", "--symbols", store, filepath.Join(repo, "fixtures/fleet"))
		var s struct {
			Buckets []struct {
				Count    int
				BuildIDs []string `json:"build_ids"`
			}
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil || code != 0 {
			t.Fatalf("summary: %v %d", err, code)
		}
		if len(s.Buckets) != 3 {
			t.Errorf("%d buckets, want 3 (one per crash, across versions)", len(s.Buckets))
		}
		for _, b := range s.Buckets {
			ids := slices.Clone(b.BuildIDs)
			slices.Sort(ids)
			if b.Count != 3 || len(ids) != 3 {
				t.Errorf("bucket of %d dumps seen in %v", b.Count, ids)
			}
		}
	}
	// Usage: --symbols and --elf together, or a missing directory.
	if _, _, code := run(t, "", "analyze", "--symbols", tree, "--elf", "x.elf", "d.json"); code != ExitUsage {
		t.Errorf("--symbols with --elf: exit %d", code)
	}
	if _, errOut, code := run(t, "", "analyze", "--symbols", filepath.Join(tree, "nope"), "d.json"); code != ExitUsage || !strings.Contains(errOut, "--symbols") {
		t.Errorf("missing directory: exit %d: %s", code, errOut)
	}
}

// A dump no ELF of the store pairs with is reported, not decoded with a
// wrong ELF.
func TestAnalyzeSymbolStoreNoPair(t *testing.T) {
	_, errOut, code := run(t, "", "analyze", "--symbols", filepath.Join(repo, "firmware-samples/buildid/build"), filepath.Join(repo, "fixtures/qemu/clang-m4f-O2-udf.json"))
	if code != ExitInput || !strings.Contains(errOut, "pairs with the dump") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
