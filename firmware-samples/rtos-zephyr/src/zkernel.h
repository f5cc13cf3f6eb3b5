/*
 * zkernel: faultline's own small preemptive kernel for Cortex-M that shows
 * a debugger what a Zephyr 3.x kernel shows it. Nothing here comes from
 * Zephyr's sources; the type names, member names, member order and the
 * meaning of the state bits are the public facts a debugger relies on
 * (OpenOCD's and pyOCD's Zephyr support, Zephyr's coredump tools):
 *
 *   struct z_kernel _kernel      cpus[0].current, cpus[0].idle_thread,
 *                                ready_q, threads (CONFIG_THREAD_MONITOR)
 *   struct k_thread              base (struct _thread_base: pended_on,
 *                                user_options, thread_state, prio inside an
 *                                anonymous union, timeout), callee_saved
 *                                (v1..v8 = r4..r11, psp), entry, next_thread,
 *                                name[32] (CONFIG_THREAD_NAME), stack_info
 *                                (start, size, delta), arch (basepri,
 *                                swap_return_value, FP: preempt_float s16..s31,
 *                                mode with mode_exc_return in its second byte)
 *   _kernel_thread_info_offsets  the offsets table OpenOCD reads, in its
 *                                index order; _kernel_thread_info_num_offsets,
 *                                _kernel_thread_info_size_t_size
 *
 * Configuration this mimics: one CPU, CONFIG_THREAD_MONITOR,
 * CONFIG_THREAD_NAME (32), CONFIG_THREAD_STACK_INFO, CONFIG_INIT_STACKS
 * (stacks filled with 0xaa), CONFIG_ARM_STORE_EXC_RETURN, and on the M4F
 * build CONFIG_FPU_SHARING (s16..s31 saved in the thread when its EXC_RETURN
 * says the hardware stacked an extended frame).
 */
#ifndef ZKERNEL_H
#define ZKERNEL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__clang__)
#define Z_NOINLINE __attribute__((noinline))
#else
#define Z_NOINLINE __attribute__((noinline, noclone))
#endif
#define Z_USED __attribute__((used))

#if defined(__ARM_FP)
#define Z_FPU_SHARING 1
#else
#define Z_FPU_SHARING 0
#endif

#define REG32(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#define SCB_ICSR REG32(0xE000ED04u)
#define SCB_SHPR3 REG32(0xE000ED20u)
#define SCB_CPACR REG32(0xE000ED88u)
#define SYST_CSR REG32(0xE000E010u)
#define SYST_RVR REG32(0xE000E014u)
#define SYST_CVR REG32(0xE000E018u)
#define MPU_CTRL REG32(0xE000ED94u)
#define MPU_RNR REG32(0xE000ED98u)
#define MPU_RBAR REG32(0xE000ED9Cu)
#define MPU_RASR REG32(0xE000EDA0u)
#define ICSR_PENDSVSET (1u << 28)
#define NVIC_ISER0 REG32(0xE000E100u)
#define NVIC_ISPR0 REG32(0xE000E200u)

/* thread_state bits. */
#define _THREAD_DUMMY (1u << 0)
#define _THREAD_PENDING (1u << 1)
#define _THREAD_PRESTART (1u << 2)
#define _THREAD_DEAD (1u << 3)
#define _THREAD_SUSPENDED (1u << 4)
#define _THREAD_ABORTING (1u << 5)
#define _THREAD_QUEUED (1u << 7)

#define K_LOWEST_PRIO 15
#define K_FOREVER (-1)

typedef struct _dnode {
	struct _dnode *next;
	struct _dnode *prev;
} sys_dnode_t;
typedef sys_dnode_t sys_dlist_t;

typedef struct {
	sys_dlist_t waitq;
} _wait_q_t;

struct _timeout;
typedef void (*_timeout_func_t)(struct _timeout *t);

struct _timeout {
	sys_dnode_t node;
	_timeout_func_t fn;
	int32_t dticks;
};

struct _thread_base {
	sys_dnode_t qnode_dlist;
	_wait_q_t *pended_on;
	uint8_t user_options;
	uint8_t thread_state;
	union {
		struct {
			int8_t prio;
			uint8_t sched_locked;
		};
		uint16_t preempt;
	};
	uint32_t order_key;
	void *swap_data;
	struct _timeout timeout;
};

struct _callee_saved {
	uint32_t v1; /* r4 */
	uint32_t v2; /* r5 */
	uint32_t v3; /* r6 */
	uint32_t v4; /* r7 */
	uint32_t v5; /* r8 */
	uint32_t v6; /* r9 */
	uint32_t v7; /* r10 */
	uint32_t v8; /* r11 */
	uint32_t psp;
};

#if Z_FPU_SHARING
struct _preempt_float {
	float s16, s17, s18, s19, s20, s21, s22, s23;
	float s24, s25, s26, s27, s28, s29, s30, s31;
};
#endif

struct _thread_arch {
	uint32_t basepri;
	uint32_t swap_return_value;
#if Z_FPU_SHARING
	struct _preempt_float preempt_float;
#endif
	union {
		uint32_t mode;
		struct {
			uint8_t mode_bits;
			uint8_t mode_exc_return;
			uint16_t mode_reserved2;
		};
	};
};

typedef void (*k_thread_entry_t)(void *p1, void *p2, void *p3);

struct __thread_entry {
	k_thread_entry_t pEntry;
	void *parameter1;
	void *parameter2;
	void *parameter3;
};

struct _thread_stack_info {
	uintptr_t start;
	size_t size;
	size_t delta;
};

#define CONFIG_THREAD_MAX_NAME_LEN 32

struct k_thread {
	struct _thread_base base;
	struct _callee_saved callee_saved;
	void *init_data;
	_wait_q_t join_queue;
	struct __thread_entry entry;
	struct k_thread *next_thread;
	char name[CONFIG_THREAD_MAX_NAME_LEN];
	void *custom_data;
	struct _thread_stack_info stack_info;
	int swap_retval;
	struct _thread_arch arch;
};

struct _cpu {
	uint32_t nested;
	char *irq_stack;
	struct k_thread *current;
	struct k_thread *idle_thread;
	uint8_t id;
};

struct _ready_q {
	struct k_thread *cache;
	sys_dlist_t runq;
};

struct z_kernel {
	struct _cpu cpus[1];
	struct _ready_q ready_q;
	struct k_thread *threads;
};

extern struct z_kernel _kernel;

struct k_sem {
	_wait_q_t wait_q;
	uint32_t count;
	uint32_t limit;
};

#define K_THREAD_STACK_DEFINE(sym, size) \
	static uint8_t sym[size] __attribute__((aligned(8)))

void k_thread_create(struct k_thread *t, const char *name, uint8_t *stack, size_t size,
		     k_thread_entry_t entry, void *p1, void *p2, void *p3, int prio, int start);
void k_thread_start(struct k_thread *t);
int k_sem_take(struct k_sem *sem, int32_t timeout);
void k_sem_give(struct k_sem *sem);
void k_sem_init(struct k_sem *sem, uint32_t initial, uint32_t limit);
int32_t k_sleep(int32_t ticks);
void k_thread_suspend(struct k_thread *t);
struct k_thread *k_current_get(void);
void z_kernel_start(struct k_thread *idle) __attribute__((noreturn));
void z_mpu_guard_null(void);

/* Fatal error reasons (k_fatal_error_reason). */
#define K_ERR_CPU_EXCEPTION 0
#define K_ERR_KERNEL_OOPS 3
#define K_ERR_KERNEL_PANIC 4

/* ARCH_EXCEPT as Zephyr's ARM port has it: the reason in r0, then
 * "svc #2" (the runtime-exception SVC); the SVC handler calls the fatal
 * error path with the exception frame the SVC stacked. */
#define Z_ARCH_EXCEPT(reason)                                              \
	do {                                                               \
		register uint32_t r0_ __asm("r0") = (reason);              \
		__asm volatile("svc #2" : : "r"(r0_) : "memory");          \
	} while (0)
#define k_oops() Z_ARCH_EXCEPT(K_ERR_KERNEL_OOPS)
#define k_panic() Z_ARCH_EXCEPT(K_ERR_KERNEL_PANIC)

/* The console: Zephyr's log output format (timestamp, colours, CRLF). */
#define LOG_LEVEL_ERR 1
#define LOG_LEVEL_WRN 2
#define LOG_LEVEL_INF 3
void z_log(int level, const char *module, const char *msg, const char *arg);
void z_printk(const char *s);

/* app.c */
void app_main(void);
extern volatile uint32_t z_scenario;
/* z_sys_fatal_error_handler: the application's k_sys_fatal_error_handler;
 * it returns nonzero to let the kernel abort the faulting thread and go on
 * (Zephyr: the handler returns), zero to halt. */
int z_sys_fatal_error_handler(uint32_t reason);
void z_rx_isr(void);

#endif
