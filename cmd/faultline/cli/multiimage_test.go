package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// multiFrame is a frame of a multi-image fixture's GDB truth
// (fixtures/oracle/capture_multi.py) or of faultline's JSON.
type multiFrame struct {
	PC        string `json:"pc"`
	Function  string `json:"function"`
	Kind      string `json:"kind"`
	Image     string `json:"image"`
	Stack     string `json:"stack"`
	FNCReturn bool   `json:"fnc_return"`
	Inlined   []struct {
		Function string `json:"function"`
	} `json:"inlined"`
	ExcReturn string `json:"exc_return"`
	Method    string `json:"method"`
}

// TestAnalyzeMultiImageCorpus runs `analyze --elf A --elf B` on every
// QEMU+GDB fixture of the two-image samples (firmware-samples/multiimage:
// bootloader + application on mps2-an385; firmware-samples/trustzone:
// Secure + Non-secure on mps2-an505) and compares every frame with GDB's
// backtrace (both symbol files loaded): the same PC, function, inlined
// functions and image for every real frame, exception and FNC_RETURN
// frames at the same places on the same stacks (MSP_NS, MSP_S, the
// Secure stack with the additional state context under a Non-secure
// interrupt). Where GDB itself stops early (return address 0x0), GDB's
// frames are compared and the walk must go on to the reset handler. In the bootloader + application pair
// every frame is found by the CFI of its own image. The pairing is reported per image and
// no call is doubted (BLXNS is a call; no call is checked across images).
func TestAnalyzeMultiImageCorpus(t *testing.T) {
	n := 0
	for _, s := range []struct {
		dir    string
		images []string
	}{
		{"multiimage", []string{"boot", "app"}},
		{"trustzone", []string{"s", "ns"}},
	} {
		dumps, _ := filepath.Glob(filepath.Join(repo, "fixtures/qemu-"+s.dir, "*.json"))
		if len(dumps) < 6 {
			t.Fatalf("%s: %d fixtures, want at least 6", s.dir, len(dumps))
		}
		for _, dump := range dumps {
			n++
			base := strings.TrimSuffix(filepath.Base(dump), ".json")
			k := strings.LastIndex(base, "-")
			build := base[:k]
			t.Run(base, func(t *testing.T) {
				args := []string{"analyze", "--format", "json"}
				var names []string
				for _, im := range s.images {
					p := filepath.Join(repo, "firmware-samples", s.dir, "build", build+"-"+im+".elf")
					args = append(args, "--elf", p)
					names = append(names, filepath.Base(p))
				}
				out, errOut, code := run(t, "", append(args, dump)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, errOut)
				}
				var r struct {
					Frames  []multiFrame `json:"frames"`
					Stop    string       `json:"stop"`
					Pairing struct {
						Verdict  string   `json:"verdict"`
						Evidence []string `json:"evidence"`
					} `json:"pairing"`
					Images []struct {
						Path    string `json:"path"`
						Pairing struct {
							Verdict string `json:"verdict"`
						} `json:"pairing"`
					} `json:"images"`
				}
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				raw, err := os.ReadFile(dump)
				if err != nil {
					t.Fatal(err)
				}
				var fx struct {
					Truth struct {
						Frames []multiFrame `json:"frames"`
						Stop   string       `json:"stop"`
					} `json:"truth"`
				}
				if err := json.Unmarshal(raw, &fx); err != nil {
					t.Fatal(err)
				}
				got := physical(r.Frames)
				want := fx.Truth.Frames
				if len(got) < len(want) {
					t.Fatalf("%d frames, GDB %d:\n%s\nGDB:\n%s\nstop: %s", len(got), len(want), showMulti(got), showMulti(want), r.Stop)
				}
				for i, w := range want {
					g := got[i]
					if msg := sameMultiFrame(g, w); msg != "" {
						t.Errorf("frame %d: %s\n%s\nGDB:\n%s", i, msg, showMulti(got), showMulti(want))
						break
					}
				}
				switch {
				case strings.HasPrefix(fx.Truth.Stop, "end of stack"):
					if len(got) != len(want) || !strings.HasPrefix(r.Stop, "reached the end of the stack") && !strings.HasPrefix(r.Stop, "reached the reset handler") {
						t.Errorf("GDB ends at the reset LR after %d frames; faultline: %d frames, %s", len(want), len(got), r.Stop)
					}
				case strings.HasPrefix(fx.Truth.Stop, "GDB: return address 0x0"):
					if !strings.HasPrefix(r.Stop, "reached the reset handler") || got[len(got)-1].Function != "Reset_Handler" {
						t.Errorf("GDB lost the caller of %s; faultline must go on to the reset handler: %s (%s)", want[len(want)-1].Function, showMulti(got), r.Stop)
					}
				default:
					t.Errorf("unexpected GDB stop %q", fx.Truth.Stop)
				}
				if s.dir == "multiimage" {
					// Every image has DWARF CFI for all its code: each
					// frame is unwound with the CFI of the image that
					// holds it.
					for i, f := range got {
						if f.Method != "registers" && f.Method != "exception" && f.Method != "cfi" {
							t.Errorf("frame %d (%s in %s) found by %s, not by the CFI of its image", i, f.Function, f.Image, f.Method)
						}
					}
				}
				if len(r.Images) != len(names) {
					t.Fatalf("images: %d, want %d", len(r.Images), len(names))
				}
				for i, im := range r.Images {
					if filepath.Base(im.Path) != names[i] || im.Pairing.Verdict == "" || im.Pairing.Verdict == "mismatch" {
						t.Errorf("image %d: %+v", i, im)
					}
				}
				for _, e := range r.Pairing.Evidence {
					if strings.Contains(e, "not confirmed") {
						t.Errorf("pairing doubt: %s", e)
					}
				}
			})
		}
	}
	if n < 12 {
		t.Errorf("%d fixtures", n)
	}
}

// physical folds faultline's inlined frames into the real frame that
// holds them (GDB's truth keeps them as the real frame's "inlined" list).
func physical(frames []multiFrame) []multiFrame {
	var out []multiFrame
	var inl []multiFrame
	for _, f := range frames {
		if f.Kind == "inlined" {
			inl = append(inl, f)
			continue
		}
		for _, x := range inl {
			f.Inlined = append(f.Inlined, struct {
				Function string `json:"function"`
			}{x.Function})
		}
		inl = nil
		out = append(out, f)
	}
	return out
}

func sameMultiFrame(g, w multiFrame) string {
	if w.Kind == "exception" {
		if g.Kind != "exception" {
			return "want an exception frame"
		}
		if w.FNCReturn != (g.ExcReturn == "0xfefffffe" || g.ExcReturn == "0xfeffffff") {
			return "FNC_RETURN differs: " + g.ExcReturn + " vs " + w.PC
		}
		if w.Stack != "" && !strings.EqualFold(w.Stack, g.Stack) {
			return "stack " + g.Stack + ", GDB " + w.Stack
		}
		return ""
	}
	if g.Kind == "exception" || g.Kind == "gap" {
		return "unexpected " + g.Kind + " frame"
	}
	if trimPC(g.PC) != trimPC(w.PC) {
		return "pc " + g.PC + ", GDB " + w.PC
	}
	if g.Function != w.Function {
		return "function " + g.Function + ", GDB " + w.Function
	}
	if g.Image != w.Image {
		return "image " + g.Image + ", GDB " + w.Image
	}
	if len(g.Inlined) != len(w.Inlined) {
		return "inlined frames differ"
	}
	for i := range w.Inlined {
		if g.Inlined[i].Function != w.Inlined[i].Function {
			return "inlined " + g.Inlined[i].Function + ", GDB " + w.Inlined[i].Function
		}
	}
	return ""
}

// trimPC normalises "0x0000010a" and "0x10a", Thumb bit clear.
func trimPC(s string) string {
	s = strings.TrimLeft(strings.TrimPrefix(s, "0x"), "0")
	if s == "" {
		return "0"
	}
	last := s[len(s)-1]
	if strings.IndexByte("13579bdf", last) >= 0 {
		s = s[:len(s)-1] + string("0123456789abcdef"[strings.IndexByte("0123456789abcdef", last)-1])
	}
	return s
}

func showMulti(fs []multiFrame) string {
	var b strings.Builder
	for i, f := range fs {
		fn := f.Function
		if f.Kind == "exception" {
			fn = "<exception " + f.Stack + ">"
		}
		b.WriteString("  ")
		b.WriteString(strings.Repeat(" ", 0))
		b.WriteString(trimPC(f.PC) + " " + fn + " " + f.Image)
		if i < len(fs)-1 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestAnalyzeOverlappingImages: two --elf whose load segments overlap are
// an input error (exit status 1) naming both files and the range; one
// --elf gives the report of old (no "images", no frames[].image).
func TestAnalyzeOverlappingImages(t *testing.T) {
	a := filepath.Join(repo, "firmware-samples/multiimage/build/gcc-m3-O2-boot.elf")
	b := filepath.Join(repo, "firmware-samples/multiimage/build/gcc-m3-O0-boot.elf")
	dump := filepath.Join(repo, "fixtures/qemu-multiimage/gcc-m3-O2-app_fault.json")
	_, errOut, code := run(t, "", "analyze", "--elf", a, "--elf", b, dump)
	if code != 1 || !strings.Contains(errOut, "gcc-m3-O2-boot.elf and") || !strings.Contains(errOut, "gcc-m3-O0-boot.elf both claim 0x00000000-") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	_, errOut, code = run(t, "", "compare", "--elf", a, "--elf", b, dump)
	if code != 1 || !strings.Contains(errOut, "both claim") {
		t.Errorf("compare: exit %d: %s", code, errOut)
	}
	out, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", a, dump)
	if code != 0 {
		t.Fatalf("one --elf: exit %d: %s", code, errOut)
	}
	if strings.Contains(out, `"images"`) || strings.Contains(out, `"image"`) {
		t.Errorf("one --elf: the report names images:\n%s", out)
	}
}

// TestAnalyzeROMSymbolFile: the bootloader given only as a symbol file
// (objcopy --extract-symbol, as a ROM's symbols ship) names the frame in
// its code, from that file, without file:line; with no code bytes there
// (the dump holds RAM only) the step past it is a guess and says that the
// memory was not captured, never high confidence.
func TestAnalyzeROMSymbolFile(t *testing.T) {
	app := filepath.Join(repo, "firmware-samples/multiimage/build/gcc-m3-O2-app.elf")
	syms := filepath.Join(repo, "firmware-samples/multiimage/symbols/gcc-m3-O2-bootsyms.elf")
	dump := filepath.Join(repo, "fixtures/qemu-multiimage/gcc-m3-O2-boot_service.json")
	out, errOut, code := run(t, "", "analyze", "--format", "json", "--elf", app, "--elf", syms, dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r struct {
		Frames []struct {
			multiFrame
			File       string `json:"file"`
			Confidence string `json:"confidence"`
			Note       string `json:"note"`
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Frames) < 4 {
		t.Fatalf("%d frames", len(r.Frames))
	}
	f := r.Frames[2] // GDB: boot_crc_word at 0x412
	if f.Function != "boot_crc_word" || f.Image != "gcc-m3-O2-bootsyms.elf" || f.File != "" || trimPC(f.PC) != "412" {
		t.Errorf("frame 2: %+v", f)
	}
	next := r.Frames[3]
	if next.Confidence == "high" || !strings.Contains(next.Note, "not captured") {
		t.Errorf("frame 3 past the symbol-only code: %+v", next)
	}
}

// TestCompareMultiImage: compare takes the images too, and every
// strategy's frames name their image.
func TestCompareMultiImage(t *testing.T) {
	s := filepath.Join(repo, "firmware-samples/trustzone/build/gcc-O2-s.elf")
	ns := filepath.Join(repo, "firmware-samples/trustzone/build/gcc-O2-ns.elf")
	dump := filepath.Join(repo, "fixtures/qemu-trustzone/gcc-O2-ns_callback.json")
	out, errOut, code := run(t, "", "compare", "--format", "json", "--elf", s, "--elf", ns, dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var c struct {
		Results []struct {
			Unwinder string       `json:"unwinder"`
			Frames   []multiFrame `json:"frames"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Results {
		if len(r.Frames) < 3 || r.Frames[0].Image != "gcc-O2-s.elf" || r.Frames[2].Image != "gcc-O2-ns.elf" || r.Frames[2].Function != "ns_store" {
			t.Errorf("%s: %s", r.Unwinder, showMulti(r.Frames))
		}
	}
	if len(c.Results) < 5 {
		t.Errorf("%d strategies", len(c.Results))
	}
}

// TestAnalyzeMultiImageText: the text and HTML reports name each frame's
// image beside how it was found.
func TestAnalyzeMultiImageText(t *testing.T) {
	s := filepath.Join(repo, "firmware-samples/trustzone/build/gcc-O2-s.elf")
	ns := filepath.Join(repo, "firmware-samples/trustzone/build/gcc-O2-ns.elf")
	dump := filepath.Join(repo, "fixtures/qemu-trustzone/gcc-O2-ns_irq.json")
	for format, want := range map[string][]string{
		"text": {"with gcc-O2-s.elf + gcc-O2-ns.elf", "[gcc-O2-ns.elf, cfi, high]", "[gcc-O2-s.elf, registers, high]"},
		"html": {"gcc-O2-ns.elf · cfi · high", "gcc-O2-s.elf · registers · high"},
	} {
		out, errOut, code := run(t, "", "analyze", "--format", format, "--elf", s, "--elf", ns, dump)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errOut)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: no %q", format, w)
			}
		}
	}
}
