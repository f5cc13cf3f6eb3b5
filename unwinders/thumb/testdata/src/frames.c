/* Test program for the thumb decoder's objdump oracle test: prologues and
 * epilogues of many shapes. It is never run, only compiled and disassembled. */
#include <stdarg.h>

volatile int sink;
volatile float fsink;

__attribute__((noinline)) void consume(char *p, int n) {
	if (p) p[n & 7] = (char)n;
	sink = n;
}

/* big frames: sub.w sp / subw sp on v7-M; ldr rN, =-size + add sp, rN on v6-M */
__attribute__((noinline)) int big4k(int x) {
	char buf[4000];
	for (int i = 0; i < x; i++) buf[i] = (char)i;
	consume(buf, x);
	return buf[x];
}

__attribute__((noinline)) int big5k(int x) {
	char buf[5000];
	consume(buf, x);
	return buf[x & 1023];
}

__attribute__((noinline)) int big100k(int x) {
	char buf[100003];
	consume(buf, x);
	return buf[x];
}

/* dynamic allocation: sub sp, rN computed at run time */
__attribute__((noinline)) int vla(int n) {
	char buf[n];
	consume(buf, n);
	return buf[0];
}

/* many callee-saved registers */
__attribute__((noinline)) int manyregs(int a, int b, int c, int d) {
	int e = a * b, f = b * c, g = c * d, h = d * a, i = a + b, j = c + d;
	int k = e ^ f, l = g ^ h;
	sink = e; sink = f; sink = g; sink = h;
	consume(0, a);
	return e + f + g + h + i + j + k + l + a + b + c + d;
}

#if defined(__ARM_FP)
/* floats kept across calls: vpush {s16-...} / {d8-...} */
__attribute__((noinline)) float floats(float a, float b, float c) {
	float x = a * b, y = b * c, z = a * c, w = a + b + c;
	fsink = x;
	consume(0, (int)x);
	fsink = y;
	consume(0, (int)y);
	return x + y + z + w;
}
#endif

/* variadic: the caller's r0-r3 are spilled below the frame */
__attribute__((noinline)) int sum(int n, ...) {
	va_list ap;
	int s = 0;
	va_start(ap, n);
	for (int i = 0; i < n; i++) s += va_arg(ap, int);
	va_end(ap);
	return s;
}

/* switch tables: tbb/tbh */
__attribute__((noinline)) int sw(int x) {
	switch (x) {
	case 0: return big4k(3);
	case 1: return 17;
	case 2: return vla(x);
	case 3: return 99;
	case 4: return sum(2, x, x);
	case 5: return 5;
	case 6: return 1234;
	default: return -1;
	}
}

__attribute__((noinline)) int swbig(int x) {
	switch (x) {
#define C(n) case n: return n * 3 + sw(x);
	C(0) C(1) C(2) C(3) C(4) C(5) C(6) C(7) C(8) C(9) C(10) C(11) C(12)
	C(13) C(14) C(15) C(16) C(17) C(18) C(19) C(20) C(21) C(22) C(23)
	C(24) C(25) C(26) C(27) C(28) C(29) C(30) C(31) C(32) C(33) C(34)
	C(35) C(36) C(37) C(38) C(39) C(40) C(41) C(42) C(43) C(44) C(45)
	C(46) C(47) C(48) C(49) C(50) C(51) C(52) C(53) C(54) C(55) C(56)
	C(57) C(58) C(59) C(60) C(61) C(62) C(63) C(64) C(65) C(66) C(67)
	C(68) C(69) C(70) C(71) C(72) C(73) C(74) C(75) C(76) C(77) C(78)
	default: return 0;
	}
}

/* function pointer calls: blx rN */
typedef int (*fn)(int);
fn table[] = {big4k, big5k, big100k, vla, sw};
__attribute__((noinline)) int indirect(int i) { return table[i & 3](i) + table[4](i); }

/* conditional returns and calls in IT blocks */
__attribute__((noinline)) int cond(int a, int b) {
	if (a > b) return a - b;
	if (a == 3) sink = sw(b);
	return b;
}

/* deep recursion */
__attribute__((noinline)) int deep(int n) {
	if (n <= 0) return manyregs(n, n, n, n);
	return deep(n - 1) + deep(n - 2) + 1;
}

/* tail call */
__attribute__((noinline)) int tail(int n) { return indirect(n + 1); }

__attribute__((noinline, noreturn)) void die(void) {
	for (;;) sink = 1;
}

void _start(void) {
	sink = deep(5) + big5k(3) + big100k(7) + cond(1, 2) + swbig(sink) + tail(3);
#if defined(__ARM_FP)
	fsink = floats(1.0f, 2.0f, 3.0f);
#endif
	sink = sum(5, 1, 2, 3, 4, 5);
	die();
}
