/*
 * Scenarios on the heap_4-style allocator (heap4.c): each scenario plants
 * one kind of heap bug at a known place.
 */
#include <string.h>

#include "fw.h"
#include "heap4.h"

volatile uint32_t heap_scenario;
volatile uint32_t heap_iterations = 1000;
volatile uint32_t fw_sink;

struct msg {
	uint32_t len;
	uint8_t body[36];
};

static void *volatile keep[8];
static volatile uint32_t leaked_msgs = 2;

FW_NOINLINE static struct msg *new_msg(uint32_t len)
{
	struct msg *m = pvPortMalloc(sizeof *m);
	if (m != NULL)
		m->len = len;
	return m;
}

FW_NOINLINE static void clean_run(void)
{
	for (uint32_t i = 0; i < 3; i++) {
		struct msg *a = new_msg(i);
		uint8_t *b = pvPortMalloc(100);
		memset(b, 1, 100);
		fw_sink += a->len + b[7];
		vPortFree(a);
		vPortFree(b);
	}
	vPortFree(NULL);
}

FW_NOINLINE static void leak_msgs(void)
{
	for (uint32_t i = 0; i < leaked_msgs; i++)
		keep[i] = new_msg(i);
}

FW_NOINLINE static void leak_table(void)
{
	keep[2] = pvPortMalloc(200);
}

FW_NOINLINE static void double_free(void)
{
	struct msg *m = new_msg(1);
	struct msg *volatile again = m; /* hides the bug from the compiler */
	vPortFree(m);
	vPortFree(again);
}

FW_NOINLINE static void invalid_free(void)
{
	static uint8_t not_heap[16];
	uint8_t *volatile p = not_heap;
	vPortFree(p + 8);
}

FW_NOINLINE static void use_after_free(void)
{
	struct msg *m = new_msg(7);
	volatile struct msg *volatile dangling = m;
	vPortFree(m);
	dangling->body[4] = 9; /* write into the freed block */
}

FW_NOINLINE static void fill(uint8_t *dst, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = (uint8_t)i;
}

FW_NOINLINE static void overflow(void)
{
	uint8_t *a = pvPortMalloc(24);
	uint8_t *b = pvPortMalloc(24);
	fill(a, 28); /* 4 bytes too many: into b's BlockLink_t */
	keep[3] = a;
	keep[4] = b;
}

FW_NOINLINE static void busy(uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		void *a = pvPortMalloc(16 + (i & 63));
		void *b = pvPortMalloc(8);
		fw_sink += (uint32_t)(uintptr_t)a ^ (uint32_t)(uintptr_t)b;
		vPortFree(a);
		vPortFree(b);
	}
}

/* Asks the allocator for its statistics while a free block starts inside
 * memory freed earlier (a block split off a freed one): the walk of the
 * free list reads it, by design. Nothing leaks. */
FW_NOINLINE static void alloc_stats(void)
{
	void *big = pvPortMalloc(100);
	void *hold = pvPortMalloc(16);
	vPortFree(big);
	void *small = pvPortMalloc(16); /* split off big's block */
	HeapStats_t st;
	vPortGetHeapStats(&st);
	fw_sink += (uint32_t)(st.xAvailableHeapSpaceInBytes + st.xNumberOfFreeBlocks + xPortGetFreeHeapSize());
	vPortFree(small);
	vPortFree(hold);
}

/* An off-by-one fill loop: n + 1 words. */
FW_NOINLINE static void fill_words(uint32_t *dst, uint32_t n)
{
	for (uint32_t i = 0; i <= n; i++)
		dst[i] = i;
}

/* The 7th word lands just past a 24-byte block, the last one: into the
 * header of the free block split off after it. */
FW_NOINLINE static void slack_overflow(void)
{
	uint32_t *p = pvPortMalloc(24);
	fill_words(p, 24 / sizeof *p);
	keep[5] = p;
}

extern volatile uint32_t *volatile fw_null;
volatile uint32_t *volatile fw_null;

FW_NOINLINE static void crash(void)
{
	leak_msgs();
	void *hole = pvPortMalloc(64);
	keep[5] = pvPortMalloc(24);
	vPortFree(hole); /* a free block between live ones */
	*fw_null = 1;    /* HardFault */
}

int main(void)
{
	switch (heap_scenario) {
	case HEAP_CLEAN:
		clean_run();
		break;
	case HEAP_LEAKS:
		clean_run();
		leak_msgs();
		leak_table();
		break;
	case HEAP_DOUBLE_FREE:
		double_free();
		break;
	case HEAP_INVALID_FREE:
		invalid_free();
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
	}
	return 0;
}
