/*
 * Test program for elfsym: inline chains, a function removed by
 * --gc-sections, a RAM function and a sizeless assembly symbol.
 */
#include <stdint.h>

volatile uint32_t sink;
volatile uint32_t *volatile device = (uint32_t *)0x40000000;

/* Depth-3 inline chain: leaf <- middle <- outer, all really inlined at -O2. */
static inline __attribute__((always_inline)) uint32_t leaf(uint32_t x)
{
	sink = x * 3u;		/* a store keeps the body alive */
	return x ^ (x >> 3);
}

static inline __attribute__((always_inline)) uint32_t middle(uint32_t x)
{
	uint32_t a = leaf(x + 1u);
	uint32_t b = leaf(x * 7u);
	return a + b;
}

static inline __attribute__((always_inline)) uint32_t outer(uint32_t x)
{
	uint32_t s = 0;
	for (uint32_t i = 0; i < x; i++)
		s += middle(i);
	return s;
}

__attribute__((noinline)) uint32_t compute(uint32_t n)
{
	return outer(n) + leaf(n);
}

/* Big and never called: --gc-sections removes it and its DWARF ends up at
 * address 0, overlapping the vector table and the first functions. */
uint32_t unused_big(uint32_t n)
{
	uint32_t acc = 0;
	for (uint32_t i = 0; i < n; i++) {
		acc += device[i & 7] * 31u;
		acc ^= device[(i + 3) & 7] << 2;
		acc += middle(acc);
		acc -= device[(i + 5) & 7];
		if (acc & 0x100)
			acc += outer(i);
	}
	return acc;
}

__attribute__((section(".ramfunc"), noinline)) uint32_t ram_add(uint32_t a, uint32_t b)
{
	return a + b + sink;
}

__attribute__((noinline)) void crash(void)
{
	*device = compute(sink);
	for (;;)
		;
}

/* A function without a size: defined in assembly with no .size. */
__asm__(".text\n"
	".global asm_nosize\n"
	".type asm_nosize, %function\n"
	".thumb_func\n"
	"asm_nosize:\n"
	"	movs r0, #1\n"
	"	bx lr\n"
	"	.balign 4\n"
	"	.word 0x12345678\n"
	"asm_after:\n"
	"	nop\n");

uint32_t asm_nosize(void);

__attribute__((noinline)) int main(void)
{
	sink = ram_add(1, 2) + asm_nosize();
	crash();
	return 0;
}
