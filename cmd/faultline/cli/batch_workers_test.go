package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis/report"
)

// The RTOS batch gives the same lines with one worker and with several
// (the ELF's caches shared between them; run it with -race), and each line
// is encoding/json's encoding of the report.
func TestRTOSBatchWorkers(t *testing.T) {
	dir := t.TempDir()
	rtosBatchDir(t, dir, 24)
	var outs []string
	for _, j := range []string{"1", "4"} {
		out, errs, code := run(t, "", "analyze", "-j", j, "--format", "jsonl", "--elf", rtosBatchELF(), dir)
		if code != 0 {
			t.Fatalf("-j %s: exit %d: %s", j, code, errs)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] {
		t.Fatal("-j 1 and -j 4 differ")
	}
	lines := strings.Split(strings.TrimSuffix(outs[0], "\n"), "\n")
	if len(lines) != 24 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var r report.Report
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Threads) != 13 {
			t.Fatalf("%s: %d threads", r.Dump, len(r.Threads))
		}
	}
}

// The search keeps what it read of each dump file for its load, within
// inputCacheMax, and forgets each as it is taken.
func TestInputContents(t *testing.T) {
	dir := t.TempDir()
	rtosBatchDir(t, dir, 5)
	in := expandInputs([]string{dir})
	if len(in.paths) != 5 || len(in.contents) != 5 || in.cached <= 0 || in.cached > inputCacheMax {
		t.Fatalf("%d paths, %d contents, %d bytes", len(in.paths), len(in.contents), in.cached)
	}
	for _, p := range in.paths {
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := in.take(p); !bytes.Equal(got, want) {
			t.Errorf("%s: kept %d bytes, the file has %d", p, len(got), len(want))
		}
		if in.take(p) != nil {
			t.Errorf("%s: taken twice", p)
		}
	}
}
