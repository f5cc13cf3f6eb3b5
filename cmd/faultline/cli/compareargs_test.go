package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareArgs: compare prints each strategy's frames with their
// arguments, strategies with the same frames and values in one block
// (text), and every strategy's frames carry args (JSON). auto's values
// are GDB's (TestArgsAgainstGDB); stackscan recovers no callee-saved
// register, so its callers' arguments are unknown, never a value.
func TestCompareArgs(t *testing.T) {
	elf := repo + "/firmware-samples/build/gcc-m3-O2.elf"
	dump := repo + "/fixtures/qemu/gcc-m3-O2-null_write_deep.json"
	out, errOut, code := run(t, "", "compare", "--elf", elf, dump)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"\nArguments (from DWARF; strategies with the same frames and values share a block)\n  auto, cfi, prologue\n    #0  HardFault_Handler\n    #1  <exception frame>\n    #2  null_store (value=2549672336)\n    #3  deep5_mixed (a=774553840, b=<optimized out>, c=1549107725)\n",
		"    #6  deep2_big_locals (a=10)\n",
		"  stackscan\n",
		"    #6  deep2_big_locals (a=<optimized out>)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("compare text lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, "", "compare", "--elf", elf, "--format", "json", dump)
	var r struct {
		Results []struct {
			Unwinder string
			Frames   []struct {
				Function string
				Args     []struct{ Name, Value string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, res := range r.Results {
		for _, f := range res.Frames {
			if f.Function == "null_store" && len(f.Args) == 1 && f.Args[0].Value == "2549672336" {
				with++
			}
		}
	}
	if with != 6 {
		t.Errorf("%d strategies give null_store (value=2549672336) in JSON, want all 6", with)
	}
}

// TestCompareArgsConsistent: over the QEMU oracle dumps of a gcc and a
// clang build, a value any strategy gives an argument of a frame (the
// same function at the same SP) is auto's value for it, when auto has
// one: a strategy never shows a value GDB would not.
func TestCompareArgsConsistent(t *testing.T) {
	compared := 0
	for _, b := range []string{"gcc-m3-O2", "clang-m3-O2"} {
		dumps, _ := filepath.Glob(repo + "/fixtures/qemu/" + b + "-*.json")
		if len(dumps) == 0 {
			t.Fatalf("no fixtures/qemu/%s-*.json", b)
		}
		if testing.Short() {
			dumps = dumps[:min(4, len(dumps))]
		}
		elf := repo + "/firmware-samples/build/" + b + ".elf"
		for _, dump := range dumps {
			out, errOut, code := run(t, "", "compare", "--elf", elf, "--format", "json", dump)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", dump, code, errOut)
			}
			var r struct {
				Results []struct {
					Unwinder string
					Frames   []struct {
						Function, SP string
						Args         []struct{ Name, Value string }
					}
				}
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			auto := map[string]string{} // function@sp/name -> value
			for _, res := range r.Results {
				if res.Unwinder != "auto" {
					continue
				}
				for _, f := range res.Frames {
					for _, a := range f.Args {
						auto[f.Function+"@"+f.SP+"/"+a.Name] = a.Value
					}
				}
			}
			for _, res := range r.Results {
				for _, f := range res.Frames {
					for _, a := range f.Args {
						want, ok := auto[f.Function+"@"+f.SP+"/"+a.Name]
						if !ok || want == "" || a.Value == "" {
							continue
						}
						compared++
						if a.Value != want {
							t.Errorf("%s: %s #%s@%s %s=%s, auto %s", filepath.Base(dump), res.Unwinder, f.Function, f.SP, a.Name, a.Value, want)
						}
					}
				}
			}
		}
	}
	if compared == 0 {
		t.Error("no argument value compared")
	}
	t.Logf("%d values of other strategies compared with auto's", compared)
}
