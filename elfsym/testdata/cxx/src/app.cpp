// A libstdc++-heavy test application for the symbolizer: the shapes real
// C++ firmware has. std::sort and std::stable_sort with lambdas (the
// introsort, heap and merge templates of stl_algo.h and stl_heap.h, inlined
// several levels deep), std::function callbacks, std::vector, std::map,
// std::priority_queue, virtual dispatch through unique_ptr, class and
// function templates, and an exception thrown by vector::at. gcc puts
// every template instance in its own COMDAT section, and its line program
// lists their sequences before the unit's own .text one.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <vector>

volatile uint32_t sink;

namespace telemetry {

struct Sample {
	uint32_t id;
	int32_t value;
	uint8_t channel;
};

template <typename T, std::size_t N>
class Ring {
public:
	bool push(const T &v)
	{
		if (count_ == N)
			return false;
		buf_[(head_ + count_) % N] = v;
		++count_;
		return true;
	}
	bool pop(T &out)
	{
		if (count_ == 0)
			return false;
		out = buf_[head_];
		head_ = (head_ + 1) % N;
		--count_;
		return true;
	}
	std::size_t size() const { return count_; }

private:
	std::array<T, N> buf_{};
	std::size_t head_ = 0, count_ = 0;
};

class Filter {
public:
	virtual ~Filter() = default;
	virtual int32_t apply(int32_t x) = 0;
	virtual const char *name() const = 0;
};

class Scale : public Filter {
public:
	explicit Scale(int32_t k) : k_(k) {}
	int32_t apply(int32_t x) override { return x * k_; }
	const char *name() const override { return "scale"; }

private:
	int32_t k_;
};

class Clamp : public Filter {
public:
	Clamp(int32_t lo, int32_t hi) : lo_(lo), hi_(hi) {}
	int32_t apply(int32_t x) override { return std::clamp(x, lo_, hi_); }
	const char *name() const override { return "clamp"; }

private:
	int32_t lo_, hi_;
};

class Smooth : public Filter {
public:
	int32_t apply(int32_t x) override
	{
		acc_ = (acc_ * 3 + x) / 4;
		return acc_;
	}
	const char *name() const override { return "smooth"; }

private:
	int32_t acc_ = 0;
};

template <typename It, typename Key>
std::vector<uint32_t> histogram(It first, It last, Key key, std::size_t bins)
{
	std::vector<uint32_t> h(bins);
	for (; first != last; ++first)
		h.at(key(*first) % bins)++;
	return h;
}

} // namespace telemetry

using telemetry::Sample;

static std::vector<Sample> make_samples(uint32_t n, uint32_t seed)
{
	std::vector<Sample> v;
	v.reserve(n);
	for (uint32_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		v.push_back(Sample{i, static_cast<int32_t>(seed >> 8) - 0x7fffff, static_cast<uint8_t>(seed & 7)});
	}
	return v;
}

__attribute__((noinline)) static void sort_samples(std::vector<Sample> &v)
{
	std::sort(v.begin(), v.end(), [](const Sample &a, const Sample &b) {
		return a.value < b.value || (a.value == b.value && a.id < b.id);
	});
	std::stable_sort(v.begin(), v.end(), [](const Sample &a, const Sample &b) { return a.channel < b.channel; });
}

__attribute__((noinline)) static int32_t run_pipeline(std::vector<Sample> &v)
{
	std::vector<std::unique_ptr<telemetry::Filter>> chain;
	chain.push_back(std::make_unique<telemetry::Scale>(3));
	chain.push_back(std::make_unique<telemetry::Clamp>(-100000, 100000));
	chain.push_back(std::make_unique<telemetry::Smooth>());
	int32_t last = 0;
	for (auto &s : v) {
		for (auto &f : chain)
			s.value = f->apply(s.value);
		last = s.value;
	}
	return last;
}

__attribute__((noinline)) static uint32_t callbacks(const std::vector<Sample> &v)
{
	std::map<uint8_t, std::function<uint32_t(const Sample &)>> by_channel;
	uint32_t bias = static_cast<uint32_t>(v.size());
	by_channel[0] = [](const Sample &s) { return s.id; };
	by_channel[1] = [bias](const Sample &s) { return s.id + bias; };
	by_channel[2] = [&v](const Sample &s) { return static_cast<uint32_t>(s.value) ^ v.front().id; };
	uint32_t total = 0;
	for (const auto &s : v) {
		auto it = by_channel.find(s.channel);
		if (it != by_channel.end())
			total += it->second(s);
	}
	return total;
}

__attribute__((noinline)) static uint32_t top_k(const std::vector<Sample> &v, std::size_t k)
{
	auto cmp = [](const Sample &a, const Sample &b) { return a.value > b.value; };
	std::priority_queue<Sample, std::vector<Sample>, decltype(cmp)> q(cmp);
	for (const auto &s : v) {
		q.push(s);
		if (q.size() > k)
			q.pop();
	}
	uint32_t sum = 0;
	while (!q.empty()) {
		sum += q.top().id;
		q.pop();
	}
	return sum;
}

__attribute__((noinline)) static uint32_t ring_traffic(const std::vector<Sample> &v)
{
	telemetry::Ring<Sample, 16> ring;
	telemetry::Ring<uint16_t, 7> small;
	uint32_t n = 0;
	Sample out;
	uint16_t o16;
	for (const auto &s : v) {
		if (!ring.push(s) && ring.pop(out))
			n += out.id;
		if (!small.push(static_cast<uint16_t>(s.id)) && small.pop(o16))
			n ^= o16;
	}
	return n + ring.size() + small.size();
}

__attribute__((noinline)) static uint32_t checked_lookup(const std::vector<Sample> &v, std::size_t i)
{
	try {
		return v.at(i).id;
	} catch (const std::out_of_range &) {
		return 0xffffffffu;
	}
}

int main()
{
	auto v = make_samples(200, 12345u);
	sort_samples(v);
	sink = static_cast<uint32_t>(run_pipeline(v));
	sink = callbacks(v);
	sink = top_k(v, 10);
	sink = ring_traffic(v);
	auto h = telemetry::histogram(v.begin(), v.end(), [](const Sample &s) { return s.id * 7u; }, 13);
	sink = std::accumulate(h.begin(), h.end(), 0u);
	auto h2 = telemetry::histogram(h.begin(), h.end(), [](uint32_t x) { return x; }, 5);
	sink = h2.front();
	auto it = std::find_if(v.begin(), v.end(), [](const Sample &s) { return s.value > 1000; });
	sink = it == v.end() ? 0u : it->id;
	sink = checked_lookup(v, 500);
	return 0;
}
