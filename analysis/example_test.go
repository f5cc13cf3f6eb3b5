package analysis_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/faultline-dev/faultline/analysis"
	"github.com/faultline-dev/faultline/analysis/bucket"
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
