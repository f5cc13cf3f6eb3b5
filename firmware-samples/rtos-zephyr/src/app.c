/*
 * The sample application: threads in every state, each several calls deep
 * where it stopped, and a crash in one of them.
 *
 *   name       prio  where it is when "net_rx" crashes
 *   net_rx       3   running: a NULL packet pointer written in
 *                    net_rx_main > handle_frame > parse_header > store_len
 *   consumer     5   pending on sem_data (forever) in
 *                    consumer_main > process_next > wait_for_data > k_sem_take
 *   logger       6   sleeping 100000 ticks in logger_main > flush_logs > k_sleep
 *   suspender    7   suspended itself in suspender_main > park > k_thread_suspend
 *   filter       8   sleeping with live FP state (M4F) in filter_main > run_filter > k_sleep
 *   worker      10   ready, preempted by SysTick inside worker_main > crunch_block > crunch
 *   deferred    12   created but never started (PRESTART)
 *   idle        15   ready, never ran
 *
 * z_scenario (0 unless a debugger sets it before the threads run) selects
 * how it ends:
 *   0  net_rx writes through a NULL pointer (HardFault, one coredump);
 *   1  first the suspender raises k_oops() (SVC: a coredump whose SP is 0,
 *      as Zephyr 2.x writes it), the application's fatal error handler
 *      returns so the kernel aborts that thread, then net_rx crashes as
 *      in 0: two coredumps in one log;
 *   2  the suspender raises k_panic(): one coredump with SP 0, halt;
 *   3  net_rx pends IRQ 0, whose handler does the NULL write: a fault
 *      inside an ISR, the thread's frames beyond the ISR's exception frame;
 *   4  as 0, but the coredump holds all of RAM in one memory block, as
 *      Zephyr 2.x writes it by default (CONFIG_DEBUG_COREDUMP_MEMORY_DUMP_LINKER_RAM);
 *   5  as 2 (k_panic), with all of RAM in one block as in 4: the exception
 *      frame is then in memory twice (its copy in the coredump's arch_blk);
 *   6  the filter raises k_panic() with live FP state (M4F: an extended
 *      exception frame).
 */
#include "zkernel.h"

#define STACK_SIZE 1024

K_THREAD_STACK_DEFINE(idle_stack, 512);
K_THREAD_STACK_DEFINE(net_rx_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(consumer_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(logger_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(suspender_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(filter_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(worker_stack, STACK_SIZE);
K_THREAD_STACK_DEFINE(deferred_stack, 512);

struct k_thread idle_thread, net_rx_thread, consumer_thread, logger_thread,
	suspender_thread, filter_thread, worker_thread, deferred_thread;

struct k_sem sem_data;

struct packet {
	uint32_t hdr;
	uint32_t len;
	uint8_t payload[8];
};

volatile uint32_t z_scenario;
volatile uint32_t app_sink;
struct packet *volatile rx_packet; /* NULL: the bug */
volatile uint32_t worker_count;
/* The M3 builds have no FPU and no libgcc: the filter uses integers there. */
#if Z_FPU_SHARING
typedef float sample_t;
#define K_GAIN 0.25f
#define K_BIAS 0.5f
#else
typedef int32_t sample_t;
#define K_GAIN 3
#define K_BIAS 1
#endif

volatile sample_t filter_out;

/* ---- net_rx: the crash --------------------------------------------- */

Z_NOINLINE static void store_len(struct packet *p, uint32_t len)
{
	p->len = len; /* MemManage DACCVIOL at address 4, escalated to HardFault */
	app_sink = len;
}

Z_NOINLINE static uint32_t parse_header(struct packet *p, uint32_t raw)
{
	uint32_t len = (raw >> 8) & 0xFFu;
	store_len(p, len + 1);
	return len;
}

Z_NOINLINE static void handle_frame(uint32_t raw)
{
	app_sink = parse_header(rx_packet, raw) + 2;
}

/* Scenario 3: the receive interrupt handler parses the frame. */
volatile uint32_t rx_raw;

Z_NOINLINE static void rx_drain(uint32_t raw)
{
	app_sink = parse_header(rx_packet, raw) + 3;
}

void z_rx_isr(void)
{
	rx_drain(rx_raw);
}

Z_NOINLINE static void rx_kick(uint32_t raw)
{
	rx_raw = raw;
	NVIC_ISER0 = 1u;
	NVIC_ISPR0 = 1u; /* taken here: IRQ 0 is enabled and unmasked */
	__asm volatile("dsb\n isb" ::: "memory");
	app_sink = raw;
}

static void net_rx_main(void *p1, void *p2, void *p3)
{
	(void)p1;
	(void)p2;
	(void)p3;
	k_sleep(20); /* let every other thread get where it waits */
	if (z_scenario == 3)
		rx_kick(0x1234u);
	handle_frame(0x1234u);
	app_sink = 0;
}

/* ---- consumer: pending on a semaphore -------------------------------- */

Z_NOINLINE static int wait_for_data(void)
{
	int r = k_sem_take(&sem_data, K_FOREVER);
	app_sink += (uint32_t)r;
	return r;
}

Z_NOINLINE static void process_next(uint32_t n)
{
	app_sink = n + (uint32_t)wait_for_data();
}

static void consumer_main(void *p1, void *p2, void *p3)
{
	(void)p2;
	(void)p3;
	for (uint32_t n = (uint32_t)(uintptr_t)p1;; n++)
		process_next(n);
}

/* ---- logger: sleeping ------------------------------------------------ */

Z_NOINLINE static void flush_logs(int32_t ticks)
{
	k_sleep(ticks);
	app_sink++;
}

static void logger_main(void *p1, void *p2, void *p3)
{
	(void)p1;
	(void)p2;
	(void)p3;
	for (;;)
		flush_logs(100000);
}

/* ---- suspender: suspended itself ------------------------------------- */

/* Scenarios 1 and 2: an assertion-like check that raises a kernel oops
 * or panic (ARCH_EXCEPT: svc inline, here). */
Z_NOINLINE static void check_parked(uint32_t why)
{
	if (z_scenario == 1 || z_scenario == 2 || z_scenario == 5) {
		k_sleep(10); /* once every other thread waits */
		if (z_scenario == 1)
			k_oops();
		else
			k_panic();
	}
	app_sink = why;
}

Z_NOINLINE static void park(uint32_t why)
{
	check_parked(why);
	k_thread_suspend(k_current_get());
	app_sink = why + 1;
}

static void suspender_main(void *p1, void *p2, void *p3)
{
	(void)p1;
	(void)p2;
	(void)p3;
	for (;;)
		park(7);
}

/* ---- filter: sleeping with FP registers live (M4F) ------------------- */

Z_NOINLINE static sample_t run_filter(sample_t x, sample_t k)
{
	sample_t y = x * k + K_BIAS;
	if (z_scenario == 6) {
		/* Scenario 6: a k_panic with live FP state (M4F: the SVC stacks
		 * an extended frame, 26 words). */
		k_sleep(10);
		y = y * k;
		k_panic();
	}
	k_sleep(50000);
	return y * k + x; /* x, k, y live across the call */
}

static void filter_main(void *p1, void *p2, void *p3)
{
	(void)p2;
	(void)p3;
	sample_t x = (sample_t)(int32_t)(uintptr_t)p1;
	for (;;)
		filter_out = x = run_filter(x, K_GAIN);
}

/* ---- worker: preempted while computing ------------------------------- */

Z_NOINLINE static void crunch(uint32_t seed)
{
	for (;;)
		worker_count = worker_count * 1664525u + seed;
}

Z_NOINLINE static void crunch_block(uint32_t seed)
{
	crunch(seed ^ 0x5a5aU);
	app_sink = seed;
}

static void worker_main(void *p1, void *p2, void *p3)
{
	(void)p2;
	(void)p3;
	crunch_block((uint32_t)(uintptr_t)p1);
}

/* ---- deferred and idle ------------------------------------------------ */

static void deferred_main(void *p1, void *p2, void *p3)
{
	(void)p1;
	(void)p2;
	(void)p3;
	app_sink = 99;
}

static void idle_main(void *p1, void *p2, void *p3)
{
	(void)p1;
	(void)p2;
	(void)p3;
	for (;;)
		__asm volatile("" ::: "memory");
}

/* k_sys_fatal_error_handler: an oops only ends its thread. */
int z_sys_fatal_error_handler(uint32_t reason)
{
	return reason == K_ERR_KERNEL_OOPS;
}

void app_main(void)
{
	z_printk("*** Booting Zephyr OS build zkernel ***\r\n");
	static const char *const digits[] = {"0", "1", "2", "3", "4", "5", "6"};
	z_log(LOG_LEVEL_INF, "app", "starting 8 threads, scenario ", digits[z_scenario < 7 ? z_scenario : 0]);
	z_mpu_guard_null();
	k_sem_init(&sem_data, 0, 1);
	k_thread_create(&idle_thread, "idle", idle_stack, sizeof idle_stack, idle_main, 0, 0, 0, K_LOWEST_PRIO, 1);
	/* As in Zephyr, the idle thread is not on the ready queue (no state
	 * bit): the scheduler picks it when nothing is ready. */
	idle_thread.base.thread_state = 0;
	k_thread_create(&deferred_thread, "deferred", deferred_stack, sizeof deferred_stack, deferred_main, 0, 0, 0, 12, 0);
	k_thread_create(&worker_thread, "worker", worker_stack, STACK_SIZE, worker_main, (void *)0x1234, 0, 0, 10, 1);
	k_thread_create(&filter_thread, "filter", filter_stack, STACK_SIZE, filter_main, (void *)3, 0, 0, 8, 1);
	k_thread_create(&suspender_thread, "suspender", suspender_stack, STACK_SIZE, suspender_main, 0, 0, 0, 7, 1);
	k_thread_create(&logger_thread, "logger", logger_stack, STACK_SIZE, logger_main, 0, 0, 0, 6, 1);
	k_thread_create(&consumer_thread, "consumer", consumer_stack, STACK_SIZE, consumer_main, (void *)1, 0, 0, 5, 1);
	k_thread_create(&net_rx_thread, "net_rx", net_rx_stack, STACK_SIZE, net_rx_main, 0, 0, 0, 3, 1);
	z_kernel_start(&idle_thread);
}
