/*
 * C++ scenarios with operator new/delete (libstdc++ over newlib's malloc):
 * each scenario plants one kind of heap bug at a known place.
 */
#include <cstddef>
#include <cstring>
#include <new>

#include "fw.h"

extern "C" {
volatile uint32_t heap_scenario;
volatile uint32_t heap_iterations = 1000;
volatile uint32_t fw_sink;
}

namespace {

struct Node {
	Node *next;
	uint32_t value;
	uint8_t data[24];
};

class Queue {
public:
	FW_NOINLINE void push(uint32_t v)
	{
		Node *n = new Node;
		n->value = v;
		n->next = head_;
		head_ = n;
	}
	FW_NOINLINE void clear()
	{
		while (head_ != nullptr) {
			Node *n = head_;
			head_ = n->next;
			delete n;
		}
	}
	FW_NOINLINE void forget() { head_ = nullptr; } // leaks every node
	Node *head() const { return head_; }

private:
	Node *head_ = nullptr;
};

void *volatile keep[8];
volatile uint32_t leaked_nodes = 2;

FW_NOINLINE uint8_t *make_buffer(std::size_t n)
{
	uint8_t *b = new uint8_t[n];
	std::memset(b, 0, n);
	return b;
}

FW_NOINLINE void clean_run()
{
	Queue q;
	for (uint32_t i = 0; i < 5; i++)
		q.push(i);
	uint8_t *b = make_buffer(40);
	fw_sink += q.head()->value + b[3];
	delete[] b;
	Node *n = new (std::nothrow) Node;
	delete n;
	q.clear();
}

FW_NOINLINE void leak_nodes()
{
	static Queue q;
	for (uint32_t i = 0; i < leaked_nodes; i++)
		q.push(i);
	q.forget();
}

FW_NOINLINE void leak_buffer()
{
	keep[0] = make_buffer(100);
}

FW_NOINLINE void double_delete()
{
	Node *n = new Node;
	Node *volatile again = n; // hides the bug from the compiler
	n->value = 1;
	delete n;
	delete again;
}

FW_NOINLINE void invalid_delete()
{
	static Node not_heap;
	Node *volatile p = &not_heap;
	delete p;
}

FW_NOINLINE void use_after_delete()
{
	Node *n = new Node;
	Node *volatile dangling = n;
	delete n;
	fw_sink += dangling->value; // read from the deleted node
}

FW_NOINLINE void fill(uint8_t *dst, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = static_cast<uint8_t>(i);
}

FW_NOINLINE void overflow()
{
	uint8_t *b = make_buffer(12);
	uint8_t *after = make_buffer(12);
	fill(b, 17); // 5 bytes too many
	keep[1] = b;
	keep[2] = after;
}

} // namespace

int main(void)
{
	switch (heap_scenario) {
	case HEAP_CLEAN:
		clean_run();
		break;
	case HEAP_LEAKS:
		clean_run();
		leak_nodes();
		leak_buffer();
		break;
	case HEAP_DOUBLE_FREE:
		double_delete();
		break;
	case HEAP_INVALID_FREE:
		invalid_delete();
		break;
	case HEAP_USE_AFTER_FREE:
		use_after_delete();
		break;
	case HEAP_OVERFLOW:
		overflow();
		break;
	}
	return 0;
}
