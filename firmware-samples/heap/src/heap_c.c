/*
 * C scenarios with newlib's malloc (the full mallocr, libc.a): each
 * scenario plants one kind of heap bug at a known place.
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "fw.h"

volatile uint32_t heap_scenario;
volatile uint32_t heap_iterations = 1000;
volatile uint32_t fw_sink;

struct packet {
	uint32_t id;
	uint8_t payload[44];
};

/* Kept so that a leaked block's pointer is still reachable in RAM. */
static void *volatile keep[8];

FW_NOINLINE static struct packet *make_packet(uint32_t id)
{
	struct packet *p = malloc(sizeof *p);
	if (p != NULL) {
		p->id = id;
		memset(p->payload, (int)id, sizeof p->payload);
	}
	return p;
}

FW_NOINLINE static char *copy_name(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d != NULL)
		memcpy(d, s, n);
	return d;
}

/* Allocates and frees with every entry point: nothing leaks. */
FW_NOINLINE static void clean_run(void)
{
	for (int i = 0; i < 4; i++) {
		struct packet *p = make_packet((uint32_t)i);
		uint32_t *v = calloc(8, sizeof *v);
		char *s = copy_name("sensor-0");
		v = realloc(v, 32 * sizeof *v);
		fw_sink += p->id + v[3] + (uint32_t)s[0];
		free(s);
		free(v);
		free(p);
	}
	void *a = memalign(32, 64);
	fw_sink += (uint32_t)(uintptr_t)a & 31u;
	free(a);
	free(NULL);
}

/* 3 packets (48 bytes each) and one name (20 bytes) are never freed. The
 * count is volatile so that the loop keeps one call site. */
static volatile uint32_t leaked_packets = 3;

FW_NOINLINE static void leak_packets(void)
{
	for (uint32_t i = 0; i < leaked_packets; i++)
		keep[i] = make_packet(100 + i);
}

FW_NOINLINE static void leak_name(void)
{
	keep[3] = copy_name("leaked-name-0123456");
}

FW_NOINLINE static void double_free(void)
{
	char *p = malloc(16);
	char *volatile again = p; /* hides the bug from the compiler */
	p[0] = 1;
	fw_sink += (uint32_t)p[0];
	free(p);
	free(again);
}

FW_NOINLINE static void invalid_free(void)
{
	char *p = malloc(32);
	p[0] = 2;
	char *volatile inside = p + 8; /* hides the bug from the compiler */
	free(inside);
	keep[4] = p;
}

FW_NOINLINE static void use_after_free(void)
{
	uint32_t *p = malloc(32);
	volatile uint32_t *volatile dangling = p;
	p[0] = 3;
	free(p);
	dangling[2] = 0xdeadu; /* write into the freed block */
}

FW_NOINLINE static void fill(char *dst, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = (char)('a' + i);
}

FW_NOINLINE static void overflow(void)
{
	char *p = malloc(20);
	char *guard = malloc(20);
	fill(p, 24); /* 4 bytes too many: into guard's chunk header */
	fw_sink += (uint32_t)p[0] + (uint32_t)guard[0];
	keep[5] = p;
	keep[6] = guard;
}

FW_NOINLINE static void busy(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		void *a = malloc(16 + (i & 63));
		void *b = malloc(8);
		fw_sink += (uint32_t)(uintptr_t)a ^ (uint32_t)(uintptr_t)b;
		free(a);
		free(b);
	}
}

/* Asks the allocator about itself while it has a free chunk between live
 * ones: mallinfo walks the free chunks (reads of free memory by the
 * allocator, by design) and malloc_usable_size reads a chunk's header.
 * (newlib-nano has no _malloc_trim_r behind malloc_trim.) Nothing leaks. */
FW_NOINLINE static void alloc_stats(void)
{
	/* Through keep[]: the compiler may not drop an unused malloc/free pair. */
	keep[0] = malloc(40);
	keep[1] = malloc(100);
	keep[2] = malloc(24);
	free(keep[1]);
	struct mallinfo mi = mallinfo();
	fw_sink += (uint32_t)mi.uordblks + (uint32_t)mi.fordblks + (uint32_t)malloc_usable_size(keep[0]);
	free(keep[0]);
	free(keep[2]);
	mi = mallinfo();
	fw_sink += (uint32_t)mi.arena;
}

/* An off-by-one fill loop: n + 1 words. */
FW_NOINLINE static void fill_words(uint32_t *dst, uint32_t n)
{
	for (uint32_t i = 0; i <= n; i++)
		dst[i] = i;
}

/* The 7th word lands 0-3 bytes past a 24-byte block, the last one: still
 * inside newlib's chunk (its usable size is 28), past newlib-nano's. */
FW_NOINLINE static void slack_overflow(void)
{
	uint32_t *p = malloc(24);
	fill_words(p, 24 / sizeof *p);
	keep[5] = p;
}

extern volatile uint32_t *volatile fw_null;
volatile uint32_t *volatile fw_null;

/* Keeps the only pointer to a block in its own frame, then returns: the
 * pointer stays in the dead part of the stack, which is no root. The
 * frame is large so that the exception entry's stacking below the
 * caller's SP does not overwrite the word. */
FW_NOINLINE static void drop_on_stack(void)
{
	void *volatile local[16];
	local[0] = malloc(40);
	for (int i = 1; i < 16; i++)
		local[i] = 0;
	fw_sink += (uint32_t)(uintptr_t)local[0] & 1u;
}

/* Overwrites r0-r3 (the arguments), so that no register still holds a
 * pointer the scan would count as a root (not static: the compiler must
 * pass the arguments). */
uint32_t heap_scrub(uint32_t a, uint32_t b, uint32_t c, uint32_t d);
FW_NOINLINE uint32_t heap_scrub(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return a + b + c + d;
}

FW_NOINLINE static void lose_blocks(void)
{
	keep[7] = malloc(32);
	keep[7] = NULL; /* its only pointer overwritten */
	keep[6] = malloc(24); /* still reachable */
	drop_on_stack();
	/* The last block before newlib's top chunk, whose header (which
	 * newlib's own state points to) lies inside the 12 bytes asked for. */
	keep[5] = malloc(12);
	keep[5] = NULL;
	fw_sink += heap_scrub(1, 2, 3, 4);
	*fw_null = 1; /* HardFault: the run ends with the dead frame intact */
}

FW_NOINLINE static void crash(void)
{
	leak_packets();
	keep[6] = malloc(64);
	keep[7] = malloc(24);
	free(keep[6]); /* a free chunk between live ones */
	*fw_null = 1; /* HardFault (NULL is unmapped on the emulator's map) */
}

int main(void)
{
	switch (heap_scenario) {
	case HEAP_CLEAN:
		clean_run();
		break;
	case HEAP_LEAKS:
		clean_run();
		leak_packets();
		leak_name();
		break;
	case HEAP_DOUBLE_FREE:
		double_free();
		break;
	case HEAP_INVALID_FREE:
		invalid_free();
		free(keep[4]);
		break;
	case HEAP_USE_AFTER_FREE:
		use_after_free();
		break;
	case HEAP_OVERFLOW:
		overflow();
		break;
	case HEAP_CRASH:
		crash();
		break;
	case HEAP_BUSY:
		busy(heap_iterations);
		break;
	case HEAP_BUSY_CRASH:
		busy(heap_iterations);
		crash();
		break;
	case HEAP_ALLOC_STATS:
		alloc_stats();
		break;
	case HEAP_SLACK_OVERFLOW:
		slack_overflow();
		break;
	case HEAP_LOST:
		lose_blocks();
		break;
	}
	return 0;
}
