// Package heap tracks a firmware's heap from inside the emulator (faultline
// heap): every call of the allocator's entry points is seen at its entry and
// at its return, each live block keeps its size and the call stack that
// allocated it (the emulator's shadow call stack), and the data accesses of
// the firmware are checked against a byte map of the heap, so that double
// frees, frees of pointers never allocated, uses after free and writes past
// a block's end are reported with the stacks that matter.
//
// The package implements emu.Probe; it knows addresses and function
// symbols only. Source locations are the caller's business (the CLI
// symbolizes with elfsym).
package heap

import "fmt"

// Op is what an allocator entry point does.
type Op int

const (
	OpAlloc    Op = iota // size in Size
	OpCalloc             // Count * Size bytes
	OpRealloc            // Ptr to Size
	OpFree               // Ptr
	OpMemalign           // Size bytes, aligned
	// OpInternal is allocator-internal code (statistics, heap walks,
	// usable-size queries): it reads the allocator's free memory by
	// design, so its accesses are not checked; no block changes hands.
	OpInternal
)

func (o Op) String() string {
	switch o {
	case OpAlloc:
		return "alloc"
	case OpCalloc:
		return "calloc"
	case OpRealloc:
		return "realloc"
	case OpFree:
		return "free"
	case OpMemalign:
		return "memalign"
	case OpInternal:
		return "internal"
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// Func describes one allocator entry point: its symbol, what it does and in
// which argument registers (r0..r3) it takes its operands (-1: unused).
type Func struct {
	Name   string
	Family string // "newlib", "freertos", "c++", "custom"
	Op     Op
	Ptr    int // register of the pointer (realloc, free)
	Size   int // register of the size
	Count  int // register of the element count (calloc)
	Header uint32
}

// newlib's chunks carry an 8-byte header (prev_size, size) before the
// pointer; FreeRTOS heap_4's BlockLink_t (pxNextFreeBlock, xBlockSize) is
// 8 bytes on a 32-bit target, rounded up to portBYTE_ALIGNMENT (8).
const (
	newlibHeader = 8
	heap4Header  = 8
)

// KnownFuncs returns the allocator entry points faultline hooks by name:
// newlib's (and their reentrant _r forms, whose first argument is the
// struct _reent), FreeRTOS's portable heap, and C++ operator new/delete in
// every mangled form a 32-bit target has (size_t is unsigned int: j).
func KnownFuncs() []Func {
	nl := func(name string, op Op, ptr, size, count int) Func {
		return Func{Name: name, Family: "newlib", Op: op, Ptr: ptr, Size: size, Count: count, Header: newlibHeader}
	}
	fs := []Func{
		nl("malloc", OpAlloc, -1, 0, -1),
		nl("_malloc_r", OpAlloc, -1, 1, -1),
		nl("calloc", OpCalloc, -1, 1, 0),
		nl("_calloc_r", OpCalloc, -1, 2, 1),
		nl("realloc", OpRealloc, 0, 1, -1),
		nl("_realloc_r", OpRealloc, 1, 2, -1),
		nl("reallocf", OpRealloc, 0, 1, -1),
		nl("_reallocf_r", OpRealloc, 1, 2, -1),
		nl("free", OpFree, 0, -1, -1),
		nl("_free_r", OpFree, 1, -1, -1),
		nl("cfree", OpFree, 0, -1, -1),
		nl("memalign", OpMemalign, -1, 1, -1),
		nl("_memalign_r", OpMemalign, -1, 2, -1),
		nl("aligned_alloc", OpMemalign, -1, 1, -1),
		nl("valloc", OpAlloc, -1, 0, -1),
		nl("_valloc_r", OpAlloc, -1, 1, -1),
		nl("pvalloc", OpAlloc, -1, 0, -1),
		nl("_pvalloc_r", OpAlloc, -1, 1, -1),
		{Name: "pvPortMalloc", Family: "freertos", Op: OpAlloc, Ptr: -1, Size: 0, Count: -1, Header: heap4Header},
		{Name: "pvPortCalloc", Family: "freertos", Op: OpCalloc, Ptr: -1, Size: 1, Count: 0, Header: heap4Header},
		{Name: "vPortFree", Family: "freertos", Op: OpFree, Ptr: 0, Size: -1, Count: -1, Header: heap4Header},
	}
	// Allocator-internal code the firmware may call (or that its calls
	// reach outside an entry point above): it walks the free blocks by
	// design. newlib's malloc_stats is left out on purpose: it prints
	// through stdio, which may allocate (a call made inside another is
	// not tracked); the walk it makes is __malloc_update_mallinfo's,
	// hooked itself. newlib-nano's mallinfo and malloc_stats walk in
	// _mallinfo_r.
	internal := func(name, family string) Func {
		return Func{Name: name, Family: family, Op: OpInternal, Ptr: -1, Size: -1, Count: -1}
	}
	for _, n := range []string{
		"mallinfo", "_mallinfo_r", "__malloc_update_mallinfo", "nano_mallinfo",
		"malloc_trim", "_malloc_trim_r", "malloc_usable_size", "_malloc_usable_size_r", "nano_malloc_usable_size",
		"mallopt", "_mallopt_r",
	} {
		fs = append(fs, internal(n, "newlib"))
	}
	for _, n := range []string{
		"vPortGetHeapStats", "xPortGetFreeHeapSize", "xPortGetMinimumEverFreeHeapSize",
		"xPortResetHeapMinimumEverFreeHeapSize", "vPortInitialiseBlocks", "vPortHeapResetState",
		"prvHeapInit", "prvInsertBlockIntoFreeList",
	} {
		fs = append(fs, internal(n, "freertos"))
	}
	for _, n := range []string{
		"_Znwj", "_Znaj", // new(size_t), new[](size_t)
		"_ZnwjRKSt9nothrow_t", "_ZnajRKSt9nothrow_t",
		"_ZnwjSt11align_val_t", "_ZnajSt11align_val_t",
		"_ZnwjSt11align_val_tRKSt9nothrow_t", "_ZnajSt11align_val_tRKSt9nothrow_t",
	} {
		fs = append(fs, Func{Name: n, Family: "c++", Op: OpAlloc, Ptr: -1, Size: 0, Count: -1, Header: newlibHeader})
	}
	for _, n := range []string{
		"_ZdlPv", "_ZdaPv", // delete(void*), delete[](void*)
		"_ZdlPvj", "_ZdaPvj", // sized
		"_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
		"_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
		"_ZdlPvjSt11align_val_t", "_ZdaPvjSt11align_val_t",
		"_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
	} {
		fs = append(fs, Func{Name: n, Family: "c++", Op: OpFree, Ptr: 0, Size: -1, Count: -1, Header: newlibHeader})
	}
	return fs
}

// CustomFuncs describes a user's allocator pair (--alloc FUNC --free
// FUNC): FUNC(size) and FUNC(ptr), with no known bookkeeping before the
// block (header 0 unless given).
func CustomFuncs(alloc, free string, header uint32) []Func {
	var fs []Func
	if alloc != "" {
		fs = append(fs, Func{Name: alloc, Family: "custom", Op: OpAlloc, Ptr: -1, Size: 0, Count: -1, Header: header})
	}
	if free != "" {
		fs = append(fs, Func{Name: free, Family: "custom", Op: OpFree, Ptr: 0, Size: -1, Count: -1, Header: header})
	}
	return fs
}
