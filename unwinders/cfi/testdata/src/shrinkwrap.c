/* C whose -O2 code GCC shrink-wraps: early returns before the prologue,
   epilogues in the middle of a function (DW_CFA_remember_state /
   DW_CFA_restore_state), callee-saved VFP registers (vpush {d8}) in
   hard-float builds, a frame pointer for a VLA, and a noreturn call. */
#include <stdarg.h>

extern int ext(int);
extern float extf(float);
extern void halt(void) __attribute__((noreturn));

volatile int sink;

int early(int *p, int n)
{
	if (p == 0)
		return -1;
	int s = 0;
	for (int i = 0; i < n; i++)
		s += ext(p[i]) * ext(i);
	if (s < 0)
		return s;
	return s + ext(s);
}

int twoexits(int a, int b, int c)
{
	if (a > 10) {
		int x = ext(a) + ext(b);
		return x * c;
	}
	if (b < 0)
		return ext(c) + ext(a) + ext(b);
	return a + b + c;
}

float floats(float a, float b, int n)
{
	float acc = a;
	for (int i = 0; i < n; i++)
		acc = extf(acc) * b + extf(b);
	return acc + a * b;
}

int vla(int n)
{
	volatile int buf[n];
	for (int i = 0; i < n; i++)
		buf[i] = ext(i);
	return buf[n / 2];
}

int sum(int n, ...)
{
	va_list ap;
	va_start(ap, n);
	int s = 0;
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	return s;
}

int big(int n)
{
	volatile char buf[4600];
	buf[n] = (char)n;
	return ext(buf[n / 2]) + sink;
}

void fatal(int code)
{
	sink = code;
	halt();
}

int reset(void)
{
	int a[4] = {1, 2, 3, 4};
	sink = early(a, 4) + twoexits(sink, 2, 3) + (int)floats(1, 2, sink) + vla(sink) + sum(3, 1, 2, 3) + big(sink);
	if (sink == 42)
		fatal(1);
	return 0;
}

int ext(int x) { return x + sink; }
float extf(float x) { return x * (float)sink; }
void halt(void) { for (;;) sink++; }
