//go:build ignore

// gen writes the C sources of a large synthetic Cortex-M4 firmware and,
// unless -build=false, compiles and links it with arm-none-eabi-gcc -g into
// DIR/synthetic.elf. The image exists to measure how elfsym scales (index
// build time, peak memory, symbolization of many addresses): it is not
// committed (about 20 MB); the benchmarks generate it on demand.
//
//	go run firmware-samples/synthetic/gen.go -o /tmp/synth
//	go run firmware-samples/synthetic/gen.go -o /tmp/synth -funcs 100000 -files 200
//
// Shape of the default image (-funcs 50000 -files 100): 100 compilation
// units of 500 external functions each, every function with one or two
// always_inline helpers inlined (inline chains of depth 2 and 3) and a call
// to the previous function of its unit, plus a startup unit with the
// ARMv7-M vector table and a main that reaches every unit through a table
// of function pointers. Compiled with -O2 -g -fno-var-tracking (DWARF 5),
// -ffunction-sections, linked without --gc-sections: every function is
// kept. About 3 MB of code and 14 MB of DWARF (5.6 MB .debug_info, 5.8 MB
// .debug_line); the ELF is about 20 MB. The output is deterministic for
// given flags.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

func main() {
	out := flag.String("o", "", "output directory (created); the ELF is DIR/synthetic.elf")
	funcs := flag.Int("funcs", 50000, "number of generated functions (besides startup code)")
	files := flag.Int("files", 100, "number of C files (compilation units) they are spread over")
	build := flag.Bool("build", true, "compile and link (needs arm-none-eabi-gcc)")
	cc := flag.String("cc", "arm-none-eabi-gcc", "the cross compiler")
	opt := flag.String("O", "2", "optimisation level passed as -O<level>")
	jobs := flag.Int("j", runtime.NumCPU(), "parallel compiler processes")
	flag.Parse()
	if *out == "" || *funcs < 1 || *files < 1 || *files > *funcs {
		fmt.Fprintln(os.Stderr, "usage: go run gen.go -o DIR [-funcs N] [-files M] [-build=false]")
		os.Exit(2)
	}
	if err := run(*out, *funcs, *files, *build, *cc, *opt, *jobs); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(dir string, nFuncs, nFiles int, build bool, cc, opt string, jobs int) error {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	per := make([]int, nFiles) // functions per file
	for i := range nFuncs {
		per[i%nFiles]++
	}
	var cfiles []string
	for k := range nFiles {
		name := filepath.Join(src, fmt.Sprintf("unit%03d.c", k))
		if err := os.WriteFile(name, unitSource(k, per[k]), 0o644); err != nil {
			return err
		}
		cfiles = append(cfiles, name)
	}
	startup := filepath.Join(src, "startup.c")
	if err := os.WriteFile(startup, startupSource(per), 0o644); err != nil {
		return err
	}
	cfiles = append(cfiles, startup)
	ld := filepath.Join(dir, "synthetic.ld")
	if err := os.WriteFile(ld, []byte(linkerScript), 0o644); err != nil {
		return err
	}
	if !build {
		return nil
	}

	// Compile in parallel, then link.
	core := []string{"-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft"}
	// -fno-var-tracking: no location lists for variables, which elfsym
	// never reads and which would double the size of the debugging
	// information; the entries elfsym reads (subprograms, inlined
	// subroutines, line tables) are unaffected.
	cflags := append(append([]string{}, core...), "-O"+opt, "-g", "-fno-var-tracking", "-std=c11", "-ffreestanding",
		"-ffunction-sections", "-fdata-sections", "-Wall", "-Werror",
		"-ffile-prefix-map="+dir+"=.")
	objs := make([]string, len(cfiles))
	errs := make([]error, len(cfiles))
	sem := make(chan struct{}, max(jobs, 1))
	var wg sync.WaitGroup
	for i, c := range cfiles {
		objs[i] = strings.TrimSuffix(c, ".c") + ".o"
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := append(append([]string{}, cflags...), "-c", c, "-o", objs[i])
			errs[i] = command(dir, cc, args...)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	args := append(append([]string{}, core...), "-nostdlib", "-nostartfiles", "-T", ld,
		"-Wl,--no-warn-rwx-segments", "-o", filepath.Join(dir, "synthetic.elf"))
	return command(dir, cc, append(args, objs...)...)
}

func command(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return nil
}

// unitSource is compilation unit k with n functions fn_K_0 .. fn_K_<n-1>.
// Each calls an always_inline helper (rot_K alone, or mix_K with rot_K
// inlined into it: inline chains of depth 2 and 3) and, except the first,
// the previous function of the unit, which noinline keeps a real call (GCC
// would otherwise inline the whole chain into each function). The
// constants vary with the function number so that no two bodies are
// identical.
func unitSource(k, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "/* Generated by firmware-samples/synthetic/gen.go: unit %d, %d functions. */\n", k, n)
	fmt.Fprintf(&b, `typedef unsigned int u32;

extern volatile u32 synth_sink;

static inline __attribute__((always_inline)) u32 rot_%[1]d(u32 x, u32 r)
{
	return (x << (r & 31)) | (x >> ((32 - r) & 31));
}

static inline __attribute__((always_inline)) u32 mix_%[1]d(u32 x, u32 y)
{
	return rot_%[1]d(x ^ y, y) * 2654435761u;
}

`, k)
	for i := range n {
		fmt.Fprintf(&b, "__attribute__((noinline)) u32 fn_%d_%d(u32 a, u32 b);\n", k, i)
	}
	b.WriteString("\n")
	for i := range n {
		fmt.Fprintf(&b, "u32 fn_%d_%d(u32 a, u32 b)\n{\n", k, i)
		if i%3 == 2 {
			fmt.Fprintf(&b, "\tu32 t = rot_%d(a + b, %du);\n", k, i%31+1)
		} else {
			fmt.Fprintf(&b, "\tu32 t = mix_%d(a, b + %du);\n", k, i)
		}
		if i > 0 {
			fmt.Fprintf(&b, "\tif (t & 0x%x)\n\t\tt += fn_%d_%d(t, b);\n", 1<<(i%8+1), k, i-1)
		}
		b.WriteString("\tsynth_sink = t;\n\treturn t;\n}\n\n")
	}
	return b.Bytes()
}

// startupSource holds the vector table, the handlers, and main, which
// calls the last function of every unit through a table.
func startupSource(per []int) []byte {
	var b bytes.Buffer
	b.WriteString(`/* Generated by firmware-samples/synthetic/gen.go: startup and main. */
typedef unsigned int u32;
typedef void (*vector_t)(void);
typedef u32 (*fn_t)(u32, u32);

extern u32 _estack[];
volatile u32 synth_sink;

void Reset_Handler(void);
void Fault_Handler(void);
int main(void);

__attribute__((section(".isr_vector"), used))
const vector_t vector_table[16] = {
	(vector_t)_estack, Reset_Handler, Fault_Handler, Fault_Handler,
	Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0,
	Fault_Handler, Fault_Handler, 0, Fault_Handler, Fault_Handler,
};

__attribute__((noinline)) void Fault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

__attribute__((noreturn)) void Reset_Handler(void)
{
	main();
	for (;;)
		__asm volatile("" ::: "memory");
}

`)
	for k, n := range per {
		fmt.Fprintf(&b, "u32 fn_%d_%d(u32 a, u32 b);\n", k, n-1)
	}
	b.WriteString("\nstatic fn_t const roots[] = {\n")
	for k, n := range per {
		fmt.Fprintf(&b, "\tfn_%d_%d,\n", k, n-1)
	}
	b.WriteString(`};

int main(void)
{
	u32 v = 1;
	for (u32 i = 0; i < sizeof roots / sizeof roots[0]; i++)
		v = roots[i](v, i);
	synth_sink = v;
	return 0;
}
`)
	return b.Bytes()
}

const linkerScript = `/* Generated by firmware-samples/synthetic/gen.go. */
ENTRY(Reset_Handler)

MEMORY
{
  FLASH (rx)  : ORIGIN = 0x08000000, LENGTH = 32M
  RAM   (rwx) : ORIGIN = 0x20000000, LENGTH = 64K
}

_estack = ORIGIN(RAM) + LENGTH(RAM);

SECTIONS
{
  .isr_vector : { KEEP(*(.isr_vector)) } > FLASH
  .text : { *(.text .text.*) *(.rodata .rodata.*) . = ALIGN(4); } > FLASH
  .data : { *(.data .data.*) } > RAM AT > FLASH
  .bss (NOLOAD) : { *(.bss .bss.* COMMON) } > RAM
}
`
