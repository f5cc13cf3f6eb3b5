/*
 * zkernel: the scheduler, the context switch, the fault handler and the
 * coredump writer (see zkernel.h for what this reproduces and why).
 *
 * Context switch (what a debugger reads back): a thread gives up the CPU in
 * arch_swap, which pends PendSV and unmasks interrupts; SysTick pends it
 * when a sleeping thread of higher priority wakes. z_arm_pendsv stores
 * r4-r11 and PSP in the outgoing thread's callee_saved, the low byte of
 * EXC_RETURN in arch.mode_exc_return and, when that EXC_RETURN says the
 * hardware stacked an extended (FP) frame, s16-s31 in arch.preempt_float.
 * The hardware frame (r0-r3, r12, lr, pc, xpsr, and s0-s15, fpscr for an
 * extended frame) stays at the saved PSP.
 */
#include "zkernel.h"

/* Offsets the assembly uses, checked against the structs below. */
#define K_CURRENT 8
#define T_CALLEE 40
#if Z_FPU_SHARING
#define T_PREEMPT_FLOAT 168
#define T_MODE 232
#else
#define T_MODE 168
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

_Static_assert(offsetof(struct z_kernel, cpus[0].current) == K_CURRENT, "K_CURRENT");
_Static_assert(offsetof(struct k_thread, callee_saved) == T_CALLEE, "T_CALLEE");
_Static_assert(offsetof(struct k_thread, arch.mode) == T_MODE, "T_MODE");
#if Z_FPU_SHARING
_Static_assert(offsetof(struct k_thread, arch.preempt_float) == T_PREEMPT_FLOAT, "T_PREEMPT_FLOAT");
#endif

struct z_kernel _kernel;
static struct k_thread z_dummy_thread;
static sys_dlist_t z_timeout_list;
volatile uint32_t z_ticks;

/* ------------------------------------------------------------------ */
/* The thread-info offsets table (its index order is fixed: version,    */
/* _kernel current, _kernel threads, entry, next_thread, thread_state,  */
/* user_options, prio, stack pointer, name, arch, preempt_float,        */
/* coop_float, ARM EXC_RETURN, ARC relinquish cause).                   */

#define THREAD_INFO_UNIMPLEMENTED 0xffffffffu

Z_USED const size_t _kernel_thread_info_offsets[] = {
	1,
	offsetof(struct z_kernel, cpus[0].current),
	offsetof(struct z_kernel, threads),
	offsetof(struct k_thread, entry),
	offsetof(struct k_thread, next_thread),
	offsetof(struct k_thread, base.thread_state),
	offsetof(struct k_thread, base.user_options),
	offsetof(struct k_thread, base.prio),
	offsetof(struct k_thread, callee_saved.psp),
	offsetof(struct k_thread, name),
	offsetof(struct k_thread, arch),
#if Z_FPU_SHARING
	offsetof(struct k_thread, arch.preempt_float),
#else
	THREAD_INFO_UNIMPLEMENTED,
#endif
	THREAD_INFO_UNIMPLEMENTED,
	offsetof(struct k_thread, arch.mode_exc_return),
	THREAD_INFO_UNIMPLEMENTED,
};
Z_USED const size_t _kernel_thread_info_num_offsets =
	sizeof(_kernel_thread_info_offsets) / sizeof(_kernel_thread_info_offsets[0]);
Z_USED const uint8_t _kernel_thread_info_size_t_size = (uint8_t)sizeof(size_t);

/* ------------------------------------------------------------------ */
/* Doubly linked lists.                                                 */

static void dlist_init(sys_dlist_t *l) { l->next = l->prev = l; }

static void dlist_append(sys_dlist_t *l, sys_dnode_t *n)
{
	n->next = l;
	n->prev = l->prev;
	l->prev->next = n;
	l->prev = n;
}

static void dlist_remove(sys_dnode_t *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = NULL;
}

static uint32_t irq_lock(void)
{
	uint32_t key;
	__asm volatile("mrs %0, primask\n cpsid i" : "=r"(key)::"memory");
	return key;
}

static void irq_unlock(uint32_t key)
{
	if (key == 0)
		__asm volatile("cpsie i" ::: "memory");
}

struct k_thread *k_current_get(void) { return _kernel.cpus[0].current; }

/* ------------------------------------------------------------------ */
/* Scheduling.                                                          */

/* z_next_thread picks the queued thread of best (lowest) priority, the
 * current one on a tie, and makes it current. Called by z_arm_pendsv with
 * interrupts masked. */
Z_USED struct k_thread *z_next_thread(void)
{
	struct k_thread *cur = _kernel.cpus[0].current;
	struct k_thread *best = NULL;
	if (cur->base.thread_state & _THREAD_QUEUED)
		best = cur;
	for (struct k_thread *t = _kernel.threads; t != NULL; t = t->next_thread) {
		if (!(t->base.thread_state & _THREAD_QUEUED))
			continue;
		if (best == NULL || t->base.prio < best->base.prio)
			best = t;
	}
	if (best == NULL)
		best = _kernel.cpus[0].idle_thread;
	_kernel.ready_q.cache = best;
	_kernel.cpus[0].current = best;
	return best;
}

/* arch_swap gives up the CPU: PendSV runs as soon as interrupts are
 * unmasked, so the saved hardware frame's PC is in this function. */
Z_NOINLINE static int arch_swap(uint32_t key)
{
	struct k_thread *cur = _kernel.cpus[0].current;
	cur->arch.basepri = key;
	cur->arch.swap_return_value = (uint32_t)-11; /* -EAGAIN */
	SCB_ICSR = ICSR_PENDSVSET;
	__asm volatile("cpsie i\n isb" ::: "memory");
	return (int)_kernel.cpus[0].current->arch.swap_return_value;
}

Z_NOINLINE static int z_pend_curr(uint32_t key, _wait_q_t *wq, int32_t timeout)
{
	struct k_thread *cur = _kernel.cpus[0].current;
	cur->base.thread_state = (uint8_t)((cur->base.thread_state & ~_THREAD_QUEUED) | _THREAD_PENDING);
	cur->base.pended_on = wq;
	dlist_append(&wq->waitq, &cur->base.qnode_dlist);
	if (timeout != K_FOREVER) {
		cur->base.timeout.dticks = timeout;
		dlist_append(&z_timeout_list, &cur->base.timeout.node);
	}
	return arch_swap(key);
}

void k_sem_init(struct k_sem *sem, uint32_t initial, uint32_t limit)
{
	dlist_init(&sem->wait_q.waitq);
	sem->count = initial;
	sem->limit = limit;
}

Z_NOINLINE int k_sem_take(struct k_sem *sem, int32_t timeout)
{
	uint32_t key = irq_lock();
	if (sem->count > 0) {
		sem->count--;
		irq_unlock(key);
		return 0;
	}
	return z_pend_curr(key, &sem->wait_q, timeout);
}

static void z_ready_thread(struct k_thread *t)
{
	t->base.thread_state = (uint8_t)((t->base.thread_state & ~_THREAD_PENDING) | _THREAD_QUEUED);
	t->base.pended_on = NULL;
	if (_kernel.cpus[0].current == NULL || t->base.prio < _kernel.cpus[0].current->base.prio)
		SCB_ICSR = ICSR_PENDSVSET;
}

void k_sem_give(struct k_sem *sem)
{
	uint32_t key = irq_lock();
	sys_dnode_t *n = sem->wait_q.waitq.next;
	if (n != &sem->wait_q.waitq) {
		struct k_thread *t = (struct k_thread *)((char *)n - offsetof(struct k_thread, base.qnode_dlist));
		dlist_remove(n);
		if (t->base.timeout.node.next != NULL)
			dlist_remove(&t->base.timeout.node);
		t->arch.swap_return_value = 0;
		z_ready_thread(t);
	} else if (sem->count < sem->limit) {
		sem->count++;
	}
	irq_unlock(key);
}

Z_NOINLINE static int32_t z_tick_sleep(int32_t ticks)
{
	uint32_t key = irq_lock();
	struct k_thread *cur = _kernel.cpus[0].current;
	cur->base.thread_state &= (uint8_t)~_THREAD_QUEUED;
	cur->base.timeout.dticks = ticks;
	dlist_append(&z_timeout_list, &cur->base.timeout.node);
	(void)arch_swap(key);
	return 0;
}

Z_NOINLINE int32_t k_sleep(int32_t ticks) { return z_tick_sleep(ticks); }

Z_NOINLINE void k_thread_suspend(struct k_thread *t)
{
	uint32_t key = irq_lock();
	t->base.thread_state = (uint8_t)((t->base.thread_state & ~_THREAD_QUEUED) | _THREAD_SUSPENDED);
	if (t == _kernel.cpus[0].current) {
		(void)arch_swap(key);
		return;
	}
	irq_unlock(key);
}

void SysTick_Handler(void)
{
	z_ticks++;
	sys_dnode_t *n = z_timeout_list.next;
	for (int guard = 0; n != &z_timeout_list && guard < 64; guard++) {
		sys_dnode_t *next = n->next;
		struct _timeout *to = (struct _timeout *)n;
		if (--to->dticks <= 0) {
			struct k_thread *t = (struct k_thread *)((char *)to - offsetof(struct k_thread, base.timeout));
			dlist_remove(n);
			if (t->base.pended_on != NULL)
				dlist_remove(&t->base.qnode_dlist);
			z_ready_thread(t);
		}
		n = next;
	}
}

/* z_thread_entry is every thread's first function: it runs the entry and
 * ends the thread when the entry returns (which none of the sample's do). */
__attribute__((noreturn)) Z_NOINLINE static void z_thread_entry(k_thread_entry_t entry, void *p1, void *p2, void *p3)
{
	entry(p1, p2, p3);
	uint32_t key = irq_lock();
	struct k_thread *cur = _kernel.cpus[0].current;
	cur->base.thread_state = _THREAD_DEAD;
	for (struct k_thread **pp = &_kernel.threads; *pp != NULL; pp = &(*pp)->next_thread) {
		if (*pp == cur) {
			*pp = cur->next_thread;
			break;
		}
	}
	(void)arch_swap(key);
	for (;;)
		__asm volatile("" ::: "memory");
}

void k_thread_create(struct k_thread *t, const char *name, uint8_t *stack, size_t size,
		     k_thread_entry_t entry, void *p1, void *p2, void *p3, int prio, int start)
{
	for (size_t i = 0; i < size; i++)
		((volatile uint8_t *)stack)[i] = 0xaa; /* CONFIG_INIT_STACKS */
	size_t n = 0;
	for (; name[n] != 0 && n < CONFIG_THREAD_MAX_NAME_LEN - 1; n++)
		t->name[n] = name[n];
	t->name[n] = 0;
	t->stack_info.start = (uintptr_t)stack;
	t->stack_info.size = size;
	t->stack_info.delta = 0;
	t->entry.pEntry = entry;
	t->entry.parameter1 = p1;
	t->entry.parameter2 = p2;
	t->entry.parameter3 = p3;
	t->base.prio = (int8_t)prio;
	t->base.user_options = 0;
	/* The initial exception frame: exception return "calls"
	 * z_thread_entry(entry, p1, p2, p3). */
	uint32_t *frame = (uint32_t *)(((uintptr_t)stack + size) & ~(uintptr_t)7) - 8;
	frame[0] = (uint32_t)(uintptr_t)entry;
	frame[1] = (uint32_t)(uintptr_t)p1;
	frame[2] = (uint32_t)(uintptr_t)p2;
	frame[3] = (uint32_t)(uintptr_t)p3;
	frame[4] = 0;
	frame[5] = 0; /* lr: nothing to return to */
	frame[6] = (uint32_t)(uintptr_t)z_thread_entry & ~1u;
	frame[7] = 0x01000000u; /* xPSR: Thumb */
	t->callee_saved.psp = (uint32_t)(uintptr_t)frame;
	t->arch.mode = 0;
	t->arch.mode_exc_return = 0xFD; /* thread mode, PSP, basic frame */
	t->base.thread_state = start ? _THREAD_QUEUED : _THREAD_PRESTART;
	/* CONFIG_THREAD_MONITOR: the newest thread heads the list. */
	uint32_t key = irq_lock();
	t->next_thread = _kernel.threads;
	_kernel.threads = t;
	irq_unlock(key);
}

void k_thread_start(struct k_thread *t)
{
	uint32_t key = irq_lock();
	t->base.thread_state = _THREAD_QUEUED;
	irq_unlock(key);
}

/* ------------------------------------------------------------------ */
/* PendSV: the context switch.                                          */

__attribute__((naked)) void z_arm_pendsv(void)
{
	__asm volatile(
		"ldr r1, =_kernel\n"
		"ldr r2, [r1, #" STR(K_CURRENT) "]\n"
		"mrs r0, psp\n"
		"add r3, r2, #" STR(T_CALLEE) "\n"
		"stmia r3, {r4-r11}\n"
		"str r0, [r3, #32]\n"
		"mov r12, lr\n"
		"strb r12, [r2, #" STR(T_MODE) " + 1]\n"
#if Z_FPU_SHARING
		"tst lr, #0x10\n"
		"bne 1f\n"
		"add r3, r2, #" STR(T_PREEMPT_FLOAT) "\n"
		"vstmia r3, {s16-s31}\n"
		"1:\n"
#endif
		"cpsid i\n"
		"bl z_next_thread\n"
		"cpsie i\n"
		"add r3, r0, #" STR(T_CALLEE) "\n"
		"ldmia r3, {r4-r11}\n"
		"ldr r1, [r3, #32]\n"
		"ldrb r2, [r0, #" STR(T_MODE) " + 1]\n"
		"mvn r12, #0xff\n"
		"orr lr, r12, r2\n"
#if Z_FPU_SHARING
		"tst lr, #0x10\n"
		"bne 2f\n"
		"add r3, r0, #" STR(T_PREEMPT_FLOAT) "\n"
		"vldmia r3, {s16-s31}\n"
		"2:\n"
#endif
		"msr psp, r1\n"
		"bx lr\n");
}

/* MPU region 0 makes a NULL access fault (address 0 is RAM on MPS2):
 * base 0, 32 bytes, no access, execute-never; PRIVDEFENA keeps the default
 * map elsewhere. */
void z_mpu_guard_null(void)
{
	MPU_RNR = 0;
	MPU_RBAR = 0x00000000u;
	MPU_RASR = (1u << 28) | (4u << 1) | 1u;
	MPU_CTRL = (1u << 2) | 1u;
	__asm volatile("dsb\n isb" ::: "memory");
}

void z_kernel_start(struct k_thread *idle)
{
	dlist_init(&z_timeout_list);
	_kernel.cpus[0].idle_thread = idle;
	z_dummy_thread.base.thread_state = _THREAD_DUMMY;
	z_dummy_thread.arch.mode_exc_return = 0xFD;
	_kernel.cpus[0].current = &z_dummy_thread;
	SCB_SHPR3 = (0xFFu << 16) | (0x80u << 24); /* PendSV lowest, SysTick above it */
	SYST_RVR = 25000u - 1u;                     /* 1 kHz at 25 MHz */
	SYST_CVR = 0;
	SYST_CSR = 7u; /* processor clock, interrupt, enable */
	SCB_ICSR = ICSR_PENDSVSET;
	__asm volatile("cpsie i\n isb" ::: "memory");
	for (;;)
		__asm volatile("" ::: "memory");
}

/* ------------------------------------------------------------------ */
/* Fault handling and the coredump writer.                              */

/* What HardFault_Handler saves before anything can change it. */
struct z_fault_regs {
	uint32_t r4_r11[8];
	uint32_t msp, psp, exc_return, control;
};
Z_USED volatile struct z_fault_regs z_fault_regs;

__attribute__((naked)) void HardFault_Handler(void)
{
	__asm volatile(
		"ldr r0, =z_fault_regs\n"
		"stmia r0, {r4-r11}\n"
		"mrs r1, msp\n"
		"str r1, [r0, #32]\n"
		"mrs r1, psp\n"
		"str r1, [r0, #36]\n"
		"str lr, [r0, #40]\n"
		"mrs r1, control\n"
		"str r1, [r0, #44]\n"
		"b z_arm_fatal\n");
}

#define SYS_OPEN 0x01u
#define SYS_WRITE 0x05u
#define SYS_EXIT 0x18u

static uint32_t semihost(uint32_t op, uint32_t arg)
{
	register uint32_t r0 __asm("r0") = op;
	register uint32_t r1 __asm("r1") = arg;
	__asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

extern uint32_t _estack[];
extern char _main_stack_size[];
extern uint32_t _sdata[];

static uint32_t con_handle;

static void con_write(const char *s, uint32_t n)
{
	if (con_handle == 0) {
		static const char tt[] = ":tt";
		volatile uint32_t open[3] = {(uint32_t)(uintptr_t)tt, 4u, 3u};
		con_handle = semihost(SYS_OPEN, (uint32_t)(uintptr_t)open);
	}
	volatile uint32_t blk[3];
	blk[0] = con_handle;
	blk[1] = (uint32_t)(uintptr_t)s;
	blk[2] = n;
	(void)semihost(SYS_WRITE, (uint32_t)(uintptr_t)blk);
}

static void con_puts(const char *s)
{
	uint32_t n = 0;
	while (s[n] != 0)
		n++;
	con_write(s, n);
}

static char *put_dec(char *p, uint32_t v, int digits)
{
	for (int i = digits - 1; i >= 0; i--, v /= 10)
		p[i] = (char)('0' + v % 10);
	return p + digits;
}

static char *put_hex32(char *p, uint32_t v)
{
	static const char hex[] = "0123456789abcdef";
	*p++ = '0';
	*p++ = 'x';
	for (int i = 28; i >= 0; i -= 4)
		*p++ = hex[(v >> i) & 15];
	return p;
}

/* Zephyr's log output with CONFIG_LOG_BACKEND_SHOW_COLOR and timestamps:
 * "[hh:mm:ss.mmm,uuu] " then the level's colour (red for errors, yellow
 * for warnings, the default for the rest), "<lvl> module: ", the message,
 * the default colour and CRLF. */
static void log_prefix(int level, const char *module)
{
	static const char *const colors[] = {"", "\x1b[1;31m", "\x1b[1;33m", "\x1b[0m"};
	static const char *const tags[] = {"", "<err> ", "<wrn> ", "<inf> "};
	char ts[24];
	uint32_t ms = z_ticks;
	char *p = ts;
	*p++ = '[';
	p = put_dec(p, ms / 3600000u, 2);
	*p++ = ':';
	p = put_dec(p, ms / 60000u % 60u, 2);
	*p++ = ':';
	p = put_dec(p, ms / 1000u % 60u, 2);
	*p++ = '.';
	p = put_dec(p, ms % 1000u, 3);
	*p++ = ',';
	p = put_dec(p, 0, 3);
	*p++ = ']';
	*p++ = ' ';
	con_write(ts, (uint32_t)(p - ts));
	con_puts(colors[level]);
	con_puts(tags[level]);
	con_puts(module);
	con_puts(": ");
}

static void log_postfix(void) { con_puts("\x1b[0m\r\n"); }

void z_log(int level, const char *module, const char *msg, const char *arg)
{
	log_prefix(level, module);
	con_puts(msg);
	if (arg != NULL)
		con_puts(arg);
	log_postfix();
}

void z_printk(const char *s) { con_puts(s); }

/* The coredump logging backend: "#CD:" and up to 64 hex digits a line,
 * each an error message of the "coredump" module. */
static char cd_line[4 + 64];
static uint32_t cd_len;

static void cd_flush(void)
{
	if (cd_len == 0)
		return;
	log_prefix(LOG_LEVEL_ERR, "coredump");
	con_write(cd_line, 4 + cd_len);
	log_postfix();
	cd_len = 0;
}

static void cd_out(const void *p, uint32_t n)
{
	static const char hex[] = "0123456789abcdef";
	const volatile uint8_t *b = p;
	for (uint32_t i = 0; i < n; i++) {
		cd_line[4 + cd_len++] = hex[b[i] >> 4];
		cd_line[4 + cd_len++] = hex[b[i] & 15];
		if (cd_len == 64)
			cd_flush();
	}
}

static void cd_u8(uint8_t v) { cd_out(&v, 1); }
static void cd_u16(uint16_t v) { cd_out(&v, 2); }
static void cd_u32(uint32_t v) { cd_out(&v, 4); }

static void cd_memory(uintptr_t start, uintptr_t end)
{
	cd_u8('M');
	cd_u16(1);
	cd_u32((uint32_t)start);
	cd_u32((uint32_t)end);
	cd_out((const void *)start, (uint32_t)(end - start));
}

/* Set by a debugger to stay in z_coredump_done instead of exiting. */
volatile uint32_t z_halt_after_dump;

Z_NOINLINE Z_USED void z_coredump_done(void)
{
	while (z_halt_after_dump)
		__asm volatile("" ::: "memory");
	(void)semihost(SYS_EXIT, 0x20026u);
	for (;;)
		__asm volatile("" ::: "memory");
}

/* Zephyr 2.x's z_arm_coredump_fault_sp: the arch block's SP. Only the
 * fault handler sets it, so a fatal error raised by k_oops/k_panic (an
 * SVC) dumps SP 0 unless a fault came before. */
Z_USED uint32_t z_arm_coredump_fault_sp;

/* Zephyr's static struct arm_arch_block: the arch block's registers. */
static volatile uint32_t z_arch_blk[17];

/* z_coredump writes a Zephyr coredump the way Zephyr 3.x does with
 * CONFIG_DEBUG_COREDUMP_THREADS_METADATA and
 * CONFIG_DEBUG_COREDUMP_MEMORY_DUMP_THREADS, through the logging backend:
 * header, arch block v2 (the registers of the exception frame esf, the
 * SP z_arm_coredump_fault_sp, r4-r11), the threads metadata block (the
 * bytes of _kernel), then each thread's struct and whole stack. */
static void z_coredump(uint32_t reason, const uint32_t *esf)
{
	cd_line[0] = '#';
	cd_line[1] = 'C';
	cd_line[2] = 'D';
	cd_line[3] = ':';
	z_log(LOG_LEVEL_ERR, "coredump", "#CD:BEGIN#", NULL);
	/* Header: 'Z' 'E', version 2, target 3 (Cortex-M), 2^5-bit pointers,
	 * no flags, the reason. */
	cd_u8('Z');
	cd_u8('E');
	cd_u16(2);
	cd_u16(3);
	cd_u8(5);
	cd_u8(0);
	cd_u32(reason);
	/* Arch block v2: r0 r1 r2 r3 r12 lr pc xpsr sp r4..r11, gathered in a
	 * static block first as Zephyr's arch_coredump_info_dump does (so the
	 * exception frame's words are also in RAM there). */
	for (int i = 0; i < 8; i++)
		z_arch_blk[i] = esf[i];
	z_arch_blk[8] = z_arm_coredump_fault_sp;
	for (int i = 0; i < 8; i++)
		z_arch_blk[9 + i] = z_fault_regs.r4_r11[i];
	cd_u8('A');
	cd_u16(2);
	cd_u16(68);
	for (int i = 0; i < 17; i++)
		cd_u32(z_arch_blk[i]);
	/* Threads metadata. */
	cd_u8('T');
	cd_u16(1);
	cd_u16((uint16_t)sizeof(_kernel));
	cd_out(&_kernel, sizeof(_kernel));
	/* Other output on the same console between two of the dump's lines
	 * (deferred messages the backend reports as dropped; the colour
	 * reset follows the CRLF, as Zephyr's log_output prints it). */
	cd_flush();
	con_puts("\x1b[1;31m--- 2 messages dropped ---\r\n\x1b[0m");
	if (z_scenario == 4 || z_scenario == 5) {
		/* All of RAM in one block, as Zephyr 2.x's default
		 * CONFIG_DEBUG_COREDUMP_MEMORY_DUMP_LINKER_RAM writes it. */
		cd_memory((uintptr_t)_sdata, (uintptr_t)_estack);
	} else {
		int guard = 0;
		for (struct k_thread *t = _kernel.threads; t != NULL && guard < 32; t = t->next_thread, guard++) {
			cd_memory((uintptr_t)t, (uintptr_t)(t + 1));
			cd_memory(t->stack_info.start, t->stack_info.start + t->stack_info.size);
		}
		/* The interrupt stack (MSP; Zephyr's z_interrupt_stacks), where
		 * a fault inside an ISR leaves the ISR's frames. */
		cd_memory((uintptr_t)_estack - (uintptr_t)_main_stack_size, (uintptr_t)_estack);
	}
	cd_flush();
	z_log(LOG_LEVEL_ERR, "coredump", "#CD:END#", NULL);
}

static void log_thread(const char *what)
{
	char buf[12];
	*put_hex32(buf, (uint32_t)(uintptr_t)_kernel.cpus[0].current) = 0;
	log_prefix(LOG_LEVEL_ERR, "os");
	con_puts(what);
	con_puts(buf);
	con_puts(" (");
	con_puts(_kernel.cpus[0].current->name);
	con_puts(")");
	log_postfix();
}

/* z_fatal_error: Zephyr's fatal error path. It logs, dumps, asks the
 * application's handler, and either aborts the faulting thread (an oops
 * in a thread whose handler returned: the system goes on) or halts. */
static void z_fatal_error(uint32_t reason, const uint32_t *esf, int in_isr)
{
	static const char *const what[] = {"CPU exception", "spurious IRQ", "stack check failure", "kernel oops", "kernel panic"};
	z_log(LOG_LEVEL_ERR, "os", ">>> ZEPHYR FATAL ERROR: ", what[reason < 5 ? reason : 0]);
	log_thread("Current thread: ");
	z_coredump(reason, esf);
	if (!in_isr && reason != K_ERR_KERNEL_PANIC && z_sys_fatal_error_handler(reason)) {
		struct k_thread *cur = _kernel.cpus[0].current;
		log_thread("Aborting thread ");
		cur->base.thread_state = _THREAD_DEAD;
		for (struct k_thread **pp = &_kernel.threads; *pp != NULL; pp = &(*pp)->next_thread) {
			if (*pp == cur) {
				*pp = cur->next_thread;
				break;
			}
		}
		SCB_ICSR = ICSR_PENDSVSET; /* runs when the exception returns */
		return;
	}
	z_log(LOG_LEVEL_ERR, "os", "Halting system", NULL);
	/* Nothing runs after the dump: turn the MPU off so that a debugger
	 * stopped in z_coredump_done in a handler below HardFault's priority
	 * (a k_panic's SVC) can read the first KiB of flash, which QEMU hides
	 * behind the NULL guard's small region for debug reads too. */
	MPU_CTRL = 0;
	__asm volatile("dsb\n isb" ::: "memory");
	z_coredump_done();
}

/* z_arm_fatal: from HardFault_Handler, after it saved z_fault_regs. */
Z_USED __attribute__((noreturn)) void z_arm_fatal(void)
{
	uint32_t exc = z_fault_regs.exc_return;
	const uint32_t *esf = (const uint32_t *)(uintptr_t)((exc & 4u) ? z_fault_regs.psp : z_fault_regs.msp);
	uint32_t sp = (uint32_t)(uintptr_t)esf + ((exc & 0x10u) ? 0x20u : 0x68u);
	if (esf[7] & (1u << 9))
		sp += 4;
	z_arm_coredump_fault_sp = sp;
	z_log(LOG_LEVEL_ERR, "os", "***** HARD FAULT *****", NULL);
	z_fatal_error(K_ERR_CPU_EXCEPTION, esf, (exc & 4u) == 0);
	z_coredump_done();
	for (;;)
		__asm volatile("" ::: "memory");
}

/* SVC: "svc #2" is ARCH_EXCEPT, the reason in the stacked r0. */
__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile(
		"ldr r0, =z_fault_regs\n"
		"stmia r0, {r4-r11}\n"
		"mrs r1, msp\n"
		"str r1, [r0, #32]\n"
		"mrs r1, psp\n"
		"str r1, [r0, #36]\n"
		"str lr, [r0, #40]\n"
		"mrs r1, control\n"
		"str r1, [r0, #44]\n"
		"tst lr, #4\n"
		"ite eq\n"
		"mrseq r0, msp\n"
		"mrsne r0, psp\n"
		"push {r4, lr}\n"
		"bl z_arm_svc\n"
		"pop {r4, pc}\n");
}

Z_USED void z_arm_svc(const uint32_t *esf)
{
	const uint8_t *svc = (const uint8_t *)(uintptr_t)(esf[6] - 2u);
	if (svc[0] != 2)
		return;
	z_log(LOG_LEVEL_ERR, "os", esf[0] == K_ERR_KERNEL_PANIC ? "***** Kernel Panic! *****" : "***** Kernel OOPS! *****", NULL);
	z_fatal_error(esf[0], esf, (z_fault_regs.exc_return & 4u) == 0);
}

/* ------------------------------------------------------------------ */
/* Startup.                                                             */

extern uint32_t _sidata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void Default_Handler(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t vector_table[17] = {
	(vector_t)(uintptr_t)_estack,
	Reset_Handler,
	Default_Handler, /* NMI */
	HardFault_Handler,
	Default_Handler, /* MemManage: disabled, escalates */
	Default_Handler, /* BusFault */
	Default_Handler, /* UsageFault */
	0,
	0,
	0,
	0,
	SVC_Handler,
	Default_Handler, /* DebugMonitor */
	0,
	z_arm_pendsv,
	SysTick_Handler,
	z_rx_isr, /* IRQ 0 */
};

Z_NOINLINE void Default_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

void *memset(void *dst, int c, unsigned int n)
{
	volatile unsigned char *d = dst;
	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

void *memcpy(void *dst, const void *src, unsigned int n)
{
	volatile unsigned char *d = dst;
	const volatile unsigned char *s = src;
	while (n--)
		*d++ = *s++;
	return dst;
}

void Reset_Handler(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss;)
		*dst++ = 0;
#if Z_FPU_SHARING
	SCB_CPACR |= 0xFu << 20; /* CP10, CP11: full access */
	__asm volatile("dsb\n isb" ::: "memory");
#endif
	app_main();
	for (;;)
		__asm volatile("" ::: "memory");
}
