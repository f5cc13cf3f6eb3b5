/*
 * The test application: 13 tasks brought deterministically into every state
 * a FreeRTOS debugger shows, then a crash in the running task. Time only
 * advances when the idle task runs (it pends SysTick itself), so the final
 * picture does not depend on host speed.
 *
 * At the crash (tick 4):
 *   net      running    prio 3  scheduler suspended, BusFault 4 calls deep
 *   logger   ready      prio 3  yielded 3 calls deep (FP registers live on FPU builds)
 *   isrwait  ready      prio 4  woken by the device ISR while the scheduler was
 *                               suspended: on xPendingReadyList
 *   Tmr Svc  blocked    prio 6  timer task waiting on TmrQ until the next expiry
 *   hi       blocked    prio 5  waiting forever on mutex "lock" held by lo
 *   lo       blocked    prio 5  (base 1) holds "lock", waits forever on "cmdq"
 *   rx       blocked    prio 4  waiting on "rxq" with a timeout
 *   oneshot  deleted    prio 4  deleted itself (on xTasksWaitingTermination)
 *   dsp      blocked    prio 2  vTaskDelay-style delay 3 calls deep (FP live on FPU builds)
 *   monitor  suspended  prio 2  suspended itself (the cfg variant: blocked
 *                               on a task notification without timeout)
 *   deep     blocked    prio 2  overflowed its stack by recursion, then delayed
 *   tx       blocked    prio 2  waiting forever to send to the full "txq"
 *   IDLE     ready      prio 0
 */
#include "kernel.h"

#define NVIC_ISER0 (*(volatile uint32_t *)0xE000E100u)
#define NVIC_ISPR0 (*(volatile uint32_t *)0xE000E200u)
#define DEVICE_IRQ 0
/* Unmapped on every board used: a precise BusFault, escalated to HardFault.
 * (On mps2-an505 0x30000000 is the Secure alias of RAM, so it differs.) */
#if defined(__ARM_ARCH_8M_MAIN__)
#define BAD_ADDR 0x90000010u
#else
#define BAD_ADDR 0x30000010u
#endif

#define STK_SMALL 128
#define STK_FP 256

#define TASK(name, words)                                 \
	static TCB_t name##_tcb;                          \
	static StackType_t name##_stack[words] __attribute__((aligned(8)))

TASK(idle, 96);
TASK(tmr, 160);
TASK(hi, STK_SMALL);
TASK(lo, STK_SMALL);
TASK(rx, STK_SMALL);
TASK(oneshot, STK_SMALL);
TASK(isrwait, STK_SMALL);
TASK(net, STK_SMALL);
TASK(logger, STK_FP);
TASK(dsp, STK_FP);
TASK(monitor, STK_SMALL);
TASK(tx, STK_SMALL);
static TCB_t deep_tcb;
/* The deep task's stack sits above a guard area its recursion overflows into. */
static struct {
	StackType_t guard[192];
	StackType_t stack[64];
} deep_mem __attribute__((aligned(8)));

static Queue_t tmrq, rxq, txq, cmdq, isrsem, go_hi, lock;
static int8_t tmrq_buf[4 * 4], rxq_buf[4 * 4], txq_buf[2 * 4], cmdq_buf[2 * 4], sem_buf[4];

/* The kernel's own view of every task's state at the crash (the oracle
 * compares faultline's states with these). */
volatile uint32_t rtk_oracle_states[16];
volatile uint32_t rtk_timer_fired;

/* (num: float on FPU builds, else an integer: no soft-float library.) */
#if defined(__ARM_FP)
typedef float num;
#else
typedef uint32_t num;
#endif
volatile num rtk_fp_sink;

/* Global, so the oracle can read it at every optimisation level. */
__attribute__((used)) TCB_t *const all_tasks[] = {
	&idle_tcb, &tmr_tcb, &hi_tcb, &lo_tcb, &rx_tcb, &oneshot_tcb, &isrwait_tcb,
	&net_tcb, &logger_tcb, &dsp_tcb, &monitor_tcb, &deep_tcb, &tx_tcb,
};

/* ---- idle: the only source of time ---- */

static void prvIdleTask(void *arg)
{
	(void)arg;
	for (;;) {
		rtk_port_pend_tick();
		rtk_yield();
	}
}

/* ---- timer service: a callback runs every 3 ticks ---- */

static NOINLINE void blink_timer_callback(uint32_t id)
{
	rtk_timer_fired += id;
}

static NOINLINE void process_timer_or_block(TickType_t *next)
{
	uint32_t cmd;
	TickType_t now = xTickCount;
	if (now >= *next) {
		blink_timer_callback(1);
		*next += 3;
	}
	rtk_queue_receive(&tmrq, &cmd, *next - xTickCount);
}

static void prvTimerTask(void *arg)
{
	(void)arg;
	TickType_t next = 2;
	for (;;)
		process_timer_or_block(&next);
}

/* ---- mutex: hi waits for the lock lo holds ---- */

static NOINLINE void hi_acquire(void)
{
	rtk_mutex_take(&lock, portMAX_DELAY);
}

static void hi_task(void *arg)
{
	(void)arg;
	uint32_t v;
	rtk_queue_receive(&go_hi, &v, portMAX_DELAY);
	hi_acquire();
	for (;;)
		rtk_delay(1000);
}

static NOINLINE void lo_wait_command(void)
{
	uint32_t cmd;
	rtk_queue_receive(&cmdq, &cmd, portMAX_DELAY);
}

static NOINLINE void lo_critical_section(void)
{
	uint32_t go = 1;
	rtk_mutex_take(&lock, portMAX_DELAY);
	rtk_queue_send(&go_hi, &go, 0); /* hi preempts here and blocks on lock */
	lo_wait_command();
}

static void lo_task(void *arg)
{
	(void)arg;
	lo_critical_section();
	for (;;)
		rtk_delay(1000);
}

/* ---- queue waits ---- */

static NOINLINE uint32_t rx_poll(void)
{
	uint32_t v = 0;
	rtk_queue_receive(&rxq, &v, 1000);
	return v;
}

static NOINLINE uint32_t rx_frame(void)
{
	return rx_poll() + 1;
}

static void rx_task(void *arg)
{
	(void)arg;
	for (;;)
		rtk_fp_sink = (num)rx_frame();
}

static NOINLINE void tx_push(uint32_t v)
{
	rtk_queue_send(&txq, &v, portMAX_DELAY);
}

static void tx_task(void *arg)
{
	(void)arg;
	for (uint32_t i = 0;; i++)
		tx_push(i);
}

static NOINLINE void isr_wait_event(void)
{
	uint32_t v;
	rtk_queue_receive(&isrsem, &v, portMAX_DELAY);
}

static void isrwait_task(void *arg)
{
	(void)arg;
	for (;;)
		isr_wait_event();
}

/* The device interrupt: gives the semaphore isrwait waits on. */
void device_irq_handler(void)
{
	uint32_t one = 1;
	rtk_queue_send_from_isr(&isrsem, &one);
}

/* ---- deleted, suspended ---- */

static void oneshot_task(void *arg)
{
	(void)arg;
	rtk_timer_fired += 100;
	rtk_delete_self();
}

static NOINLINE void monitor_park(void)
{
#if RTK_NOTIFY_WAIT
	/* Blocked on a task notification (the last index), no timeout: on
	 * xSuspendedTaskList, told apart only by its notify state. */
	if (ulTaskGenericNotifyTake(RTK_NOTIFY_N - 1, 1, portMAX_DELAY) == 0)
		rtk_suspend_self(); /* never: it keeps the function, as elsewhere */
#else
	rtk_suspend_self();
#endif
}

static NOINLINE void monitor_check(void)
{
	monitor_park();
}

static void monitor_task(void *arg)
{
	(void)arg;
	for (;;)
		monitor_check();
}

/* ---- stack overflow: recursion past the bottom of a 256-byte stack ---- */

static NOINLINE uint32_t deep_recurse(uint32_t n)
{
	volatile uint32_t pad[6];
	pad[0] = n;
	if (n == 0) {
		rtk_delay(1000);
		return pad[0];
	}
	return deep_recurse(n - 1) + pad[0];
}

static void deep_task(void *arg)
{
	(void)arg;
	for (;;)
		rtk_fp_sink = (num)deep_recurse(12);
}

/* ---- FP work (integer on cores without an FPU) ---- */

static NOINLINE num dsp_filter_step(num x)
{
	num y = x * (num)3 + (num)1;
	rtk_delay(1000);
	return y * (num)2 + x;
}

static NOINLINE num dsp_filter(num x)
{
	num a = x + (num)2;
	return dsp_filter_step(a) + a;
}

static void dsp_task(void *arg)
{
	(void)arg;
	num acc = (num)5;
	for (;;)
		acc = dsp_filter(acc);
}

static NOINLINE num log_format(num v)
{
	num w = v * (num)7;
	rtk_yield();
	return w + v;
}

static NOINLINE num log_flush(num v)
{
	num r = log_format(v + (num)1);
	return r * (num)3;
}

static void logger_task(void *arg)
{
	(void)arg;
	num v = (num)9;
	rtk_delay(4);
	for (;;)
		v = log_flush(v);
}

/* ---- the crashing task ---- */

static NOINLINE void record_states(void)
{
	for (unsigned i = 0; i < sizeof all_tasks / sizeof all_tasks[0]; i++)
		rtk_oracle_states[i] = rtk_task_state(all_tasks[i]);
}

static NOINLINE void net_store(uint32_t v)
{
	*(volatile uint32_t *)BAD_ADDR = v; /* BusFault -> HardFault */
}

#if RTK_HOOK
/* The hook variant crashes here, inside PendSV: vTaskSwitchContext found
 * the deep task's stack bottom overwritten when it was switched out. */
void vApplicationStackOverflowHook(TaskHandle_t task, char *name)
{
	(void)task;
	(void)name;
	record_states();
	net_store(0x0f);
}
#endif

static NOINLINE void net_parse(uint32_t v)
{
	net_store(v * 3);
	rtk_fp_sink = (num)v;
}

static NOINLINE void net_receive(void)
{
	rtk_suspend_all();
	NVIC_ISPR0 = 1u << DEVICE_IRQ; /* the device ISR runs now */
	__asm volatile("dsb\n\tisb" ::: "memory");
	record_states();
	net_parse(0x55);
}

static void net_task(void *arg)
{
	(void)arg;
	rtk_delay(4);
	for (;;)
		net_receive();
}

int main(void)
{
	rtk_kernel_init();
	rtk_queue_init(&tmrq, tmrq_buf, 4, 4, 0, "TmrQ");
	rtk_queue_init(&rxq, rxq_buf, 4, 4, 0, "rxq");
	rtk_queue_init(&txq, txq_buf, 2, 4, 0, "txq");
	rtk_queue_init(&cmdq, cmdq_buf, 2, 4, 0, "cmdq");
	rtk_queue_init(&isrsem, sem_buf, 1, 0, 3, "isrsem");
	rtk_queue_init(&go_hi, NULL, 1, 0, 3, NULL);
	rtk_mutex_init(&lock, "lock");
	NVIC_ISER0 = 1u << DEVICE_IRQ;

	rtk_task_create(&idle_tcb, prvIdleTask, "IDLE", idle_stack, 96, NULL, 0, 0);
	rtk_task_create(&tmr_tcb, prvTimerTask, "Tmr Svc", tmr_stack, 160, NULL, 6, 0);
	rtk_task_create(&hi_tcb, hi_task, "hi", hi_stack, STK_SMALL, NULL, 5, 0);
	rtk_task_create(&oneshot_tcb, oneshot_task, "oneshot", oneshot_stack, STK_SMALL, NULL, 4, 0);
	rtk_task_create(&rx_tcb, rx_task, "rx", rx_stack, STK_SMALL, NULL, 4, 0);
	rtk_task_create(&isrwait_tcb, isrwait_task, "isrwait", isrwait_stack, STK_SMALL, NULL, 4, 0);
	rtk_task_create(&logger_tcb, logger_task, "logger", logger_stack, STK_FP, NULL, 3, 0);
	rtk_task_create(&net_tcb, net_task, "net", net_stack, STK_SMALL, NULL, 3, 0);
	rtk_task_create(&dsp_tcb, dsp_task, "dsp", dsp_stack, STK_FP, NULL, 2, 0);
	rtk_task_create(&monitor_tcb, monitor_task, "monitor", monitor_stack, STK_SMALL, NULL, 2, 0);
	rtk_task_create(&deep_tcb, deep_task, "deep", deep_mem.stack, 64, NULL, 2,
			(uint32_t)deep_mem.guard);
	rtk_task_create(&tx_tcb, tx_task, "tx", tx_stack, STK_SMALL, NULL, 2, 0);
	rtk_task_create(&lo_tcb, lo_task, "lo", lo_stack, STK_SMALL, NULL, 1, 0);
	rtk_start();
}
