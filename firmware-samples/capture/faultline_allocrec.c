/*
 * faultline_allocrec: records every live heap block with its size and the
 * return addresses of the code that allocated it, in a fixed table that a
 * crash dump carries to faultline (faultline_allocrec.h has the layout).
 *
 * ARMv7-M / ARMv7E-M Thumb-2 (Cortex-M3/M4/M7), arm-none-eabi-gcc or
 * clang --target=arm-none-eabi, any -O level. Link with
 *     -Wl,--wrap=malloc -Wl,--wrap=free -Wl,--wrap=calloc -Wl,--wrap=realloc
 * so that every call of those four (also from libraries linked in) reaches
 * the wrappers below, which call the real allocator (__real_malloc ...).
 *
 * How the return addresses are collected:
 *   - Each wrapper is three instructions of assembly: it copies SP and LR
 *     into the next free argument registers and branches (not calls) to the
 *     C part. So the C part sees the caller's SP and LR exactly as they
 *     were at the call, and returns straight to the caller.
 *   - ret[0] = that LR: the exact return address into the function that
 *     called malloc/calloc/realloc. Always right, whatever the compiler.
 *   - ret[1..] come from a bounded scan of the caller's stack upwards from
 *     that SP (at most FL_ALLOCREC_SCAN_WORDS words, never past _estack):
 *     a word counts as a return address when it is odd (Thumb), lies in
 *     [fl_allocrec_text_start, fl_allocrec_text_end) and the instruction
 *     before it is a BL or a BLX Rm. No frame pointer and no unwind tables
 *     are needed, and it costs a few loads per stack word.
 *   What the scan can get wrong: a stale return address left in a slot the
 *   caller has not overwritten (an uninitialised local, an old frame's
 *   spill) looks just like a live one, so a scanned address may name a
 *   function that is no longer on the stack; a frame larger than the scan
 *   window, or a caller that keeps its return address in a register (a
 *   leaf that tail-calls malloc), hides the callers above it; a tail call
 *   leaves no return address at all. The reader says which addresses were
 *   scanned.
 *
 * What it can miss: allocations made through other entry points (newlib's
 * _malloc_r family called directly, memalign, a second allocator such as
 * FreeRTOS pvPortMalloc: wrap those the same way); allocations beyond
 * FL_ALLOCREC_ENTRIES live blocks (counted in `dropped`); a free of a block
 * that was dropped counts in `unknown_frees`.
 *
 * Concurrency: the table is changed with interrupts masked (PRIMASK) for a
 * few instructions; the allocator itself is called outside that section,
 * so an interrupt between the real malloc returning and the entry being
 * written can free the block before it is recorded (it then counts as an
 * unknown free, and the stale entry stays). An entry is written before
 * count grows, so a crash in the middle leaves no half-written live entry.
 */
#include "faultline_allocrec.h"

#if FL_ALLOCREC_DEPTH < 1 || FL_ALLOCREC_DEPTH > 16
#error "FL_ALLOCREC_DEPTH must be 1..16"
#endif

_Static_assert(sizeof(struct fl_allocrec_header) == 32, "header layout");
_Static_assert(sizeof(struct fl_allocrec_entry) == 8 + 4 * FL_ALLOCREC_DEPTH, "entry layout");

__attribute__((used)) struct fl_allocrec fl_allocrec = {
	.h = {
		.magic = FL_ALLOCREC_MAGIC,
		.version = FL_ALLOCREC_VERSION,
		.header_size = sizeof(struct fl_allocrec_header),
		.entry_size = sizeof(struct fl_allocrec_entry),
		.depth = FL_ALLOCREC_DEPTH,
		.capacity = FL_ALLOCREC_ENTRIES,
	},
};

/* Weak: absent symbols are 0 and turn the scan off (or its upper bound). */
extern const char fl_allocrec_text_start[] __attribute__((weak));
extern const char fl_allocrec_text_end[] __attribute__((weak));
extern const char _estack[] __attribute__((weak));

void *__real_malloc(size_t n);
void __real_free(void *p);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);

/* The C parts (external: the assembly wrappers branch to them). */
void *fl_allocrec_malloc(size_t n, uint32_t sp, uint32_t lr);
void fl_allocrec_free(void *p, uint32_t sp, uint32_t lr);
void *fl_allocrec_calloc(size_t n, size_t size, uint32_t sp, uint32_t lr);
void *fl_allocrec_realloc(void *p, size_t n, uint32_t sp, uint32_t lr);

/* The wrappers: SP and LR as they were at the call into the free argument
 * registers, then a tail branch, so LR still returns to the caller. */
__asm__(
	"	.syntax unified\n"
	"	.thumb\n"
	"	.section .text.__wrap_malloc,\"ax\",%progbits\n"
	"	.global __wrap_malloc\n"
	"	.type __wrap_malloc, %function\n"
	"	.thumb_func\n"
	"__wrap_malloc:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_malloc\n"
	"	.size __wrap_malloc, . - __wrap_malloc\n"
	"	.section .text.__wrap_free,\"ax\",%progbits\n"
	"	.global __wrap_free\n"
	"	.type __wrap_free, %function\n"
	"	.thumb_func\n"
	"__wrap_free:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_free\n"
	"	.size __wrap_free, . - __wrap_free\n"
	"	.section .text.__wrap_calloc,\"ax\",%progbits\n"
	"	.global __wrap_calloc\n"
	"	.type __wrap_calloc, %function\n"
	"	.thumb_func\n"
	"__wrap_calloc:\n"
	"	mov r2, sp\n"
	"	mov r3, lr\n"
	"	b.w fl_allocrec_calloc\n"
	"	.size __wrap_calloc, . - __wrap_calloc\n"
	"	.section .text.__wrap_realloc,\"ax\",%progbits\n"
	"	.global __wrap_realloc\n"
	"	.type __wrap_realloc, %function\n"
	"	.thumb_func\n"
	"__wrap_realloc:\n"
	"	mov r2, sp\n"
	"	mov r3, lr\n"
	"	b.w fl_allocrec_realloc\n"
	"	.size __wrap_realloc, . - __wrap_realloc\n"
	"	.text\n");

#ifdef FL_ALLOCREC_FREERTOS
/* FreeRTOS's portable heap (heap_1..heap_5): build with
 * -DFL_ALLOCREC_FREERTOS and link with -Wl,--wrap=pvPortMalloc
 * -Wl,--wrap=vPortFree. */
void *__real_pvPortMalloc(size_t n);
void __real_vPortFree(void *p);
void *fl_allocrec_port_malloc(size_t n, uint32_t sp, uint32_t lr);
void fl_allocrec_port_free(void *p, uint32_t sp, uint32_t lr);

__asm__(
	"	.syntax unified\n"
	"	.thumb\n"
	"	.section .text.__wrap_pvPortMalloc,\"ax\",%progbits\n"
	"	.global __wrap_pvPortMalloc\n"
	"	.type __wrap_pvPortMalloc, %function\n"
	"	.thumb_func\n"
	"__wrap_pvPortMalloc:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_port_malloc\n"
	"	.size __wrap_pvPortMalloc, . - __wrap_pvPortMalloc\n"
	"	.section .text.__wrap_vPortFree,\"ax\",%progbits\n"
	"	.global __wrap_vPortFree\n"
	"	.type __wrap_vPortFree, %function\n"
	"	.thumb_func\n"
	"__wrap_vPortFree:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_port_free\n"
	"	.size __wrap_vPortFree, . - __wrap_vPortFree\n"
	"	.text\n");
#endif

static inline uint32_t irq_save(void)
{
	uint32_t m;
	__asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(m)::"memory");
	return m;
}

static inline void irq_restore(uint32_t m)
{
	__asm volatile("msr primask, %0" ::"r"(m) : "memory");
}

/* is_call_return: the halfwords before the return address a (even) are a
 * 32-bit BL (first halfword 11110..., second 11x1...) or a 16-bit BLX Rm
 * (010001111xxxx000). */
static int is_call_return(uint32_t a)
{
	const volatile uint16_t *h = (const volatile uint16_t *)(uintptr_t)a;
	if ((h[-1] & 0xff87u) == 0x4780u)
		return 1;
	return (h[-2] & 0xf800u) == 0xf000u && (h[-1] & 0xd000u) == 0xd000u;
}

/* fill writes the entry into e: ret[0] = lr, ret[1..] from the scan. */
static void fill(struct fl_allocrec_entry *e, void *p, uint32_t size, uint32_t sp, uint32_t lr)
{
	e->addr = (uint32_t)(uintptr_t)p;
	e->size = size;
	e->ret[0] = lr;
	for (unsigned i = 1; i < FL_ALLOCREC_DEPTH; i++)
		e->ret[i] = 0;
	uint32_t lo = (uint32_t)(uintptr_t)fl_allocrec_text_start;
	uint32_t hi = (uint32_t)(uintptr_t)fl_allocrec_text_end;
	uint32_t top = (uint32_t)(uintptr_t)_estack;
	if (lo == 0 || hi <= lo + 4 || FL_ALLOCREC_DEPTH < 2)
		return;
	const volatile uint32_t *w = (const volatile uint32_t *)(uintptr_t)sp;
	unsigned k = 1;
	for (unsigned i = 0; i < FL_ALLOCREC_SCAN_WORDS && k < FL_ALLOCREC_DEPTH; i++) {
		uint32_t at = sp + 4u * i;
		if (top != 0 && sp < top && at >= top)
			break;
		uint32_t v = w[i];
		if ((v & 1u) == 0)
			continue;
		uint32_t a = v & ~1u;
		if (a < lo + 4 || a >= hi || !is_call_return(a))
			continue;
		if (v == e->ret[k - 1])
			continue; /* the same return address again (a saved copy) */
		e->ret[k++] = v;
	}
}

static void add(const struct fl_allocrec_entry *e)
{
	uint32_t m = irq_save();
	struct fl_allocrec_header *h = &fl_allocrec.h;
	if (fl_allocrec_text_start != 0 && fl_allocrec_text_end != 0)
		h->flags |= FL_ALLOCREC_FLAG_SCAN;
	if (h->count < FL_ALLOCREC_ENTRIES) {
		fl_allocrec.entries[h->count] = *e;
		h->count++;
	} else {
		h->dropped++;
	}
	irq_restore(m);
}

/* forget removes p's entry (the last entry moves into its slot); 1 if it
 * was there. */
static int forget(void *p)
{
	uint32_t a = (uint32_t)(uintptr_t)p;
	int found = 0;
	uint32_t m = irq_save();
	struct fl_allocrec_header *h = &fl_allocrec.h;
	uint32_t n = h->count <= FL_ALLOCREC_ENTRIES ? h->count : FL_ALLOCREC_ENTRIES;
	for (uint32_t i = 0; i < n; i++) {
		if (fl_allocrec.entries[i].addr == a) {
			fl_allocrec.entries[i] = fl_allocrec.entries[n - 1];
			h->count = n - 1;
			found = 1;
			break;
		}
	}
	if (!found)
		h->unknown_frees++;
	irq_restore(m);
	return found;
}

void fl_allocrec_retag(void *p, uint32_t size, uint32_t sp, uint32_t lr)
{
	struct fl_allocrec_entry e;
	uint32_t a = (uint32_t)(uintptr_t)p;
	fill(&e, p, size, sp, lr);
	uint32_t m = irq_save();
	struct fl_allocrec_header *h = &fl_allocrec.h;
	uint32_t n = h->count <= FL_ALLOCREC_ENTRIES ? h->count : FL_ALLOCREC_ENTRIES;
	/* Newest first: the entry was appended by the malloc just before. */
	for (uint32_t i = n; i > 0; i--) {
		if (fl_allocrec.entries[i - 1].addr == a) {
			fl_allocrec.entries[i - 1] = e;
			irq_restore(m);
			return;
		}
	}
	/* Not recorded by the malloc inside: a full table (already counted in
	 * dropped), or an operator new that does not use malloc. */
	int full = n >= FL_ALLOCREC_ENTRIES;
	irq_restore(m);
	if (!full)
		add(&e);
}

void *fl_allocrec_malloc(size_t n, uint32_t sp, uint32_t lr)
{
	void *p = __real_malloc(n);
	if (p != 0) {
		struct fl_allocrec_entry e;
		fill(&e, p, (uint32_t)n, sp, lr);
		add(&e);
	}
	return p;
}

void fl_allocrec_free(void *p, uint32_t sp, uint32_t lr)
{
	(void)sp;
	(void)lr;
	if (p != 0)
		(void)forget(p); /* before the real free: the address may be reused at once */
	__real_free(p);
}

void *fl_allocrec_calloc(size_t n, size_t size, uint32_t sp, uint32_t lr)
{
	void *p = __real_calloc(n, size);
	if (p != 0) {
		struct fl_allocrec_entry e;
		fill(&e, p, (uint32_t)(n * size), sp, lr);
		add(&e);
	}
	return p;
}

/* realloc: the block keeps one entry, with the new address, the new size
 * and the realloc call's return addresses. realloc(p, 0) returning NULL is
 * taken as a free (newlib frees the block then). */
void *fl_allocrec_realloc(void *p, size_t n, uint32_t sp, uint32_t lr)
{
	void *q = __real_realloc(p, n);
	if (q == 0) {
		if (n == 0 && p != 0)
			(void)forget(p);
		return q;
	}
	if (p != 0)
		(void)forget(p);
	struct fl_allocrec_entry e;
	fill(&e, q, (uint32_t)n, sp, lr);
	add(&e);
	return q;
}

#ifdef FL_ALLOCREC_FREERTOS
void *fl_allocrec_port_malloc(size_t n, uint32_t sp, uint32_t lr)
{
	void *p = __real_pvPortMalloc(n);
	if (p != 0) {
		struct fl_allocrec_entry e;
		fill(&e, p, (uint32_t)n, sp, lr);
		add(&e);
	}
	return p;
}

void fl_allocrec_port_free(void *p, uint32_t sp, uint32_t lr)
{
	(void)sp;
	(void)lr;
	if (p != 0)
		(void)forget(p);
	__real_vPortFree(p);
}
#endif
