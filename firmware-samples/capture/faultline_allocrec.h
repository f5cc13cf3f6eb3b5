/*
 * faultline_allocrec: an optional device-side allocation recorder that goes
 * with the capture handler (faultline_capture.c). It keeps a fixed table of
 * the live heap blocks, each with its size and up to FL_ALLOCREC_DEPTH
 * return addresses of the code that allocated it, filled by wrapping the
 * allocator at link time:
 *
 *   -Wl,--wrap=malloc -Wl,--wrap=free -Wl,--wrap=calloc -Wl,--wrap=realloc
 *
 * (FreeRTOS: build it with -DFL_ALLOCREC_FREERTOS and link with
 * -Wl,--wrap=pvPortMalloc -Wl,--wrap=vPortFree instead or as well)
 * and, for C++, faultline_allocrec_cxx.cpp with -Wl,--wrap=_Znwj
 * -Wl,--wrap=_Znaj -Wl,--wrap=_ZnwjRKSt9nothrow_t
 * -Wl,--wrap=_ZnajRKSt9nothrow_t (operator new, new[] and their nothrow
 * forms: the block then names the caller of new, not operator new).
 *
 * The table lives in RAM under the symbol `fl_allocrec`; when the capture
 * handler (or a debugger) dumps that RAM, `faultline analyze --elf FW.elf
 * DUMP` finds the table by its symbol, checks it and names the call sites
 * of the biggest live allocations. See recorder/README.md.
 *
 * Layout (little-endian, version 1), what the reader checks:
 *
 *   offset  size  field
 *   0       4     magic        FL_ALLOCREC_MAGIC ("FLAR")
 *   4       2     version      FL_ALLOCREC_VERSION
 *   6       2     header_size  bytes before entries[0] (32)
 *   8       2     entry_size   bytes per entry (8 + 4 * depth)
 *   10      2     depth        return addresses per entry (N)
 *   12      4     capacity     entries in the table
 *   16      4     count        live entries: entries[0..count) are valid
 *   20      4     dropped      allocations not recorded (the table was full)
 *   24      4     unknown_frees frees/reallocs of a pointer not in the table
 *   28      4     flags        bit 0: the stack scan was on (text bounds known)
 *   32      ...   entries[capacity]: {addr, size, ret[depth]}
 *
 * ret[0] is the LR at the wrapper's entry: the exact return address into
 * the function that called malloc/calloc/realloc. ret[1..] come from a
 * bounded scan of the caller's stack (see faultline_allocrec.c): likely
 * return addresses, not proven ones. A 0 ends the list.
 */
#ifndef FAULTLINE_ALLOCREC_H
#define FAULTLINE_ALLOCREC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FL_ALLOCREC_MAGIC 0x52414c46u /* "FLAR" in memory order */
#define FL_ALLOCREC_VERSION 1u

/* Entries in the table: live blocks beyond this are counted in dropped. */
#ifndef FL_ALLOCREC_ENTRIES
#define FL_ALLOCREC_ENTRIES 64
#endif

/* Return addresses per entry (1..16): ret[0] exact, the rest scanned. */
#ifndef FL_ALLOCREC_DEPTH
#define FL_ALLOCREC_DEPTH 4
#endif

/* Words of the caller's stack the scan reads at most, per allocation. */
#ifndef FL_ALLOCREC_SCAN_WORDS
#define FL_ALLOCREC_SCAN_WORDS 96
#endif

struct fl_allocrec_entry {
	uint32_t addr; /* what the allocator returned */
	uint32_t size; /* the size asked for (calloc: count * size) */
	uint32_t ret[FL_ALLOCREC_DEPTH];
};

struct fl_allocrec_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint16_t entry_size;
	uint16_t depth;
	uint32_t capacity;
	uint32_t count;
	uint32_t dropped;
	uint32_t unknown_frees;
	uint32_t flags;
};

#define FL_ALLOCREC_FLAG_SCAN 1u

struct fl_allocrec {
	struct fl_allocrec_header h;
	struct fl_allocrec_entry entries[FL_ALLOCREC_ENTRIES];
};

/* The table (in .data: valid from reset, before the first allocation). */
extern struct fl_allocrec fl_allocrec;

/*
 * For faultline_allocrec_cxx.cpp (C++ operator new): give the entry of
 * block p, which the wrapped malloc inside operator new recorded with
 * ret[0] inside operator new, the return addresses of operator new's
 * caller (SP and LR as they were at that call); record it anew if the
 * table does not hold it.
 */
void fl_allocrec_retag(void *p, uint32_t size, uint32_t sp, uint32_t lr);

/*
 * Text bounds for the stack scan: define these two symbols (linker script,
 * or --defsym) around the code, e.g.
 *     fl_allocrec_text_start = ADDR(.text);
 *     fl_allocrec_text_end = ADDR(.text) + SIZEOF(.text);
 * Without them (weak references) only ret[0] is recorded. The scan stops
 * at `_estack` when the link defines it.
 */

#ifdef __cplusplus
}
#endif

#endif
