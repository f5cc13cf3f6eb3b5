package analysis_test

import (
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
	"github.com/faultline-dev/faultline/analysis/render/jsonout"
	"github.com/faultline-dev/faultline/analysis/render/textout"
	"github.com/faultline-dev/faultline/analysis/report"
	"github.com/faultline-dev/faultline/analysis/score"
	"github.com/faultline-dev/faultline/crashdump"
	"github.com/faultline-dev/faultline/elfsym"
)

// Decode a crash dump with the firmware's ELF, read the report, print it
// and score it. The ELF is a committed sample (firmware-samples/build) and
// the dump is its QEMU oracle dump (fixtures/qemu), which also carries the
// call stack GDB saw: score compares the backtrace with it.
func Example() {
	elf, err := elfsym.Open("../firmware-samples/build/gcc-m3-O2.elf")
	if err != nil {
		log.Fatal(err)
	}
	defer elf.Close()
	d, err := crashdump.Load("../fixtures/qemu/gcc-m3-O2-null_write_deep.json")
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()

	r, err := analysis.Analyze(elf, d, analysis.Options{MaxFrames: 64})
	if err != nil {
		log.Fatal(err)
	}

	// The model: the fault and the backtrace from the faulting frame.
	fmt.Println(r.Fault.Exception, "at", r.Fault.Address, "pairing", r.Pairing.Verdict)
	for _, c := range r.Fault.Causes {
		fmt.Println(" ", c.Register+"."+c.Bit)
	}
	fi := report.FaultingFrame(r)
	for _, f := range r.Frames[fi : fi+3] {
		fmt.Printf("#%d %s %s [%s, %s]\n", f.Index, report.FrameName(f), report.FileLine(f), f.Method, f.Confidence)
	}
	fmt.Println("stop:", r.Stop)

	// A rendering: the first line of the text report.
	var b strings.Builder
	if err := textout.Write(&b, r); err != nil {
		log.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	fmt.Println(first)

	// The bucket the crash falls in, and its score against GDB's stack.
	fmt.Println("signature:", bucket.SignatureOf(r).Key())
	s := score.ScoreReport(r, d.Truth)
	fmt.Printf("exact %v, frame accuracy %.2f, bogus %d\n", s.Exact, s.FrameAccuracy, s.Bogus)

	// Output:
	// HardFault at 0x00000000 pairing unverified
	//   CFSR.DACCVIOL
	//   CFSR.MMARVALID
	//   HFSR.FORCED
	// #2 null_store+0x6 ./src/main.c:56 [exception, high]
	// #3 deep5_mixed+0x1c ./src/main.c:63 [cfi, high]
	// #4 deep4_huge_locals+0x32 ./src/main.c:73 [cfi, high]
	// stop: reached the reset handler
	// Crash dump ../fixtures/qemu/gcc-m3-O2-null_write_deep.json with gcc-m3-O2.elf (cortex-m3, ARMv7-M)
	// signature: v2|HardFault|CFSR.DACCVIOL,HFSR.FORCED|null_store|deep5_mixed>deep4_huge_locals>deep3_callee_saved
	// exact true, frame accuracy 1.00, bogus 0
}

// Decode many dumps of one firmware with an Analyzer (it builds the
// unwinders' tables from the ELF once), print each report as a JSON line
// and group the crashes into buckets.
func ExampleAnalyzer() {
	elf, err := elfsym.Open("../firmware-samples/build/gcc-m3-O2.elf")
	if err != nil {
		log.Fatal(err)
	}
	defer elf.Close()
	a, err := analysis.NewAnalyzer(elf, analysis.Options{MaxFrames: 64})
	if err != nil {
		log.Fatal(err)
	}
	sum := bucket.NewSummarizer(elf.Name(), "auto", "path")
	enc := jsonout.NewEncoder()
	for _, s := range []string{"div0", "udf", "null_write_deep", "div0"} {
		d, err := crashdump.Load("../fixtures/qemu/gcc-m3-O2-" + s + ".json")
		if err != nil {
			log.Fatal(err)
		}
		r, err := a.Analyze(d)
		d.Close()
		if err != nil {
			log.Fatal(err)
		}
		line, err := enc.Line(r) // one faultline.analysis/1 object, as --format jsonl prints it
		if err != nil {
			log.Fatal(err)
		}
		var head struct{ Schema, Dump string }
		if err := json.Unmarshal(line, &head); err != nil {
			log.Fatal(err)
		}
		fi := report.FaultingFrame(r)
		fmt.Println(head.Schema, head.Dump, r.Fault.Exception, "in", r.Frames[fi].Function)
		sum.Add(r)
	}
	for _, b := range sum.Summary().Buckets {
		fmt.Println(b.Count, b.Signature.Function, b.First)
	}

	// Output:
	// faultline.analysis/1 ../fixtures/qemu/gcc-m3-O2-div0.json HardFault in div0_average
	// faultline.analysis/1 ../fixtures/qemu/gcc-m3-O2-udf.json HardFault in udf_assert_fail
	// faultline.analysis/1 ../fixtures/qemu/gcc-m3-O2-null_write_deep.json HardFault in null_store
	// faultline.analysis/1 ../fixtures/qemu/gcc-m3-O2-div0.json HardFault in div0_average
	// 2 div0_average ../fixtures/qemu/gcc-m3-O2-div0.json
	// 1 udf_assert_fail ../fixtures/qemu/gcc-m3-O2-udf.json
	// 1 null_store ../fixtures/qemu/gcc-m3-O2-null_write_deep.json
}
