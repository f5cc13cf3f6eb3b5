package crashdump

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/crashdump/fault"
)

// fuzzFiles serves every region file the fuzzer names, with content
// derived from the name, except names starting with "missing".
func fuzzFiles(rel string) ([]byte, error) {
	if strings.HasPrefix(rel, "missing") {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrNotExist}
	}
	n := 32 + len(rel)%7
	b := bytes.Repeat([]byte(rel), 1+n/max(len(rel), 1))
	return b[:n], nil
}

// FuzzParse feeds arbitrary manifests to Parse. Errors must be
// *FormatError values naming the file; a dump that parses must encode,
// parse back to the same dump and encode to the same bytes again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	for _, tc := range badCases(f) {
		f.Add([]byte(tc.json))
	}
	for _, p := range qemuFixtures(f) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"schema":"faultline.dump/1","registers":{"s31":1,"FP":"0x7","cpsr":null},"fault":{"SFSR":"0xff"},` +
		`"memory":[{"address":"0xe000ed00","hex":"` + strings.Repeat("ff", 64) + `"},{"address":4294967264,"file":"a/b.bin","size":32}],` +
		`"truth":{"source":"","frames":[{"kind":"normal","line":"0x10"},{"pc":null}],"x":1}}`))
	f.Add([]byte(threadTruthSeed))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data, "fuzz.json", fuzzFiles)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.File != "fuzz.json" || !strings.HasPrefix(err.Error(), "fuzz.json: ") {
				t.Fatalf("error %T %q does not name the file", err, err)
			}
			if fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d past the end (%d bytes): %v", fe.Offset, len(data), err)
			}
			return
		}
		if _, err := d.Image(); err != nil {
			t.Fatalf("Image: %v", err)
		}
		rep := fault.Decode(d.Profile(), &d.Regs, d.Fault)
		_ = rep.String()
		m, files, err := d.encode("fuzz", MaxHexRegion, nil)
		if err != nil {
			t.Fatalf("encode of a parsed dump: %v", err)
		}
		fs := make(map[string][]byte)
		for _, f := range files {
			fs[f.name] = f.data
		}
		d2, err := Parse(m, "fuzz.json", mapFS(fs))
		if err != nil {
			t.Fatalf("parse of the encoded dump: %v\n%s", err, m)
		}
		want := *d
		want.Warnings = nil // the native format does not store them
		sameDump(t, d2, &want)
		m2, _, err := d2.encode("fuzz", MaxHexRegion, nil)
		if err != nil || !bytes.Equal(m, m2) {
			t.Fatalf("second encode differs (%v):\n%s\n%s", err, m, m2)
		}
	})
}

// threadTruthSeed is a manifest with truth.threads (the emulator's
// switched-out RTOS threads), for the fuzz targets.
const threadTruthSeed = `{"schema":"faultline.dump/1","registers":{"pc":"0x60","sp":"0x20003fb8"},` +
	`"truth":{"source":"emulator-shadow-stack","frames":[{"pc":"0x60","function":"HardFault_Handler"},{"kind":"exception"}],` +
	`"threads":[{"frame":"0x20000660","sp":"0x20000680","frames":[{"pc":"0xaf8","function":"rtk_exit_critical"},{"pc":3134}]},` +
	`{"frame":1,"sp":null,"frames":[],"later":[1]}]}}`
