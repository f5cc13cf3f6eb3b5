/* C functions whose EHABI unwind entries cover the common frame shapes:
 * callee-saved pushes, large frames (uleb128 vsp adjustment), VFP pushes
 * (hard-float builds), a frame pointer (variable-length array), varargs and
 * a noreturn call at the very end of a function. Built with -funwind-tables
 * so that GCC and clang emit .ARM.exidx entries for C. */
#include <stdarg.h>

volatile int sink;

__attribute__((noinline)) void leaf(int x) { sink = x; }

__attribute__((noinline)) int callee_saved(int a, int b, int c, int d)
{
	int x = a * 3, y = b * 5, z = c * 7, w = d * 11;
	leaf(a);
	leaf(x + y);
	leaf(z - w);
	return x + y + z + w + a + b + c + d;
}

__attribute__((noinline)) int big_frame(int n)
{
	volatile char buf[4096 + 512];
	for (int i = 0; i < n && i < (int)sizeof buf; i++)
		buf[i] = (char)i;
	leaf(buf[n & 1023]);
	return buf[7];
}

__attribute__((noinline)) int huge_frame(int n)
{
	volatile char buf[70000];
	buf[n % 70000] = 1;
	leaf(buf[(n + 1) % 70000]);
	return buf[3];
}

__attribute__((noinline)) float fsum(float a, float b) { return a + b; }

__attribute__((noinline)) float floats(float a, float b, float c, float d)
{
	float e = a * b, f = c * d, g = a - d, h = b + c;
	float r = fsum(e, f);
	r += fsum(g, h);
	r += fsum(e * g, f * h);
	return r + e + f + g + h;
}

__attribute__((noinline)) double doubles(double a, double b)
{
	double e = a * b, f = a / b;
	double r = (double)fsum((float)e, (float)f);
	return r + e + f;
}

__attribute__((noinline)) int vla(int n)
{
	volatile int arr[n + 1];
	arr[n] = n;
	leaf(arr[n]);
	return arr[0];
}

__attribute__((noinline)) int varargs(int n, ...)
{
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int);
	va_end(ap);
	leaf(s);
	return s;
}

__attribute__((noreturn, noinline)) void die(int code)
{
	for (;;)
		sink = code;
}

__attribute__((noinline)) void ends_in_noreturn(int x)
{
	leaf(x);
	die(x + 1);
}

__attribute__((noinline)) int after_noreturn(int x)
{
	leaf(x);
	return x * 2;
}

int main(void)
{
	int r = callee_saved(1, 2, 3, 4);
	r += big_frame(r & 7);
	r += huge_frame(r);
	r += (int)floats(1, 2, 3, 4);
	r += (int)doubles(1, 2);
	r += vla(r & 15);
	r += varargs(3, 1, 2, 3);
	r += after_noreturn(r);
	if (r == 12345)
		ends_in_noreturn(r);
	return r;
}

/* Minimal entry point: the samples are only ever read, never run. */
__attribute__((noreturn)) void _start(void)
{
	main();
	die(0);
}

/* libgcc's unwinder (pulled in by the personality routines the tables
 * reference) needs these two from a C library. */
void *memcpy(void *dst, const void *src, unsigned long n)
{
	char *d = dst;
	const char *s = src;
	while (n--)
		*d++ = *s++;
	return dst;
}

__attribute__((noreturn)) void abort(void) { die(-1); }
