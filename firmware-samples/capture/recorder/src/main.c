/*
 * The allocation recorder's sample firmware: allocates at known sites
 * through newlib's malloc, calloc and realloc (wrapped by
 * faultline_allocrec.c), frees some blocks and leaks the others, then
 * faults (an undefined instruction, a HardFault) so that the capture
 * handler dumps RAM with the recorder's table.
 *
 * The live blocks at the crash, by the function that called the allocator
 * (the "planted sites" the tests expect, and nothing else):
 *   frame_buffer_new  malloc(512)              1 block
 *   msg_new           malloc(44)               3 blocks (a 4th is freed)
 *   table_grow        realloc to 96 bytes      1 block (calloc'd by table_new)
 *   name_copy         malloc(9) "sensor-a"     1 block ("tmp" is freed)
 * scratch_use's malloc(200) is freed and must not appear.
 *
 * Every site does something after the allocator returns, so no compiler
 * turns the call into a tail call (which would leave the site's own
 * return address off the stack).
 */
#include <stdlib.h>
#include <string.h>

#include "fw.h"

volatile uint32_t fw_sink;

struct msg {
	uint32_t id;
	char body[40];
};

FW_NOINLINE struct msg *msg_new(uint32_t id)
{
	struct msg *m = malloc(sizeof *m);
	if (m != NULL) {
		m->id = id;
		m->body[0] = 0;
	}
	return m;
}

FW_NOINLINE char *name_copy(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

FW_NOINLINE uint32_t *table_new(unsigned n)
{
	uint32_t *t = calloc(n, sizeof *t);
	fw_sink += (uint32_t)(uintptr_t)t;
	return t;
}

FW_NOINLINE uint32_t *table_grow(uint32_t *t, unsigned n)
{
	uint32_t *g = realloc(t, n * sizeof *t);
	if (g != NULL)
		g[n - 1] = n;
	return g;
}

FW_NOINLINE uint8_t *frame_buffer_new(void)
{
	uint8_t *fb = malloc(512);
	if (fb != NULL)
		memset(fb, 0x5a, 512);
	return fb;
}

FW_NOINLINE void scratch_use(void)
{
	uint8_t *s = malloc(200);
	if (s != NULL) {
		s[0] = 1;
		fw_sink += s[0];
	}
	free(s);
}

static struct msg *inbox[4];
static char *names[2];
static uint32_t *table;
static uint8_t *fb;

FW_NOINLINE void plant_messages(void)
{
	for (uint32_t i = 0; i < 4; i++)
		inbox[i] = msg_new(i + 1);
	free(inbox[1]); /* one freed between live ones */
	inbox[1] = NULL;
}

FW_NOINLINE void plant_tables(void)
{
	table = table_new(8);
	scratch_use();
	table = table_grow(table, 24);
}

FW_NOINLINE void plant_names(void)
{
	names[0] = name_copy("sensor-a");
	names[1] = name_copy("tmp");
	free(names[1]);
	names[1] = NULL;
}

/* The crash: an undefined instruction two calls down (inline assembly,
 * not __builtin_trap: the compilers then do not take fault_now as
 * noreturn, so every call keeps a normal return address). */
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
	plant_messages();
	fb = frame_buffer_new();
	plant_tables();
	plant_names();
	process((uint32_t)(uintptr_t)inbox[0] + (uint32_t)(uintptr_t)fb);
	return 0;
}
