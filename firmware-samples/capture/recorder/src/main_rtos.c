/*
 * The allocation recorder's FreeRTOS-heap sample: allocates through
 * pvPortMalloc/vPortFree (the heap_4-style allocator of
 * firmware-samples/heap/src/heap4.c, wrapped by faultline_allocrec.c built
 * with -DFL_ALLOCREC_FREERTOS), frees some blocks, leaks the others, then
 * faults like the C sample (src/main.c).
 *
 * The live blocks at the crash, by the function that called pvPortMalloc
 * (the planted sites the tests expect, and nothing else):
 *   stack_new   pvPortMalloc(256)   1 block
 *   queue_new   pvPortMalloc(60)    2 blocks (a 3rd is freed)
 *   timer_new   pvPortMalloc(24)    1 block
 * scratch_use's block is freed and must not appear.
 */
#include <stddef.h>

#include "fw.h"
#include "heap4.h"

volatile uint32_t fw_sink;

FW_NOINLINE uint32_t *stack_new(void)
{
	uint32_t *s = pvPortMalloc(256);
	if (s != NULL)
		s[0] = 0xa5a5a5a5u;
	return s;
}

FW_NOINLINE uint8_t *queue_new(uint32_t tag)
{
	uint8_t *q = pvPortMalloc(60);
	if (q != NULL)
		q[0] = (uint8_t)tag;
	return q;
}

FW_NOINLINE uint32_t *timer_new(uint32_t period)
{
	uint32_t *t = pvPortMalloc(24);
	if (t != NULL)
		t[0] = period;
	return t;
}

FW_NOINLINE void scratch_use(void)
{
	uint8_t *s = pvPortMalloc(100);
	if (s != NULL) {
		s[0] = 1;
		fw_sink += s[0];
	}
	vPortFree(s);
}

static uint8_t *queues[3];
static uint32_t *stack;
static uint32_t *timer;

FW_NOINLINE void plant(void)
{
	for (uint32_t i = 0; i < 3; i++)
		queues[i] = queue_new(i);
	vPortFree(queues[1]);
	queues[1] = NULL;
	scratch_use();
	stack = stack_new();
	timer = timer_new(100);
}

FW_NOINLINE void fault_now(uint32_t v)
{
	fw_sink = v;
	__asm volatile("udf #1" ::: "memory");
}

FW_NOINLINE void process(uint32_t v)
{
	fault_now(v * 3);
	fw_sink += v;
}

int main(void)
{
	plant();
	process((uint32_t)(uintptr_t)stack + (uint32_t)(uintptr_t)timer);
	return 0;
}
