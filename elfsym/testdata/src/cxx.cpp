// Tiny freestanding C++ program: mangled names, a namespace, a method,
// a template and an inlined member function.
#include <stdint.h>

extern "C" volatile uint32_t sink;
volatile uint32_t sink;

namespace fl {
class Counter {
public:
	explicit Counter(uint32_t start) : n_(start) {}
	inline uint32_t bump(uint32_t by) { n_ += by; sink = n_; return n_; }
	uint32_t __attribute__((noinline)) twice(uint32_t by);
private:
	uint32_t n_;
};

uint32_t Counter::twice(uint32_t by)
{
	bump(by);
	return bump(by);
}

template <typename T> __attribute__((noinline)) T scale(T v, int k)
{
	return v * static_cast<T>(k);
}
} // namespace fl

extern "C" __attribute__((noinline)) void crash(void)
{
	fl::Counter c(sink);
	sink = c.twice(3) + fl::scale<uint32_t>(sink, 5) + fl::scale<uint16_t>(7, 2);
	*(volatile uint32_t *)0 = 0;
	for (;;)
		;
}

extern "C" int main(void)
{
	crash();
	return 0;
}
