/*
 * rtk port layer: our own context switch for four Cortex-M profiles. Each
 * leaves on the task's stack exactly the frame a FreeRTOS GCC port of the
 * same name leaves (from pxTopOfStack upwards, then the hardware exception
 * frame, ARMv7-M ARM B1.5.7):
 *   ARM_CM0   (v6-M)          EXC_RETURN, r4-r11 (the layout of FreeRTOS
 *                             V11.1 and later; before, r4-r11 only)
 *   ARM_CM3   (v7-M)          r4-r11
 *   ARM_CM4F  (v7-M + FPv4)   r4-r11, EXC_RETURN, then s16-s31 when
 *                             EXC_RETURN bit 4 is clear (an FP context)
 *   ARM_CM33_NTZ (v8-M main)  PSPLIM, EXC_RETURN, r4-r11, then s16-s31
 *                             when EXC_RETURN bit 4 is clear (RTK_TZ: end)
 * The port is chosen by the compiler's target macros.
 */
#include "kernel.h"

#if defined(__ARM_ARCH_6M__)
#define PORT_CM0 1
#elif defined(__ARM_ARCH_8M_MAIN__)
#define PORT_CM33 1
#elif defined(__ARM_FP)
#define PORT_CM4F 1
#else
#define PORT_CM3 1
#endif

#define ICSR (*(volatile uint32_t *)0xE000ED04u)
#define SHPR3 (*(volatile uint32_t *)0xE000ED20u)
#define EXC_RETURN_THREAD_PSP 0xFFFFFFFDu

static volatile uint32_t critical_nesting;

void rtk_enter_critical(void)
{
	__asm volatile("cpsid i" ::: "memory");
	critical_nesting++;
}

void rtk_exit_critical(void)
{
	if (--critical_nesting == 0)
		__asm volatile("cpsie i" ::: "memory");
}

void rtk_port_yield(void)
{
	ICSR = 1u << 28; /* PENDSVSET */
	__asm volatile("dsb\n\tisb" ::: "memory");
}

void rtk_port_pend_tick(void)
{
	ICSR = 1u << 26; /* PENDSTSET */
	__asm volatile("dsb\n\tisb" ::: "memory");
}

uint32_t *rtk_port_init_stack(uint32_t *top, TaskFunction_t fn, void *arg, uint32_t limit)
{
	uint32_t *sp = top;
	*--sp = 0x01000000u;                  /* xPSR: Thumb */
	*--sp = (uint32_t)fn & ~1u;           /* PC */
	*--sp = (uint32_t)prvTaskExitError;   /* LR: where a returning task goes */
	*--sp = 0x12121212u;                  /* r12 */
	*--sp = 0x03030303u;                  /* r3 */
	*--sp = 0x02020202u;                  /* r2 */
	*--sp = 0x01010101u;                  /* r1 */
	*--sp = (uint32_t)arg;                /* r0 */
#if PORT_CM4F
	*--sp = EXC_RETURN_THREAD_PSP;
#endif
	for (int r = 11; r >= 4; r--)
		*--sp = 0x01010101u * (uint32_t)r; /* r11 .. r4 */
#if PORT_CM0
	*--sp = EXC_RETURN_THREAD_PSP;
#endif
#if PORT_CM33
	*--sp = EXC_RETURN_THREAD_PSP;
	*--sp = limit; /* PSPLIM */ if (RTK_TZ) *--sp = 0; /* xSecureContext */
#else
	(void)limit;
#endif
	return sp;
}

void SysTick_Handler(void)
{
	rtk_enter_critical();
	rtk_tick();
	rtk_exit_critical();
}

#if PORT_CM0
/* Top of the saved context: EXC_RETURN, then r4-r7, then r8-r11 (36
 * bytes below the hardware frame). */
__attribute__((naked)) void PendSV_Handler(void)
{
	__asm volatile(
		".syntax unified\n\t"
		"ldr r2, =pxCurrentTCB\n\t"
		"ldr r1, [r2]\n\t"
		"mrs r0, psp\n\t"
		"subs r0, #36\n\t"
		"str r0, [r1]\n\t"
		"mov r3, lr\n\t"
		"stmia r0!, {r3-r7}\n\t"
		"mov r4, r8\n\t"
		"mov r5, r9\n\t"
		"mov r6, r10\n\t"
		"mov r7, r11\n\t"
		"stmia r0!, {r4-r7}\n\t"
		"cpsid i\n\t"
		"bl vTaskSwitchContext\n\t"
		"cpsie i\n\t"
		"b rtk_restore_cm0\n\t");
}

__attribute__((naked, used)) void rtk_restore_cm0(void)
{
	__asm volatile(
		".syntax unified\n\t"
		"ldr r2, =pxCurrentTCB\n\t"
		"ldr r1, [r2]\n\t"
		"ldr r0, [r1]\n\t"
		"adds r0, #20\n\t"
		"ldmia r0!, {r4-r7}\n\t"
		"mov r8, r4\n\t"
		"mov r9, r5\n\t"
		"mov r10, r6\n\t"
		"mov r11, r7\n\t"
		"msr psp, r0\n\t"
		"subs r0, #36\n\t"
		"ldmia r0!, {r3-r7}\n\t"
		"bx r3\n\t"
		".ltorg\n\t");
}

__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile("b rtk_restore_cm0\n\t");
}
#elif PORT_CM3
__attribute__((naked)) void PendSV_Handler(void)
{
	__asm volatile(
		"mrs r0, psp\n\t"
		"stmdb r0!, {r4-r11}\n\t"
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"str r0, [r1]\n\t"
		"push {r0, lr}\n\t"
		"cpsid i\n\t"
		"bl vTaskSwitchContext\n\t"
		"cpsie i\n\t"
		"pop {r0, lr}\n\t"
		"b rtk_restore_cm3\n\t");
}

__attribute__((naked, used)) void rtk_restore_cm3(void)
{
	__asm volatile(
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"ldr r0, [r1]\n\t"
		"ldmia r0!, {r4-r11}\n\t"
		"msr psp, r0\n\t"
		"isb\n\t"
		"mvn lr, #2\n\t" /* 0xFFFFFFFD: thread mode, PSP */
		"bx lr\n\t"
		".ltorg\n\t");
}

__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile("b rtk_restore_cm3\n\t");
}
#elif PORT_CM4F
__attribute__((naked)) void PendSV_Handler(void)
{
	__asm volatile(
		"mrs r0, psp\n\t"
		"tst lr, #0x10\n\t"
		"it eq\n\t"
		"vstmdbeq r0!, {s16-s31}\n\t"
		"stmdb r0!, {r4-r11, lr}\n\t"
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"str r0, [r1]\n\t"
		"cpsid i\n\t"
		"bl vTaskSwitchContext\n\t"
		"cpsie i\n\t"
		"b rtk_restore_cm4f\n\t");
}

__attribute__((naked, used)) void rtk_restore_cm4f(void)
{
	__asm volatile(
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"ldr r0, [r1]\n\t"
		"ldmia r0!, {r4-r11, lr}\n\t"
		"tst lr, #0x10\n\t"
		"it eq\n\t"
		"vldmiaeq r0!, {s16-s31}\n\t"
		"msr psp, r0\n\t"
		"isb\n\t"
		"bx lr\n\t"
		".ltorg\n\t");
}

__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile("b rtk_restore_cm4f\n\t");
}
#elif !RTK_TZ /* PORT_CM33 */
__attribute__((naked)) void PendSV_Handler(void)
{
	__asm volatile(
		"mrs r0, psp\n\t"
#if defined(__ARM_FP)
		"tst lr, #0x10\n\t"
		"it eq\n\t"
		"vstmdbeq r0!, {s16-s31}\n\t"
#endif
		"mrs r2, psplim\n\t"
		"mov r3, lr\n\t"
		"stmdb r0!, {r2-r11}\n\t"
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"str r0, [r1]\n\t"
		"cpsid i\n\t"
		"bl vTaskSwitchContext\n\t"
		"cpsie i\n\t"
		"b rtk_restore_cm33\n\t");
}

__attribute__((naked, used)) void rtk_restore_cm33(void)
{
	__asm volatile(
		"ldr r1, =pxCurrentTCB\n\t"
		"ldr r1, [r1]\n\t"
		"ldr r0, [r1]\n\t"
		"ldmia r0!, {r2-r11}\n\t"
		"msr psplim, r2\n\t"
#if defined(__ARM_FP)
		"tst r3, #0x10\n\t"
		"it eq\n\t"
		"vldmiaeq r0!, {s16-s31}\n\t"
#endif
		"msr psp, r0\n\t"
		"isb\n\t"
		"bx r3\n\t"
		".ltorg\n\t");
}

__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile("b rtk_restore_cm33\n\t");
}
#endif

void rtk_port_start_first(void)
{
	SHPR3 = 0xFFFF0000u; /* PendSV and SysTick at the lowest priority */
	__asm volatile("cpsie i\n\tsvc 0\n\t" ::: "memory");
	for (;;)
		__asm volatile("" ::: "memory");
}

#if PORT_CM33 && RTK_TZ
/* The ARM_CM33 (TrustZone) port's frame, from pxTopOfStack up:
 * xSecureContext, PSPLIM, EXC_RETURN, r4-r11, then s16-s31 when
 * EXC_RETURN bit 4 is clear. No task here has a secure context, so
 * xSecureContext stays 0 and r4-r11 are always saved. */
uint32_t xSecureContext;

__attribute__((naked)) void PendSV_Handler(void)
{
	__asm volatile(
		"ldr r3, =xSecureContext\n\t"
		"ldr r0, [r3]\n\t"
		"ldr r3, =pxCurrentTCB\n\t"
		"ldr r1, [r3]\n\t"
		"mrs r2, psp\n\t"
#if defined(__ARM_FP)
		"tst lr, #0x10\n\t"
		"it eq\n\t"
		"vstmdbeq r2!, {s16-s31}\n\t"
#endif
		"stmdb r2!, {r4-r11}\n\t"
		"mrs r3, psplim\n\t"
		"stmdb r2!, {r0, r3, lr}\n\t"
		"str r2, [r1]\n\t"
		"cpsid i\n\t"
		"bl vTaskSwitchContext\n\t"
		"cpsie i\n\t"
		"b rtk_restore_cm33tz\n\t");
}

__attribute__((naked, used)) void rtk_restore_cm33tz(void)
{
	__asm volatile(
		"ldr r3, =pxCurrentTCB\n\t"
		"ldr r1, [r3]\n\t"
		"ldr r2, [r1]\n\t"
		"ldmia r2!, {r0, r3, lr}\n\t"
		"msr psplim, r3\n\t"
		"ldr r3, =xSecureContext\n\t"
		"str r0, [r3]\n\t"
		"ldmia r2!, {r4-r11}\n\t"
#if defined(__ARM_FP)
		"tst lr, #0x10\n\t"
		"it eq\n\t"
		"vldmiaeq r2!, {s16-s31}\n\t"
#endif
		"msr psp, r2\n\t"
		"isb\n\t"
		"bx lr\n\t"
		".ltorg\n\t");
}

__attribute__((naked)) void SVC_Handler(void)
{
	__asm volatile("b rtk_restore_cm33tz\n\t");
}
#endif
