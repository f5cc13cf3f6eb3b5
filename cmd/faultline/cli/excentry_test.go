package cli

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// TestAnalyzeExcEntryCorpus runs analyze on every QEMU+GDB fixture of the
// exception-entry corpus (firmware-samples/excentry, fixtures/qemu-excentry)
// and compares every frame with GDB's backtrace, PC for PC, exception
// frames at the same places:
//
//   - vector_unmapped: an interrupt whose vector points at unmapped memory
//     faults on the handler's first fetch; the handler ran nothing, its
//     exception frame is at SP, and the walk must continue through it into
//     the interrupted code (auto and every strategy that the frame-0 rules
//     reach, stackscan included);
//   - svc_nested: a fault two calls deep inside SVC_Handler: the frame the
//     SVC interrupted is looked up at its svc (only frame 0 holds the
//     xPSR, so IPSR must carry across the call frames), which is the last
//     instruction of its noreturn function: the frame is named after the
//     function holding the svc (read from the ELF's code bytes), not the
//     gap after it;
//   - big_frame_ffff: a thread whose large frame holds a local 0xFFFFFFFF
//     far below its saved return address; stackscan alone must not call
//     that word the end of the stack.
func TestAnalyzeExcEntryCorpus(t *testing.T) {
	dumps, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-excentry/*.json"))
	if len(dumps) == 0 {
		t.Fatal("no fixtures in fixtures/qemu-excentry")
	}
	// GDB's backtrace goes wrong after the frame the SVC interrupted in
	// these: it looks that frame up at its PC, in the gap after the
	// noreturn svc_request, so it misses svc_request's push {r7} and
	// unwinds its caller's caller from a stack pointer 4 bytes off (a RAM
	// address as PC). GDB's frames are compared up to that point; the
	// calls above it are read from the ELF: run_scenario, main and
	// Reset_Handler, each after its BL.
	gdbLost := map[string]int{"gcc-m3-O0-svc_nested": 1}
	seen := map[string]int{}
	for _, dump := range dumps {
		base := strings.TrimSuffix(filepath.Base(dump), ".json")
		i := strings.Index(base, "-O")
		j := strings.Index(base[i+1:], "-")
		build, scenario := base[:i+1+j], base[i+1+j+1:]
		seen[scenario]++
		t.Run(base, func(t *testing.T) {
			elf, err := elfsym.Open(filepath.Join(repo, "firmware-samples/excentry/build", build+".elf"))
			if err != nil {
				t.Fatal(err)
			}
			defer elf.Close()
			d, err := crashdump.Load(dump)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(dump)
			if err != nil {
				t.Fatal(err)
			}
			var fx struct {
				Truth struct {
					Frames []gdbFrame `json:"frames"`
				} `json:"truth"`
			}
			if err := json.Unmarshal(raw, &fx); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, f := range fx.Truth.Frames {
				if f.Kind == "exception" {
					want = append(want, "<exception>")
					continue
				}
				pc, err := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
				if err != nil {
					t.Fatalf("truth pc %q", f.PC)
				}
				want = append(want, fmt.Sprintf("%#x", pc&^1))
			}
			unwinders := []string{"auto"}
			switch scenario {
			case "vector_unmapped", "big_frame_ffff":
				unwinders = append(unwinders, "stackscan")
			}
			for _, u := range unwinders {
				r, err := analysis.Analyze(elf, d, analysis.Options{Unwinder: u, MaxFrames: 64})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, f := range r.Frames {
					switch f.Kind {
					case "inlined":
						continue
					case "exception":
						got = append(got, "<exception>")
					default:
						pc, _ := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
						got = append(got, fmt.Sprintf("%#x", pc&^1))
					}
				}
				want := want
				if n := gdbLost[base]; n > 0 {
					want = want[:len(want)-n]
					if len(got) <= len(want) || !strings.HasPrefix(r.Stop, "reached the reset handler") {
						t.Errorf("%s: want the walk past GDB's %d good frames to the reset handler, got %v (%s)", u, len(want), got, r.Stop)
					} else {
						got = got[:len(want)]
					}
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("%s: frames\n  %v\nGDB\n  %v\nstop: %s", u, got, want, r.Stop)
				}
				if scenario == "big_frame_ffff" && u == "stackscan" && strings.HasPrefix(r.Stop, "reached the end of the stack") {
					t.Errorf("stackscan claims the end of the stack on a thread stack whose top is unknown: %s", r.Stop)
				}
				if u != "auto" {
					continue
				}
				switch scenario {
				case "vector_unmapped":
					checkHandlerRanNothing(t, elf, r)
				case "svc_nested":
					checkAfterSVC(t, elf, r)
				}
			}
		})
	}
	for _, s := range []string{"vector_unmapped", "svc_nested", "big_frame_ffff"} {
		if seen[s] == 0 {
			t.Errorf("no fixture of scenario %s", s)
		}
	}
}

// checkHandlerRanNothing: the frame whose PC is the vector's target is
// high confidence (the vector table holds that PC) and says why.
func checkHandlerRanNothing(t *testing.T, elf *elfsym.File, r *report.Report) {
	t.Helper()
	for k, f := range r.Frames {
		if f.PC != "0x30000000" {
			continue
		}
		if f.Confidence != "high" || !strings.Contains(f.Note, "ran nothing") || k+1 >= len(r.Frames) || r.Frames[k+1].Kind != "exception" {
			t.Errorf("frame %d %+v: want high confidence, a note that the handler ran nothing, and its exception frame next", k, f)
		}
		return
	}
	t.Errorf("no frame at the unmapped handler 0x30000000")
}

// checkAfterSVC: the frame after the second exception frame returns past
// an svc instruction (read from the ELF); it must be named after the
// function that holds the svc.
func checkAfterSVC(t *testing.T, elf *elfsym.File, r *report.Report) {
	t.Helper()
	exc := 0
	for k, f := range r.Frames {
		if f.Kind == "exception" {
			exc++
			continue
		}
		if exc != 2 {
			continue
		}
		pc, _ := strconv.ParseUint(strings.TrimPrefix(f.PC, "0x"), 16, 32)
		h, ok := codeHalfword(elf, uint32(pc)-2)
		if !ok || h&0xFF00 != 0xDF00 {
			t.Fatalf("frame %d: the instruction before 0x%x is not an svc", k, pc)
		}
		fn, ok := elf.FuncAt(uint32(pc) - 2)
		if !ok || f.Function != fn.Name || !strings.Contains(f.Note, "svc") {
			t.Errorf("frame %d %+v: want function %q (holding the svc at 0x%x) and a note", k, f, fn.Name, pc-2)
		}
		return
	}
	t.Errorf("no frame after the SVC's exception frame")
}

// codeHalfword reads a halfword of the ELF's loadable segments.
func codeHalfword(elf *elfsym.File, addr uint32) (uint16, bool) {
	for _, r := range elf.Segments() {
		if addr >= r.Addr && uint64(addr)+2 <= uint64(r.Addr)+uint64(len(r.Data)) {
			return binary.LittleEndian.Uint16(r.Data[addr-r.Addr:]), true
		}
	}
	return 0, false
}
