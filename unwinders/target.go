package unwinders

// Profile is the architecture profile of the crashed core; it decides which
// EXC_RETURN values are valid and how an exception frame is laid out.
type Profile uint8

const (
	ProfileUnknown Profile = iota
	V6M                    // Cortex-M0, M0+, M1: HardFault only, no CFSR
	V7M                    // Cortex-M3, M4, M7
	V8M                    // Cortex-M23, M33, M55: EXC_RETURN prefix 0xFFFFFF80, optional Security Extension
)

func (p Profile) String() string {
	switch p {
	case V6M:
		return "ARMv6-M"
	case V7M:
		return "ARMv7-M"
	case V8M:
		return "ARMv8-M"
	}
	return "unknown profile"
}

// ProfileOf maps a CPU name ("cortex-m4", "m4", "cortex-m0plus") or an
// architecture name ("armv7e-m", as dumps that do not know the core say)
// to its profile.
func ProfileOf(cpu string) Profile {
	switch normalizeCPU(cpu) {
	case "cortex-m0", "cortex-m0plus", "cortex-m1", "armv6-m", "armv6s-m":
		return V6M
	case "cortex-m3", "cortex-m4", "cortex-m7", "armv7-m", "armv7e-m":
		return V7M
	case "cortex-m23", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85", "armv8-m", "armv8-m.base", "armv8-m.main", "armv8.1-m.main":
		return V8M
	}
	return ProfileUnknown
}

func normalizeCPU(cpu string) string {
	b := []byte(cpu)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	s := string(b)
	switch s {
	case "cortex-m0+", "m0+", "cortex-m0p", "m0p":
		return "cortex-m0plus"
	}
	if len(s) > 1 && s[0] == 'm' && s[1] >= '0' && s[1] <= '9' {
		s = "cortex-" + s
	}
	return s
}

// Function describes the function that contains an address.
type Function struct {
	Name  string // raw symbol name, "" if unknown
	Start uint32 // first instruction, Thumb bit clear
	End   uint32 // one past the last byte; equal to Start when the size is unknown
	Thumb bool
}

// Program is what a strategy may know about the firmware image. elfsym
// implements it; tests may implement it directly.
type Program interface {
	// FuncAt returns the function whose [Start, End) holds addr. When the
	// symbol has no size, a function covers addr up to the next symbol.
	FuncAt(addr uint32) (Function, bool)
	// IsCode reports whether addr lies in an executable section.
	IsCode(addr uint32) bool
	// Section returns a section's address and contents.
	Section(name string) (addr uint32, data []byte, ok bool)
	// Symbol returns the address of a named symbol (Thumb bit clear for
	// functions).
	Symbol(name string) (uint32, bool)
}

// A MultiProgram is a Program made of several images that share one
// address space (a bootloader and its application, a TrustZone Secure and
// Non-secure image, a ROM's symbol file): ProgramAt returns the image that
// holds addr, whose tables (EHABI, CFI) describe the code there. The
// MultiProgram's own methods answer for the image that holds the address.
type MultiProgram interface {
	Program
	ProgramAt(addr uint32) (Program, bool)
}

// ProgramFor returns the Program whose unwinding tables describe the code
// at pc: the image holding pc when Prog is a MultiProgram (nil when no
// image does), else Prog.
func (t *Target) ProgramFor(pc uint32) Program {
	if m, ok := t.Prog.(MultiProgram); ok {
		p, ok := m.ProgramAt(pc)
		if !ok {
			return nil
		}
		return p
	}
	return t.Prog
}

// Range is a half-open address range [Lo, Hi).
type Range struct{ Lo, Hi uint32 }

// Contains reports whether a lies in [Lo, Hi).
func (r Range) Contains(a uint32) bool { return a >= r.Lo && a < r.Hi }

// Valid reports whether the range is non-empty.
func (r Range) Valid() bool { return r.Hi > r.Lo }

// Target is everything the walk knows about the crashed device. Only Mem is
// required; every other field improves the result.
type Target struct {
	Mem     Memory
	Prog    Program // nil: no symbols, no code ranges
	Profile Profile
	// Stack is the range the main stack (MSP) may occupy: from the lowest
	// RAM address to the initial SP in the vector table. Zero: unknown.
	Stack Range
	// ProcessStack bounds the process stack (PSP) when known.
	ProcessStack Range
	// BankedStacks bounds the other stacks of a core with the Security
	// Extension (the memory regions that hold MSP_S, PSP_S, MSP_NS,
	// PSP_NS), when known.
	BankedStacks []Range
	// MainStackTop is the initial main stack pointer from the vector table
	// (the top of the main stack), 0 when unknown.
	MainStackTop uint32
	// ProcessStackTop is the top of the process stack when it is known
	// (an RTOS task's stack end from its control block), 0 otherwise.
	// ProcessStack may be wider (the memory region that holds PSP).
	ProcessStackTop uint32
	// ResetHandler is the start of the reset handler (vector 1), 0 if
	// unknown; the walk stops there.
	ResetHandler uint32
	// StackingFailed is set when the fault status says the exception
	// entry's own stacking failed (STKERR, MSTKERR): the frame the core
	// pushed may be incomplete.
	StackingFailed bool
}

// InStack reports whether sp lies within a known stack range (either bank),
// or true when no range is known.
func (t *Target) InStack(sp uint32) bool {
	if !t.Stack.Valid() && !t.ProcessStack.Valid() {
		return true
	}
	// Hi is inclusive for SP: an empty full-descending stack has SP == top.
	in := func(r Range) bool { return r.Valid() && sp >= r.Lo && sp <= r.Hi }
	if in(t.Stack) || in(t.ProcessStack) {
		return true
	}
	for _, r := range t.BankedStacks {
		if in(r) {
			return true
		}
	}
	return false
}

// IsCode reports whether addr is in code; true when no Program is known.
func (t *Target) IsCode(addr uint32) bool {
	if t.Prog == nil {
		return true
	}
	return t.Prog.IsCode(addr)
}

// addrVTOR is the Vector Table Offset Register (ARMv7-M ARM B3.2.5).
const addrVTOR = 0xE000ED08

// maxVector bounds exception numbers: 16 system exceptions and at most 496
// external interrupts (ARMv7-M ARM B1.5.2).
const maxVector = 16 + 496

// Vector returns the vector-table entry of exception n and the table's
// base: the table at VTOR when the dump holds the SCB, else the ELF's
// .isr_vector (or .vectors) section, else address 0 (VTOR's reset value).
// ok is false when the entry cannot be read.
func (t *Target) Vector(n uint32) (entry, base uint32, ok bool) {
	if n == 0 || n >= maxVector {
		return 0, 0, false
	}
	if v, err := ReadU32(t.Mem, addrVTOR); err == nil {
		base = v &^ 0x7F
	} else if t.Prog != nil {
		for _, name := range []string{".isr_vector", ".vectors"} {
			if a, data, ok := t.Prog.Section(name); ok {
				if uint64(len(data)) < 4*uint64(n)+4 {
					return 0, 0, false
				}
				base = a
				break
			}
		}
	}
	if uint64(base)+4*uint64(n) > 0xFFFFFFFC {
		return 0, 0, false
	}
	v, err := ReadU32(t.Mem, base+4*n)
	if err != nil {
		return 0, 0, false
	}
	return v, base, true
}
