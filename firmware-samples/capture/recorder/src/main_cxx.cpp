/*
 * The allocation recorder's C++ sample: allocates with operator new, new[]
 * and the nothrow new (wrapped by ../faultline_allocrec_cxx.cpp) and with
 * malloc from C++, deletes some blocks, leaks the others, then faults like
 * the C sample (src/main.c).
 *
 * The live blocks at the crash, by the function that called the allocator
 * (the planted sites the tests expect, and nothing else):
 *   make_buffer   new uint8_t[300]           1 block
 *   make_widget   new Widget (40 bytes)      2 blocks (a 3rd is deleted)
 *   raw_copy      malloc(20)                 1 block
 *   try_sample    new (std::nothrow) Sample  1 block (16 bytes)
 * scratch's new[] is deleted and must not appear.
 */
#include <cstdlib>
#include <cstring>
#include <new>

#include "fw.h"

extern "C" {
volatile uint32_t fw_sink;
}

struct Widget {
	uint32_t id;
	uint32_t pins[9];
};

struct Sample {
	uint32_t t;
	uint32_t v[3];
};

FW_NOINLINE Widget *make_widget(uint32_t id)
{
	Widget *w = new Widget;
	w->id = id;
	fw_sink += w->id;
	return w;
}

FW_NOINLINE uint8_t *make_buffer(std::size_t n)
{
	uint8_t *b = new uint8_t[n];
	std::memset(b, 0, n);
	return b;
}

FW_NOINLINE char *raw_copy(const char *s)
{
	char *p = static_cast<char *>(std::malloc(20));
	if (p != nullptr)
		std::strncpy(p, s, 19);
	return p;
}

FW_NOINLINE Sample *try_sample(uint32_t t)
{
	Sample *s = new (std::nothrow) Sample;
	if (s != nullptr)
		s->t = t;
	return s;
}

/* Published through a volatile pointer: without it the compilers may
 * elide the new[]/delete[] pair (C++14 allocation elision). */
static uint32_t *volatile scratch_seen;

FW_NOINLINE void scratch()
{
	uint32_t *s = new uint32_t[50];
	scratch_seen = s;
	s[0] = 1;
	fw_sink += s[0];
	delete[] s;
}

static Widget *widgets[3];
static uint8_t *buffer;
static char *text;
static Sample *sample;

FW_NOINLINE void plant()
{
	for (uint32_t i = 0; i < 3; i++)
		widgets[i] = make_widget(i + 1);
	delete widgets[0];
	widgets[0] = nullptr;
	scratch();
	buffer = make_buffer(300);
	text = raw_copy("cxx");
	sample = try_sample(7);
}

extern "C" FW_NOINLINE void fault_now(uint32_t v)
{
	fw_sink = v;
	__asm volatile("udf #1" ::: "memory");
}

extern "C" FW_NOINLINE void process(uint32_t v)
{
	fault_now(v * 3);
	fw_sink += v;
}

int main(void)
{
	plant();
	process(static_cast<uint32_t>(reinterpret_cast<uintptr_t>(buffer)) + fw_sink);
	return 0;
}
