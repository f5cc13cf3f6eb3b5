// C++ with exceptions and destructors: GCC emits generic-model .ARM.extab
// entries (__gxx_personality_v0 + LSDA) for functions with cleanups or
// handlers, and pr0/pr1 compact entries elsewhere. Linked against newlib's
// libstdc++/libsupc++, which adds several hundred more entries to compare.
#include <exception>

struct TooBig : std::exception {
	const char *what() const noexcept override { return "too big"; }
};

volatile int sink;

struct Guard {
	int id;
	explicit Guard(int i) : id(i) { sink = i; }
	~Guard() { sink = -id; }
};

__attribute__((noinline)) void thrower(int x)
{
	Guard g(x);
	if (x > 3)
		throw TooBig();
	sink = x;
}

__attribute__((noinline)) int middle(int x)
{
	Guard a(1), b(2);
	double d[64];
	for (int i = 0; i < 64; i++)
		d[i] = x * i;
	thrower(x);
	return (int)d[x & 63];
}

__attribute__((noinline)) float fmiddle(float f)
{
	Guard a(3);
	float g = f * 2, h = f * 3, k = f * 5;
	thrower((int)g);
	return g + h + k;
}

__attribute__((noinline)) int catcher(int x)
{
	try {
		Guard c(3);
		return middle(x) + (int)fmiddle((float)x);
	} catch (const std::exception &e) {
		return -1;
	} catch (...) {
		return -2;
	}
}

int main()
{
	int r = 0;
	for (int i = 0; i < 6; i++)
		r += catcher(i);
	return r;
}
