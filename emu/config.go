package emu

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/faultline-dev/faultline/emu/uc"
)

// ErrNoFault is wrapped by the error Run returns when the firmware did not
// fault within the bounds (instruction budget, timeout) or returned from
// the function it was called at. The CLI maps it to exit status 3.
var ErrNoFault = errors.New("firmware did not fault")

// ErrConfig is wrapped by the errors Run returns for a configuration the
// firmware cannot take: a --set symbol that does not exist or a value
// that does not fit it, a --call function that does not exist, a --map
// region that overlaps the firmware's memory. The CLI reports them as
// usage errors (exit status 2), like the flags' own syntax errors.
var ErrConfig = errors.New("invalid emulator configuration")

// configError is an error that wraps ErrConfig with its own message.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return ErrConfig }

func configErrorf(format string, args ...any) error {
	return &configError{fmt.Sprintf(format, args...)}
}

// ConfigErrorf returns an error wrapping ErrConfig with its own message,
// for a Probe's Start that finds the configuration does not fit the
// firmware (a function named on the command line that it lacks).
func ConfigErrorf(format string, args ...any) error {
	return configErrorf(format, args...)
}

// NoFaultError says why a run ended without a fault. It wraps ErrNoFault.
type NoFaultError struct {
	Reason string // e.g. "instruction limit of 1000000 reached"
	Insns  uint64 // guest instructions executed
	PC     uint32 // where the core was
}

func (e *NoFaultError) Error() string {
	return "the firmware did not fault: " + e.Detail()
}

// Detail is the reason with the instruction count and the PC, as the
// commands print it: "instruction limit of 10 reached (after 10
// instructions, pc=0x00000110)".
func (e *NoFaultError) Detail() string {
	unit := "instructions"
	if e.Insns == 1 {
		unit = "instruction"
	}
	return fmt.Sprintf("%s (after %d %s, pc=0x%08x)", e.Reason, e.Insns, unit, e.PC)
}

func (e *NoFaultError) Unwrap() error { return ErrNoFault }

// ImpreciseDelay is how many instructions after the faulting store an
// imprecise bus fault is taken (Config.ImpreciseStores); silicon takes it
// a few cycles later, typically after 1-3 instructions.
const ImpreciseDelay = 2

// Defaults for the run bounds.
const (
	DefaultMaxInsns = 100_000_000
	DefaultTimeout  = 10 * time.Second
)

// Config says what to run and how far.
type Config struct {
	// ELF is the path of the firmware image.
	ELF string
	// CPU is cortex-m0, cortex-m0plus, cortex-m3, cortex-m4, cortex-m7 or
	// cortex-m33 (the "cortex-" prefix is optional). Empty: from the ELF's
	// build attributes, else cortex-m4.
	CPU string
	// Sets are globals to write before running (--set SYMBOL=VALUE); each
	// is written with its symbol's size (1, 2, 4 or 8 bytes). When starting
	// from Reset they are written again at the first instruction of main,
	// after the startup code initialised .data and .bss.
	Sets map[string]uint64
	// Call names a function to start at instead of the reset vector. The
	// stack is the initial SP and LR is 0xFFFFFFFF; returning from it ends
	// the run with ErrNoFault.
	Call string
	// MaxInsns bounds the guest instructions (0: DefaultMaxInsns). The
	// count is kept per translated block, so a run may overshoot by one
	// block.
	MaxInsns uint64
	// Timeout bounds the wall-clock time (0: DefaultTimeout).
	Timeout time.Duration
	// Maps are extra memory regions (--map ADDR:SIZE[:rw|rx|zero]), zero
	// filled.
	Maps []Region
	// NoTruth turns the shadow call stack off (Result.Truth is then nil).
	NoTruth bool
	// ImpreciseStores makes a store to an unmapped address an imprecise
	// bus fault (--imprecise-stores), as on most Cortex-M3/M4 silicon
	// where the write buffer (ACTLR.DISDEFWBUF clear, the reset value)
	// lets the core run on: CFSR.IMPRECISERR without BFARVALID, taken
	// after the store and the next ImpreciseDelay instructions, so the
	// stacked PC is past the store. Off (the default), such a store is a
	// precise bus fault (PRECISERR, BFAR), as QEMU reports it; the QEMU
	// oracle fixtures depend on that.
	ImpreciseStores bool
	// IRQs are exceptions to raise at given instruction counts.
	IRQs []IRQ
	// RunHandler continues after the fault into the firmware's own fault
	// handler until it halts (a branch-to-self loop), exits through
	// semihosting, or reaches a bound; Result.Handler says how it ended.
	// Result still holds the state at the handler's first instruction.
	RunHandler bool
	// Stdout and Stderr receive semihosting output (SYS_WRITEC, SYS_WRITE0,
	// SYS_WRITE to handles 1 and 2); nil discards it.
	Stdout, Stderr io.Writer
	// Probe, when set, watches the run from inside (emu/heap); it needs
	// the shadow call stack (NoTruth unset).
	Probe Probe
}

// cpuInfo describes a supported core.
type cpuInfo struct {
	name  string
	model uc.CPUModel
	v6m   bool // ARMv6-M
	v8m   bool // ARMv8-M Mainline
	fp    bool // has the FP extension
	cpuid uint32
}

// CPUID values from the cores' technical reference manuals.
var cpus = []cpuInfo{
	{name: "cortex-m0", model: uc.CortexM0, v6m: true, cpuid: 0x410CC200},
	{name: "cortex-m0plus", model: uc.CortexM0, v6m: true, cpuid: 0x410CC601},
	{name: "cortex-m3", model: uc.CortexM3, cpuid: 0x412FC231},
	{name: "cortex-m4", model: uc.CortexM4, fp: true, cpuid: 0x410FC241},
	{name: "cortex-m7", model: uc.CortexM7, fp: true, cpuid: 0x411FC272},
	{name: "cortex-m33", model: uc.CortexM33, v8m: true, fp: true, cpuid: 0x410FD213},
}

// lookupCPU accepts "cortex-m4", "m4", "cortex-m0+" and the like.
func lookupCPU(name string) (cpuInfo, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "cortex-")
	n = strings.Replace(n, "+", "plus", 1)
	for _, c := range cpus {
		if strings.TrimPrefix(c.name, "cortex-") == n {
			return c, nil
		}
	}
	var names []string
	for _, c := range cpus {
		names = append(names, c.name)
	}
	return cpuInfo{}, fmt.Errorf("unknown CPU %q (want one of %s)", name, strings.Join(names, ", "))
}

// Registers is the core register file at the end of a run.
type Registers struct {
	R         [13]uint32 // r0..r12
	SP        uint32
	LR        uint32
	PC        uint32
	XPSR      uint32
	MSP       uint32
	PSP       uint32
	CONTROL   uint32
	PRIMASK   uint32
	BASEPRI   uint32
	FAULTMASK uint32
	// FP holds the FP extension registers on cores that have them.
	FP *FPRegisters
}

// FPRegisters are the FP extension registers.
type FPRegisters struct {
	S     [32]uint32
	FPSCR uint32
}

// FaultRegisters are the SCB fault status and control registers
// (docs/cortex-m.md section 2). On ARMv6-M only ICSR, VTOR, CCR and SHPR
// exist; the rest read zero.
type FaultRegisters struct {
	CFSR, HFSR, DFSR, MMFAR, BFAR, AFSR uint32
	ICSR, VTOR, CCR, SHCSR              uint32
	CPACR, FPCCR, FPCAR                 uint32
}

// Cause says which fault the harness raised and why, in architecture terms.
type Cause struct {
	// Fault is the fault before escalation: "MemManage", "BusFault",
	// "UsageFault" or "HardFault".
	Fault string
	// Bits are the CFSR/HFSR bit names that were set, e.g. ["PRECISERR",
	// "BFARVALID"] (also filled in on ARMv6-M, where no CFSR exists).
	Bits []string
	// Address is the faulting data address (BFAR/MMFAR) when there is one.
	Address    uint32
	HasAddress bool
	// PC is the address of the faulting instruction (the stacked return
	// address).
	PC uint32
	// Forced is set when the fault escalated to HardFault (HFSR.FORCED, or
	// any fault on ARMv6-M).
	Forced bool
	// Detail is a human-readable sentence.
	Detail string
}

// Memory is a copy of a guest memory region.
type Memory struct {
	Addr uint32
	Name string // "ram", "map"
	Data []byte
}

// Frame kinds in Result.Truth.
const (
	FrameNormal    = ""
	FrameException = "exception"
)

// TruthFrame is one frame of the ground-truth call stack, innermost first.
type TruthFrame struct {
	// PC is the frame's PC: the current PC for frame 0, the interrupted PC
	// for the frame below an exception, else a return address.
	PC uint32
	// Function is the ELF symbol of the function containing PC (a return
	// address is looked up at PC-1), "" when none.
	Function string
	// Kind is FrameNormal or FrameException (a pseudo-frame for exception
	// entry, with PC 0 and Exception set).
	Kind      string
	Exception int
	// ExcReturn is the EXC_RETURN value of an exception pseudo-frame.
	ExcReturn uint32
	// SP is the stack pointer at the call (for an exception pseudo-frame:
	// the address of the stacked frame).
	SP uint32
}

// ThreadTruth is the true call stack of a thread that was switched out:
// execution left it through an exception that returned to another thread.
type ThreadTruth struct {
	// Frame is the address of the hardware exception frame the thread was
	// switched out with (and will be resumed from).
	Frame uint32
	// SP is the thread's stack pointer once that frame is unstacked: its
	// SP where it was interrupted, which its saved context restores.
	SP uint32
	// Frames are innermost first: the interrupted PC, then return
	// addresses, ending at the thread's entry function.
	Frames []TruthFrame
}

// Result is the state at the first instruction of the fault handler.
type Result struct {
	CPU string
	// BuildID is the firmware ELF's GNU build ID in lower-case hex ("" if
	// it has none), recorded in the dump so that --symbols can find the
	// ELF by it.
	BuildID   string
	Registers Registers
	Fault     FaultRegisters
	// Exception is the exception being handled (IPSR), e.g. 3 for HardFault.
	Exception int
	Cause     Cause
	// Lockup is set when the fault happened where no handler could run
	// (in HardFault or NMI, or with FAULTMASK set): the core locked up and
	// Registers are the state at the faulting instruction.
	Lockup bool
	// Memory holds the bytes of every writable region (RAM first).
	Memory []Memory
	// Truth is the shadow call stack at the fault, innermost first.
	Truth []TruthFrame
	// TruthTruncated is set when calls were dropped because the shadow
	// stack was full.
	TruthTruncated bool
	// Threads are the true stacks of the threads an RTOS had switched out
	// (threads.go), by frame address; the current thread's is Truth.
	Threads []ThreadTruth
	// Insns is the number of guest instructions executed.
	Insns uint64
	// SCS holds snapshots of the System Control Space blocks a dump needs:
	// the SCB at 0xE000ED00..0xE000ED3F and, on cores with the FP
	// extension, FPCCR/FPCAR/FPDSCR at 0xE000EF34..0xE000EF3F.
	SCS []Memory
	// Handler is set when Config.RunHandler ran the fault handler.
	Handler *HandlerOutcome
}

// IRQ is an exception raised from outside at a given point of the run
// (--irq N@INSN): exception number Exception (2 NMI, 14 PendSV, 15
// SysTick, 16+n external interrupt n) becomes pending once At guest
// instructions have run. It is taken like a hardware request once its
// priority is higher than the execution priority (PRIMASK, BASEPRI,
// FAULTMASK, active handlers); an external interrupt raised this way is
// taken even if the firmware did not enable it in NVIC_ISER.
type IRQ struct {
	Exception int
	At        uint64
}

// HandlerOutcome says how the firmware's own fault handler ended when
// Config.RunHandler is set.
type HandlerOutcome struct {
	// Reason is e.g. "halted in a branch-to-self loop at 0x000000c0",
	// "semihosting SYS_EXIT (ADP_Stopped_ApplicationExit)".
	Reason string
	// Exited is set when the firmware ended the run through semihosting
	// SYS_EXIT or SYS_EXIT_EXTENDED; ExitCode is then its status.
	Exited   bool
	ExitCode int
	// PC is where the handler stopped, Insns the instructions it ran.
	PC    uint32
	Insns uint64
}

// ValidCPU reports whether name is a CPU Config.CPU accepts.
func ValidCPU(name string) bool {
	_, err := lookupCPU(name)
	return err == nil
}
