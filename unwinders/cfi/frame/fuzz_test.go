package frame_test

import (
	"debug/elf"
	"errors"
	"path/filepath"
	"testing"

	"github.com/faultline-dev/faultline/unwinders/cfi/frame"
)

// FuzzParse decodes random section bytes as .debug_frame and .eh_frame and
// calls every accessor: no panic, no hang, every error a *DecodeError
// wrapping a sentinel, every row inside its FDE. The corpus is seeded with
// the call frame sections of every test ELF and sample firmware.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(testdata, "*.elf"))
	samples, _ := filepath.Glob(filepath.Join(samplesDir, "*.elf"))
	for _, p := range append(paths, samples...) {
		ef, err := elf.Open(p)
		if err != nil {
			f.Fatal(err)
		}
		for _, name := range []string{".debug_frame", ".eh_frame"} {
			if s := ef.Section(name); s != nil {
				data, _ := s.Data()
				f.Add(data, name == ".eh_frame", uint32(s.Addr))
			}
		}
		ef.Close()
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x20, 0, 0, 0, 0, 0, 0, 0}, false, uint32(0))
	f.Fuzz(func(t *testing.T, data []byte, eh bool, addr uint32) {
		kind := frame.DebugFrame
		if eh {
			kind = frame.EHFrame
		}
		s, err := frame.Parse(kind, uint64(addr), data)
		checkErr(t, err)
		if s == nil {
			t.Fatal("nil section")
		}
		for _, c := range s.CIEs {
			_, err := c.InitialRow()
			checkErr(t, err)
		}
		for _, fde := range s.FDEs {
			rows, err := fde.Rows()
			checkErr(t, err)
			for _, r := range rows {
				if r.Loc < fde.Start || r.End > fde.End || r.Loc >= r.End {
					t.Fatalf("%v: row [0x%x, 0x%x)", fde, r.Loc, r.End)
				}
				_ = r.CFA.String()
				for _, rule := range r.Regs {
					_ = rule.String()
				}
			}
			for _, pc := range []uint64{fde.Start, fde.Start + (fde.End-fde.Start)/2, fde.End - 1} {
				if fde.Contains(pc) {
					_, err := fde.RowAt(pc)
					checkErr(t, err)
				}
			}
		}
		ix := frame.NewIndex(s.FDEs, frame.IndexOptions{})
		for _, fde := range ix.FDEs() {
			if got, ok := ix.Lookup(fde.Start); !ok || got != fde {
				t.Fatalf("Lookup(0x%x) = %v", fde.Start, got)
			}
		}
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var de *frame.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%T %v is not a DecodeError", err, err)
	}
	for _, s := range []error{frame.ErrFormat, frame.ErrTruncated, frame.ErrUnsupported, frame.ErrLimit} {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%v wraps no sentinel", err)
}
