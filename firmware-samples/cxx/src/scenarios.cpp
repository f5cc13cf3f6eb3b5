/*
 * Crash scenarios of the faultline C++ corpus, in the shapes real firmware
 * has: libstdc++ containers and algorithms, std::function, lambdas,
 * virtual dispatch, exceptions, and crashes inside newlib and libgcc. The
 * scenario is chosen by crash_scenario, a .data global that a debugger or
 * the emulator changes before main runs. The functions of each chain are
 * noinline and use the result of every call, so the chains keep their
 * frames at every optimisation level; the library code they call
 * (libstdc++ templates, newlib, libgcc) is left to the compiler. See
 * README.md for the catalogue.
 */
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "fw.h"

extern "C" {
volatile uint32_t crash_scenario = SCN_VECTOR_NULL_ELEM;
volatile uint32_t fw_sink;

/* libsupc++ registers static destructors with __cxa_atexit(..., &__dso_handle);
 * crtbegin.o, which would define it, is not linked (-nostartfiles). */
void *__dso_handle = nullptr;

/* libgcc internals the scenarios call directly or replace. */
unsigned long long __udivmoddi4(unsigned long long n, unsigned long long d, unsigned long long *rem);
double __aeabi_dmul(double a, double b);
}

/* Values the compiler cannot predict. */
volatile uint32_t fw_inputs[8] = {3, 5, 7, 11, 13, 17, 19, 23};
volatile uint64_t fw_zero64;                    /* 64-bit divisor: stays 0 */
volatile double fw_dbl[4] = {1.5, -2.25, 3.0e10, 0.125};
char *volatile fw_dma_buf = reinterpret_cast<char *>(UNMAPPED_ADDR);
const char *volatile fw_label = reinterpret_cast<const char *>(UNMAPPED_ADDR);

/* ------------------------------------------------------------------ */
/* Division by zero: libgcc's __aeabi_uldivmod (and the 32-bit helpers)
 * branch to __aeabi_ldiv0 / __aeabi_idiv0; firmware replaces the weak
 * defaults (which return) with a trap. */

extern "C" FW_NOINLINE void __aeabi_ldiv0(void)
{
	fw_sink = 0xd1f0u;
	__asm volatile("udf #0x30" ::: "memory");
}

extern "C" FW_NOINLINE void __aeabi_idiv0(void)
{
	fw_sink = 0xd1f1u;
	__asm volatile("udf #0x31" ::: "memory");
}

/* ------------------------------------------------------------------ */
/* 1. vector_null_elem: std::for_each over a std::vector<Sensor *> that  */
/*    holds a NULL (a sensor that failed to probe)                      */

struct Sensor {
	uint32_t id;
	uint32_t last;
	uint32_t samples;
	void record(uint32_t v)
	{
		last = v; /* NULL: MemManage DACCVIOL, MMFAR = 4 */
		samples++;
	}
};

FW_NOINLINE static uint32_t sensors_sample(std::vector<Sensor *> &sensors, uint32_t v)
{
	std::for_each(sensors.begin(), sensors.end(), [v](Sensor *s) { s->record(v); });
	return static_cast<uint32_t>(sensors.size()) + v;
}

FW_NOINLINE static void scenario_vector_null_elem(void)
{
	static Sensor pool[3];
	std::vector<Sensor *> sensors;
	for (uint32_t i = 0; i < 3; i++) {
		pool[i].id = fw_inputs[i];
		sensors.push_back(&pool[i]);
	}
	sensors.push_back(nullptr);
	fw_sink = sensors_sample(sensors, fw_inputs[4]);
}

/* ------------------------------------------------------------------ */
/* 2. map_null_virtual: std::map lookup of an id nobody registered       */
/*    (operator[] inserts nullptr), then a virtual call through it       */

class Handler {
public:
	virtual uint32_t handle(uint32_t v) = 0;
	virtual uint32_t priority() const = 0;

protected:
	~Handler() = default;
};

class EchoHandler final : public Handler {
public:
	uint32_t handle(uint32_t v) override { return v + fw_inputs[1]; }
	uint32_t priority() const override { return 1; }
};

class SumHandler final : public Handler {
public:
	uint32_t handle(uint32_t v) override
	{
		total_ += v;
		return total_;
	}
	uint32_t priority() const override { return 2; }

private:
	uint32_t total_ = 0;
};

static EchoHandler echo_handler;
static SumHandler sum_handler;

FW_NOINLINE static uint32_t dispatch_message(std::map<uint32_t, Handler *> &table, uint32_t id, uint32_t v)
{
	Handler *h = table[id];
	uint32_t r = h->handle(v); /* NULL object: the vptr load faults */
	return r + id;
}

FW_NOINLINE static void scenario_map_null_virtual(void)
{
	std::map<uint32_t, Handler *> table;
	table[uint32_t{fw_inputs[0]}] = &echo_handler;
	table[uint32_t{fw_inputs[1]}] = &sum_handler;
	fw_sink = dispatch_message(table, fw_inputs[0], 1);
	fw_sink = dispatch_message(table, fw_inputs[6], 2); /* not registered */
}

/* ------------------------------------------------------------------ */
/* 3. string_memcpy: a std::string copied by newlib's memcpy into a DMA  */
/*    buffer pointer that was never set up                              */

FW_NOINLINE static uint32_t uart_send(const std::string &msg)
{
	std::memcpy(fw_dma_buf, msg.data(), msg.size()); /* BusFault in memcpy */
	return static_cast<uint32_t>(msg.size());
}

FW_NOINLINE static void scenario_string_memcpy(void)
{
	std::string msg("temp=");
	for (uint32_t i = 0; i < 4; i++)
		msg.push_back(static_cast<char>('0' + fw_inputs[i] % 10));
	msg += " status=ok";
	fw_sink = uart_send(msg);
}

/* ------------------------------------------------------------------ */
/* 4. string_strlen: std::string built from a label pointer into         */
/*    unmapped memory: char_traits::length -> newlib strlen faults        */

FW_NOINLINE static uint32_t label_hash(const char *label)
{
	std::string s(label);
	uint32_t h = 2166136261u;
	for (char c : s)
		h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
	return h;
}

FW_NOINLINE static void scenario_string_strlen(void)
{
	fw_sink = label_hash(fw_label);
}

/* ------------------------------------------------------------------ */
/* 5. snprintf_bad_str: "%s" of a pointer into unmapped memory inside    */
/*    newlib's printf engine                                            */

FW_NOINLINE static uint32_t format_status(char *buf, size_t n, uint32_t code)
{
	int len = std::snprintf(buf, n, "%s: code %lu", fw_label, static_cast<unsigned long>(code));
	return static_cast<uint32_t>(len) + code;
}

FW_NOINLINE static void scenario_snprintf_bad_str(void)
{
	char buf[48];
	fw_sink = format_status(buf, sizeof buf, fw_inputs[5]);
	fw_sink = static_cast<uint8_t>(buf[0]);
}

/* ------------------------------------------------------------------ */
/* 6. qsort_comparator: newlib's qsort calls a comparator that follows   */
/*    a record's stale pointer                                          */

struct Task {
	uint32_t id;
	const uint32_t *prio;
};

static uint32_t prio_values[4] = {4, 1, 3, 2};

extern "C" FW_NOINLINE int task_cmp(const void *a, const void *b)
{
	const Task *x = static_cast<const Task *>(a);
	const Task *y = static_cast<const Task *>(b);
	uint32_t px = *x->prio, py = *y->prio; /* stale pointer: BusFault */
	return px < py ? -1 : px > py ? 1 : 0;
}

FW_NOINLINE static uint32_t schedule_tasks(Task *tasks, size_t n)
{
	std::qsort(tasks, n, sizeof(Task), task_cmp);
	return tasks[0].id + static_cast<uint32_t>(n);
}

FW_NOINLINE static void scenario_qsort_comparator(void)
{
	Task tasks[5];
	for (uint32_t i = 0; i < 5; i++) {
		tasks[i].id = fw_inputs[i];
		tasks[i].prio = &prio_values[i & 3];
	}
	tasks[3].prio = reinterpret_cast<const uint32_t *>(UNMAPPED_ADDR);
	fw_sink = schedule_tasks(tasks, 5);
}

/* ------------------------------------------------------------------ */
/* 7. sort_lambda: std::sort with a lambda comparator that logs equal   */
/*    keys through a log pointer nobody set (a conditional store)       */

struct Reading {
	uint32_t key;
	uint32_t value;
};

struct DupLog {
	uint32_t count;
	uint32_t last_key;
};

DupLog *volatile fw_dup_log; /* never initialised: NULL */

FW_NOINLINE static uint32_t sort_readings(std::vector<Reading> &rs)
{
	DupLog *log = fw_dup_log;
	std::sort(rs.begin(), rs.end(), [log](const Reading &a, const Reading &b) {
		if (a.key == b.key)
			log->last_key = a.key; /* NULL: MMFAR = 4 */
		return a.key < b.key;
	});
	return rs.front().value + rs.back().value;
}

FW_NOINLINE static void scenario_sort_lambda(void)
{
	std::vector<Reading> rs;
	for (uint32_t i = 0; i < 8; i++)
		rs.push_back(Reading{fw_inputs[(i * 3) & 7] % 5, i});
	fw_sink = sort_readings(rs);
}

/* ------------------------------------------------------------------ */
/* 8. function_leaf: a std::function holding a plain function (a leaf   */
/*    with a conditional store) called with a NULL channel              */

struct Channel {
	uint32_t id;
	uint32_t limit;
	uint32_t peak;
};

FW_NOINLINE void channel_note_peak(Channel *ch, uint32_t v)
{
	if (v > 100)
		ch->peak = v; /* NULL: MMFAR = 8 */
}

FW_NOINLINE static uint32_t run_filter(const std::function<void(Channel *, uint32_t)> &f, Channel *ch, uint32_t v)
{
	f(ch, v);
	return v + fw_inputs[2];
}

Channel *volatile fw_channel; /* never initialised: NULL */

FW_NOINLINE static void scenario_function_leaf(void)
{
	std::function<void(Channel *, uint32_t)> f = channel_note_peak;
	fw_sink = run_filter(f, fw_channel, fw_inputs[7] * 10);
}

/* ------------------------------------------------------------------ */
/* 9. bad_vtable: an array overrun overwrites the vptr of the object    */
/*    behind it; the virtual call jumps to unmapped memory              */

class Codec {
public:
	virtual uint32_t encode(uint32_t v) = 0;
	virtual uint32_t decode(uint32_t v) = 0;

protected:
	~Codec() = default;
};

class XorCodec final : public Codec {
public:
	uint32_t encode(uint32_t v) override { return v ^ key_; }
	uint32_t decode(uint32_t v) override { return v ^ key_; }

private:
	uint32_t key_ = 0x5au;
};

struct Packet {
	uint32_t payload[4];
	XorCodec codec;
};

/* What the overrun writes: the address of a table of stale words. */
static uint32_t stale_table[4] = {UNMAPPED_ADDR | 1u, UNMAPPED_ADDR | 1u, 0, 0};

FW_NOINLINE static void packet_fill(uint32_t *dst, const uint32_t *src, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		dst[i] = src[i];
}

FW_NOINLINE static uint32_t packet_encode(Codec &c, uint32_t v)
{
	uint32_t r = c.encode(v); /* stale vptr: branch to UNMAPPED_ADDR */
	return r + 1;
}

FW_NOINLINE static void scenario_bad_vtable(void)
{
	static Packet pkt;
	uint32_t src[5] = {fw_inputs[0], fw_inputs[1], fw_inputs[2], fw_inputs[3],
			   static_cast<uint32_t>(reinterpret_cast<uintptr_t>(stale_table))};
	packet_fill(pkt.payload, src, 4 + (fw_inputs[0] & 1)); /* 5 words into 4 */
	fw_sink = packet_encode(pkt.codec, fw_inputs[1]);
}

/* ------------------------------------------------------------------ */
/* 10. fnptr_xn: a timer callback that holds a peripheral address: the  */
/*     call executes from an execute-never region (MemManage IACCVIOL)  */

struct Timer {
	uint32_t period;
	void (*callback)(uint32_t);
};

static void timer_tick(uint32_t v) { fw_sink = v; }

FW_NOINLINE static uint32_t timers_expire(Timer *timers, uint32_t n, uint32_t now)
{
	uint32_t fired = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (now % timers[i].period == 0) {
			timers[i].callback(now);
			fired++;
		}
	}
	return fired;
}

FW_NOINLINE static void scenario_fnptr_xn(void)
{
	static Timer timers[3] = {{3, timer_tick}, {7, timer_tick}, {1, timer_tick}};
	/* A register block address stored where the callback belongs. */
	timers[1].callback = reinterpret_cast<void (*)(uint32_t)>(0x40004001u);
	fw_sink = timers_expire(timers, 3, fw_inputs[1] + 2); /* 7 */
}

/* ------------------------------------------------------------------ */
/* 11. throw_uncaught: nothing catches: __cxa_throw -> std::terminate   */
/*     -> abort -> _exit (UDF)                                          */

FW_NOINLINE static uint32_t parse_config(uint32_t v)
{
	if (fw_inputs[v & 7] > 2)
		throw std::runtime_error("config: bad field");
	return v + 1;
}

FW_NOINLINE static uint32_t load_config(uint32_t v)
{
	uint32_t r = parse_config(v);
	return r * 3;
}

FW_NOINLINE static void scenario_throw_uncaught(void)
{
	fw_sink = load_config(fw_inputs[2]);
}

/* ------------------------------------------------------------------ */
/* 12. throw_noexcept: a throw out of a noexcept function: the          */
/*     personality routine calls std::terminate during the unwind       */

FW_NOINLINE static uint32_t apply_config(uint32_t v) noexcept
{
	uint32_t r = parse_config(v + 1);
	return r ^ v;
}

FW_NOINLINE static void scenario_throw_noexcept(void)
{
	try {
		fw_sink = apply_config(fw_inputs[3]);
	} catch (const std::exception &) {
		fw_sink = 0;
	}
}

/* ------------------------------------------------------------------ */
/* 13. uldivmod_zero: 64-bit division by zero: __aeabi_uldivmod branches */
/*     to __aeabi_ldiv0, which traps                                    */

FW_NOINLINE static uint64_t average_interval(uint64_t total, uint64_t n)
{
	return total / n;
}

FW_NOINLINE static void scenario_uldivmod_zero(void)
{
	uint64_t r = average_interval(static_cast<uint64_t>(fw_inputs[4]) << 33, fw_zero64);
	fw_sink = static_cast<uint32_t>(r);
}

/* ------------------------------------------------------------------ */
/* 14. udivmoddi4_bad: libgcc's __udivmoddi4 stores the remainder       */
/*     through a pointer into unmapped memory                           */

FW_NOINLINE static uint32_t split_ticks(uint64_t ticks, uint64_t per, uint64_t *rem)
{
	uint64_t q = __udivmoddi4(ticks, per, rem);
	return static_cast<uint32_t>(q) + fw_inputs[0];
}

FW_NOINLINE static void scenario_udivmoddi4_bad(void)
{
	uint64_t *rem = reinterpret_cast<uint64_t *>(UNMAPPED_ADDR);
	fw_sink = split_ticks((static_cast<uint64_t>(fw_inputs[5]) << 32) | fw_inputs[6], 1000u + fw_inputs[7], rem);
}

/* ------------------------------------------------------------------ */
/* 15. softfloat_xn: an MPU region set up over the wrong addresses makes */
/*     32 bytes in the middle of libgcc's soft-float multiply            */
/*     execute-never: MemManage IACCVIOL inside __aeabi_dmul             */

FW_NOINLINE static void mpu_protect_block(uint32_t addr)
{
	MPU_RNR = 1;
	MPU_RBAR = addr & ~31u;
	/* XN, AP=011 (full access), SIZE=4 (32 bytes), enabled. */
	MPU_RASR = (1u << 28) | (3u << 24) | (4u << 1) | 1u;
	__asm volatile("dsb\n isb" ::: "memory");
}

FW_NOINLINE static double scale_reading(double x, double k)
{
	double y = x * k; /* __aeabi_dmul */
	return y + fw_dbl[3];
}

FW_NOINLINE static void scenario_softfloat_xn(void)
{
	uint32_t f = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(&__aeabi_dmul)) & ~1u;
	mpu_protect_block(f + 64);
	double r = scale_reading(fw_dbl[0], fw_dbl[1]);
	fw_sink = static_cast<uint32_t>(static_cast<int32_t>(r));
}

/* ------------------------------------------------------------------ */
/* 16. irq_stir: an event posted by software-triggering an interrupt     */
/*     (NVIC STIR, DSB, ISB); the handler runs a std::function callback  */
/*     that writes to an unmapped register block                        */

static std::function<void(uint32_t)> irq_callback;

extern "C" void fw_irq_handler(void)
{
	if (irq_callback)
		irq_callback(fw_inputs[4]);
}

FW_NOINLINE static uint32_t post_event(uint32_t v)
{
	NVIC_ISER0 = 1u << CRASH_IRQ;
	NVIC_STIR = CRASH_IRQ;
	__asm volatile("dsb\n isb" ::: "memory");
	return fw_inputs[v & 7] + v; /* the interrupt is taken before this */
}

FW_NOINLINE static void scenario_irq_stir(void)
{
	irq_callback = [](uint32_t v) { REG32(UNMAPPED_ADDR) = v; };
	uint32_t r = post_event(fw_inputs[5]);
	fw_sink = r * 5;
}

/* ------------------------------------------------------------------ */
/* 17. pendsv_icsr: a context switch requested with ICSR.PENDSVSET, DSB, */
/*     ISB; the PendSV handler saves into a task control block pointer   */
/*     that is still NULL                                               */

struct Tcb {
	uint32_t *sp;
	uint32_t state;
};

Tcb *volatile fw_current_tcb; /* never initialised: NULL */

extern "C" void fw_pendsv_handler(void)
{
	Tcb *t = fw_current_tcb;
	t->state = 2; /* NULL: MMFAR = 4 */
	fw_sink = t->state;
}

FW_NOINLINE static uint32_t yield_now(uint32_t v)
{
	SCB_ICSR = ICSR_PENDSVSET;
	__asm volatile("dsb\n isb" ::: "memory");
	return fw_inputs[v & 7] ^ v; /* PendSV is taken before this */
}

FW_NOINLINE static void scenario_pendsv_icsr(void)
{
	uint32_t r = yield_now(fw_inputs[6]);
	fw_sink = r + 1;
}

/* ------------------------------------------------------------------ */
/* 18. pendsv_tail, 19. stir_tail: the barrier is the last thing the     */
/*     function does (`dsb; isb; bx lr`): the exception is taken before  */
/*     the return, inside the function that pended it                   */

FW_NOINLINE static void request_switch(void)
{
	SCB_ICSR = ICSR_PENDSVSET;
	__asm volatile("dsb\n isb" ::: "memory");
}

FW_NOINLINE static void scenario_pendsv_tail(void)
{
	request_switch();
	fw_sink = fw_inputs[1]; /* not reached: PendSV faults first */
}

FW_NOINLINE static void raise_event(void)
{
	NVIC_ISER0 = 1u << CRASH_IRQ;
	NVIC_STIR = CRASH_IRQ;
	__asm volatile("dsb\n isb" ::: "memory");
}

FW_NOINLINE static void scenario_stir_tail(void)
{
	irq_callback = [](uint32_t v) { REG32(UNMAPPED_ADDR + 4u) = v; };
	raise_event();
	fw_sink = fw_inputs[2]; /* not reached: the interrupt faults first */
}

/* ------------------------------------------------------------------ */

FW_NOINLINE static void run_scenario(uint32_t n)
{
	switch (n) {
	case SCN_VECTOR_NULL_ELEM: scenario_vector_null_elem(); break;
	case SCN_MAP_NULL_VIRTUAL: scenario_map_null_virtual(); break;
	case SCN_STRING_MEMCPY: scenario_string_memcpy(); break;
	case SCN_STRING_STRLEN: scenario_string_strlen(); break;
	case SCN_SNPRINTF_BAD_STR: scenario_snprintf_bad_str(); break;
	case SCN_QSORT_COMPARATOR: scenario_qsort_comparator(); break;
	case SCN_SORT_LAMBDA: scenario_sort_lambda(); break;
	case SCN_FUNCTION_LEAF: scenario_function_leaf(); break;
	case SCN_BAD_VTABLE: scenario_bad_vtable(); break;
	case SCN_FNPTR_XN: scenario_fnptr_xn(); break;
	case SCN_THROW_UNCAUGHT: scenario_throw_uncaught(); break;
	case SCN_THROW_NOEXCEPT: scenario_throw_noexcept(); break;
	case SCN_ULDIVMOD_ZERO: scenario_uldivmod_zero(); break;
	case SCN_UDIVMODDI4_BAD: scenario_udivmoddi4_bad(); break;
	case SCN_SOFTFLOAT_XN: scenario_softfloat_xn(); break;
	case SCN_IRQ_STIR: scenario_irq_stir(); break;
	case SCN_PENDSV_ICSR: scenario_pendsv_icsr(); break;
	case SCN_PENDSV_TAIL: scenario_pendsv_tail(); break;
	case SCN_STIR_TAIL: scenario_stir_tail(); break;
	default: break;
	}
	fw_sink = n;
}

int main(void)
{
	fl_mpu_guard_null();
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
