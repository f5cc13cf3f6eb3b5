package uc

import (
	"errors"
	"fmt"
)

// ErrUnavailable is returned by Open (and every Engine method) when faultline
// was built without cgo, so there is no libunicorn to call; errors.Is finds
// it too in the *LoadError Open returns when libunicorn cannot be loaded at
// run time. Its text says which of the two it is in this build.
var ErrUnavailable = errors.New(unavailableText)

// LoadError reports why libunicorn could not be loaded at run time (cgo
// builds load it on the first Open instead of linking it, see Available).
// It wraps ErrUnavailable.
type LoadError struct {
	Lib     string // the shared object that failed, e.g. "libunicorn.so.2"
	Symbol  string // a function the library lacks, if that was the problem
	Version string // the version the library reports, if it is not 2.x
	Detail  string // what went wrong (the dlerror text when it could not be opened)
}

func (e *LoadError) Error() string {
	return "emulation unavailable: " + e.Detail + " (Unicorn 2 is needed: apt-get install libunicorn2)"
}

func (e *LoadError) Unwrap() error { return ErrUnavailable }

// CPUModel is a Unicorn ARM CPU model (enum uc_cpu_arm in unicorn/arm.h).
type CPUModel int

// The M-profile models Unicorn 2.0.1 offers. There is no Cortex-M0+ model;
// a Cortex-M0 is the closest (both are ARMv6-M).
const (
	CortexM0  CPUModel = 7
	CortexM3  CPUModel = 8
	CortexM4  CPUModel = 9
	CortexM7  CPUModel = 10
	CortexM33 CPUModel = 11
)

func (m CPUModel) String() string {
	switch m {
	case CortexM0:
		return "cortex-m0"
	case CortexM3:
		return "cortex-m3"
	case CortexM4:
		return "cortex-m4"
	case CortexM7:
		return "cortex-m7"
	case CortexM33:
		return "cortex-m33"
	}
	return fmt.Sprintf("CPUModel(%d)", int(m))
}

// Perm is a set of memory permissions (uc_prot).
type Perm uint32

// Memory permissions.
const (
	PermNone  Perm = 0
	PermRead  Perm = 1
	PermWrite Perm = 2
	PermExec  Perm = 4
	PermAll   Perm = PermRead | PermWrite | PermExec
)

func (p Perm) String() string {
	b := []byte("---")
	if p&PermRead != 0 {
		b[0] = 'r'
	}
	if p&PermWrite != 0 {
		b[1] = 'w'
	}
	if p&PermExec != 0 {
		b[2] = 'x'
	}
	return string(b)
}

// MemAccess is the kind of a memory access reported to a memory hook
// (uc_mem_type).
type MemAccess int

// Memory access kinds (uc_mem_type).
const (
	MemRead          MemAccess = 16
	MemWrite         MemAccess = 17
	MemFetch         MemAccess = 18
	MemReadUnmapped  MemAccess = 19
	MemWriteUnmapped MemAccess = 20
	MemFetchUnmapped MemAccess = 21
	MemWriteProt     MemAccess = 22
	MemReadProt      MemAccess = 23
	MemFetchProt     MemAccess = 24
	MemReadAfter     MemAccess = 25
)

var memAccessNames = map[MemAccess]string{
	MemRead: "read", MemWrite: "write", MemFetch: "fetch",
	MemReadUnmapped: "read unmapped", MemWriteUnmapped: "write unmapped",
	MemFetchUnmapped: "fetch unmapped", MemWriteProt: "write protected",
	MemReadProt: "read protected", MemFetchProt: "fetch protected",
	MemReadAfter: "read after",
}

func (a MemAccess) String() string {
	if s, ok := memAccessNames[a]; ok {
		return s
	}
	return fmt.Sprintf("MemAccess(%d)", int(a))
}

// IsFetch reports whether a is an instruction fetch.
func (a MemAccess) IsFetch() bool {
	return a == MemFetch || a == MemFetchUnmapped || a == MemFetchProt
}

// IsWrite reports whether a is a data write.
func (a MemAccess) IsWrite() bool {
	return a == MemWrite || a == MemWriteUnmapped || a == MemWriteProt
}

// Error is a Unicorn error code (uc_err).
type Error int

// Unicorn error codes (uc_err in unicorn.h).
const (
	ErrOK             Error = 0
	ErrNoMem          Error = 1
	ErrArch           Error = 2
	ErrHandle         Error = 3
	ErrMode           Error = 4
	ErrVersion        Error = 5
	ErrReadUnmapped   Error = 6
	ErrWriteUnmapped  Error = 7
	ErrFetchUnmapped  Error = 8
	ErrHook           Error = 9
	ErrInsnInvalid    Error = 10
	ErrMap            Error = 11
	ErrWriteProt      Error = 12
	ErrReadProt       Error = 13
	ErrFetchProt      Error = 14
	ErrArg            Error = 15
	ErrReadUnaligned  Error = 16
	ErrWriteUnaligned Error = 17
	ErrFetchUnaligned Error = 18
	ErrHookExist      Error = 19
	ErrResource       Error = 20
	ErrException      Error = 21
)

var errorNames = [...]string{
	"UC_ERR_OK", "UC_ERR_NOMEM", "UC_ERR_ARCH", "UC_ERR_HANDLE", "UC_ERR_MODE",
	"UC_ERR_VERSION", "UC_ERR_READ_UNMAPPED", "UC_ERR_WRITE_UNMAPPED",
	"UC_ERR_FETCH_UNMAPPED", "UC_ERR_HOOK", "UC_ERR_INSN_INVALID", "UC_ERR_MAP",
	"UC_ERR_WRITE_PROT", "UC_ERR_READ_PROT", "UC_ERR_FETCH_PROT", "UC_ERR_ARG",
	"UC_ERR_READ_UNALIGNED", "UC_ERR_WRITE_UNALIGNED", "UC_ERR_FETCH_UNALIGNED",
	"UC_ERR_HOOK_EXIST", "UC_ERR_RESOURCE", "UC_ERR_EXCEPTION",
}

func (e Error) Error() string {
	if e >= 0 && int(e) < len(errorNames) {
		return errorNames[e]
	}
	return fmt.Sprintf("uc_err(%d)", int(e))
}

// IsMemoryFault reports whether e is one of the errors with which
// uc_emu_start reports a guest memory access it could not perform.
func (e Error) IsMemoryFault() bool {
	switch e {
	case ErrReadUnmapped, ErrWriteUnmapped, ErrFetchUnmapped,
		ErrReadProt, ErrWriteProt, ErrFetchProt,
		ErrReadUnaligned, ErrWriteUnaligned, ErrFetchUnaligned:
		return true
	}
	return false
}

// OpError records which binding operation failed, where, and why. Err is
// usually an Error.
type OpError struct {
	Op   string // the libunicorn call, e.g. "mem_read"
	Addr uint64 // the guest address or register involved, when HasAddr
	// HasAddr tells whether Addr is meaningful.
	HasAddr bool
	Err     error
}

func (e *OpError) Error() string {
	if e.HasAddr {
		return fmt.Sprintf("%s %#x: %v", e.Op, e.Addr, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Op, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

// CallbackPanicError is returned by Engine.Start when a Go callback (hook or
// MMIO handler) panicked; the panic was recovered and the emulation stopped.
type CallbackPanicError struct {
	Callback string // which kind of callback, e.g. "code hook"
	Value    any    // the value passed to panic
}

func (e *CallbackPanicError) Error() string {
	return fmt.Sprintf("panic in %s: %v", e.Callback, e.Value)
}

// Hook identifies an installed hook (uc_hook).
type Hook uintptr

// Interrupt numbers Unicorn passes to interrupt hooks on ARM. They are QEMU's
// EXCP_* values (target/arm/cpu.h), observed as described in docs/unicorn.md.
const (
	IntrUDEF          = 1  // undefined instruction
	IntrSWI           = 2  // svc; PC is already past the instruction
	IntrPrefetchAbort = 3  // fetch from an execute-never region
	IntrDataAbort     = 4  // e.g. unaligned access on ARMv6-M
	IntrBKPT          = 7  // bkpt; PC is at the instruction
	IntrExceptionExit = 8  // EXC_RETURN branch in Handler mode
	IntrSemihost      = 16 // semihosting call
	IntrNOCP          = 17
	IntrINVSTATE      = 18
	IntrSTKOF         = 19
	IntrUnaligned     = 22
)
