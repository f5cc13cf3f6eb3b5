package crashdump

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A manifest that names itself as a region file, by name or through a
// hard link, is refused: its JSON is no memory image (issue 23).
func TestManifestIsNotItsOwnRegion(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "self.json")
	os.WriteFile(self, []byte(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000100"}, "memory": [{"address": "0x20000000", "file": "self.json"}]}`), 0o644)
	hard := filepath.Join(dir, "hard.json")
	os.WriteFile(hard, []byte(`{"schema": "faultline.dump/1", "registers": {"pc": "0x100", "sp": "0x20000100"}, "memory": [{"address": "0x20000000", "file": "alias.bin"}]}`), 0o644)
	if err := os.Link(hard, filepath.Join(dir, "alias.bin")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{self, hard} {
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), "it is the manifest itself") || !strings.Contains(err.Error(), p+": memory[0].file") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
