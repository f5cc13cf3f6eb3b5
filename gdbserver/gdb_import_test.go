package gdbserver_test

import (
	"context"
	"encoding/json"
	"github.com/faultline-dev/faultline/internal/testtool"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/gdbserver/gdbtest"
	"github.com/faultline-dev/faultline/unwinders"
)

// importedCase is a dump in a field format (fixtures/import: CrashCatcher,
// Zephyr, Memfault made by the independent generator; fixtures/capture:
// what the device-side capture handler emitted in QEMU) with the QEMU+GDB
// oracle dump of the same crash, whose truth it is checked against.
type importedCase struct {
	name, dump, elf, oracle string
}

func importedCases(t *testing.T) []importedCase {
	var cases []importedCase
	imp, err := filepath.Glob(filepath.Join(repoRoot, "fixtures", "import", "*"))
	if err != nil {
		t.Fatal(err)
	}
	formats := []string{".crashcatcher.bin", ".crashcatcher-v2.bin", ".crashcatcher.txt", ".zephyr.bin", ".zephyr.log", ".memfault.bin"}
	for _, p := range imp {
		base := filepath.Base(p)
		for _, suf := range formats {
			if src, ok := strings.CutSuffix(base, suf); ok {
				build := src[:strings.LastIndex(src, "-")]
				cases = append(cases, importedCase{base, p,
					filepath.Join(repoRoot, "firmware-samples", "build", build+".elf"),
					filepath.Join(repoRoot, "fixtures", "qemu", src+".json")})
			}
		}
	}
	capt, err := filepath.Glob(filepath.Join(repoRoot, "fixtures", "capture", "*.crashcatcher*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range capt {
		base := filepath.Base(p)
		src := base[:strings.Index(base, ".crashcatcher")]
		build := src[:strings.LastIndex(src, "-")]
		cases = append(cases, importedCase{base, p,
			filepath.Join(repoRoot, "firmware-samples", "capture", "build", build+".elf"),
			filepath.Join(repoRoot, "fixtures", "capture", "oracle", src+".json")})
	}
	return cases
}

// preExceptionTruth is the oracle's truth from the frame the first
// exception interrupted outwards: a field dump holds the state a crash
// handler reconstructed from before the exception, so GDB's backtrace of
// it starts at the faulting function.
func preExceptionTruth(t *testing.T, oracle string) []gdbtest.TruthFrame {
	data, err := os.ReadFile(oracle)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Truth struct {
			Frames []gdbtest.TruthFrame `json:"frames"`
		} `json:"truth"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", oracle, err)
	}
	for i, f := range doc.Truth.Frames {
		if f.Kind == "exception" {
			return doc.Truth.Frames[i+1:]
		}
	}
	t.Fatalf("%s: the truth has no exception frame", oracle)
	return nil
}

// TestGDBImportedDumps serves every imported and captured field-format dump
// to the real gdb-multiarch: GDB's bt through faultline must list the QEMU
// oracle's functions from the faulting frame outwards (issue: "GDB's bt
// through our server lists the same functions as the QEMU+GDB oracle"),
// and info registers the imported registers.
func TestGDBImportedDumps(t *testing.T) {
	if !gdbtest.Available() {
		testtool.Missing(t, gdbtest.GDB+" is not installed (CI installs it): skipping the GDB acceptance test")
	}
	cases := importedCases(t)
	if len(cases) < 40 {
		t.Fatalf("found %d imported/captured dumps, want the 18 of fixtures/import and the 32 of fixtures/capture", len(cases))
	}
	var matched atomic.Int32
	t.Run("dumps", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				truth := preExceptionTruth(t, c.oracle)
				addr, done := serve(t, gdbtest.Fixture{Name: c.name, Dump: c.dump, ELF: c.elf}, 1)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				out, err := gdbtest.Run(ctx, c.elf, addr)
				if err != nil {
					t.Fatal(err)
				}
				if err := gdbtest.Compare(truth, gdbtest.ParseBacktrace(out.Backtrace)); err != nil {
					t.Fatalf("%v\n%s", err, out.Backtrace)
				}
				// info registers shows the dump's registers, and
				// <unavailable> for those the format does not carry.
				d, err := crashdump.Load(c.dump)
				if err != nil {
					t.Fatal(err)
				}
				regs := map[string]uint32{}
				d.Regs.Each(func(r unwinders.Reg, v uint32) { regs[strings.ToLower(r.String())] = v })
				if err := gdbtest.CheckRegisters(regs, gdbtest.Registers(out.Registers), gdbtest.CoreRegisters()); err != nil {
					t.Error(err)
				}
				if err := <-done; err != nil {
					t.Errorf("server: %v", err)
				}
				matched.Add(1)
			})
		}
	})
	t.Logf("%d of %d field-format dumps: GDB's backtrace through faultline matches the QEMU+GDB oracle", matched.Load(), len(cases))
}
