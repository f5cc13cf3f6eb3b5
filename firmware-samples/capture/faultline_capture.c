/*
 * faultline_capture: a HardFault handler that writes a CrashCatcher 3.0
 * compatible dump (faultline's crashdump importer; layout in
 * docs cortex-m.md section 7) through a user-supplied write function.
 *
 * ARMv7-M / ARMv7E-M, Thumb-2 (Cortex-M3/M4/M4F/M7). Builds with
 * arm-none-eabi-gcc and clang --target=arm-none-eabi at any -O level.
 * Freestanding: no libc, no libgcc, no memcpy/memset calls.
 *
 * Flow:
 *   fl_capture_fault_entry (naked, the first thing the exception runs)
 *     - refuses re-entry (a fault inside the capture halts at once),
 *     - stores r4-r11, MSP, PSP, xPSR (IPSR = the exception number) and
 *       EXC_RETURN into fl_capture_ctx, and for an extended frame S0-S31
 *       (the VSTM also makes a pending lazy FP stacking happen, so the
 *       frame's S0-S15/FPSCR slots are written before they are read),
 *     - switches MSP to the capture's own static stack and branches to
 *   fl_capture_main (C), which
 *     - reads the exception frame on the stack EXC_RETURN bit 2 selects
 *       (ARMv7-M ARM B1.5.6-B1.5.8): r0-r3, r12, lr, pc, xPSR; the frame is
 *       0x20 bytes, 0x68 with FP state (EXC_RETURN bit 4 = 0), plus 4 when
 *       the stacked xPSR has bit 9 set: that gives the SP before the
 *       exception,
 *     - writes the header, then the regions: the active stack from the SP
 *       before the exception to its top, the user's regions (minus what the
 *       stack region already holds), FPCCR/FPCAR (FP builds) and the fault
 *       status block 0xE000ED28..0xE000ED3B (CFSR, HFSR, DFSR, MMFAR, BFAR),
 *     - appends AC CE 55 ED if its own stack overflowed, then calls the
 *       user's done hook or halts.
 *
 * Stack use: none on the interrupted stack (the core's exception frame is
 * all); fl_capture_main runs on fl_capture_stack.
 */
#include "faultline_capture.h"

#define FL_STR_(x) #x
#define FL_STR(x) FL_STR_(x)

/* Word indexes into fl_capture_ctx; the naked entry uses the byte offsets
 * (4 * index), spelled out below and checked by the static asserts. */
enum {
	W_SIG = 0,   /* 'c' 'C' 3 0 */
	W_FLAGS = 1, /* bit 0: FP registers follow */
	W_R0 = 2,    /* r0-r3: stacked */
	W_R4 = 6,    /* r4-r11: live at entry (byte offset 24) */
	W_R12 = 14,
	W_SP = 15,   /* SP before the exception */
	W_LR = 16,
	W_PC = 17,
	W_XPSR = 18,
	W_MSP = 19,  /* at handler entry (byte offset 76) */
	W_PSP = 20,  /* at handler entry (80) */
	W_EXCPSR = 21, /* the handler's xPSR (84) */
	W_FP = 22,   /* S0-S31 (88), FPSCR */
	W_HDR_END = 22,
	W_FP_END = 22 + 33,
	W_EXC_RETURN = 55, /* LR at entry (220) */
	W_ACTIVE = 56,     /* re-entry guard (224) */
	W_CTX_WORDS = 57,
};
#define OFF_R4 24
#define OFF_MSP 76
#define OFF_PSP 80
#define OFF_EXCPSR 84
#define OFF_FP 88
#define OFF_EXC_RETURN 220
#define OFF_ACTIVE 224
_Static_assert(OFF_R4 == 4 * W_R4 && OFF_MSP == 4 * W_MSP && OFF_PSP == 4 * W_PSP &&
		       OFF_EXCPSR == 4 * W_EXCPSR && OFF_FP == 4 * W_FP &&
		       OFF_EXC_RETURN == 4 * W_EXC_RETURN && OFF_ACTIVE == 4 * W_ACTIVE,
	       "fl_capture_ctx offsets");
_Static_assert(FL_CAPTURE_STACK_BYTES % 8 == 0 && FL_CAPTURE_STACK_BYTES >= 128,
	       "FL_CAPTURE_STACK_BYTES: a multiple of 8, at least 128");
_Static_assert(FL_CAPTURE_CHUNK_BYTES % 4 == 0 && FL_CAPTURE_CHUNK_BYTES >= 8,
	       "FL_CAPTURE_CHUNK_BYTES: a multiple of 4, at least 8");

#define CC_SIGNATURE 0x00034363u /* 'c' 'C' 3 0, little-endian */
#define CC_FLAG_FP 1u
#define CANARY 0xACCE55EDu
#define CANARY_WORDS 2

#define REG32(a) (*(volatile uint32_t *)(uintptr_t)(a))
#define SCB_VTOR 0xE000ED08u
#define SCB_CFSR 0xE000ED28u
#define SCB_FSR_END 0xE000ED3Cu /* CFSR, HFSR, DFSR, MMFAR, BFAR; end exclusive */
#define FPU_FPCCR 0xE000EF34u
#define FPU_FPCAR_END 0xE000EF3Cu /* FPCCR, FPCAR */
#define CFSR_MSTKERR (1u << 4)
#define CFSR_STKERR (1u << 12)

#ifndef FL_CAPTURE_MAX_STACK_BYTES
/* Upper bound for the stack region (a corrupt SP must not make the handler
 * dump megabytes). */
#define FL_CAPTURE_MAX_STACK_BYTES 0x10000u
#endif

/* Everything the handler keeps is static: nothing on the faulting stack.
 * Referenced from the naked entry's assembly, hence global and `used`. */
__attribute__((used, aligned(8))) uint32_t fl_capture_ctx[W_CTX_WORDS];
__attribute__((used, aligned(8))) uint64_t fl_capture_stack[FL_CAPTURE_STACK_BYTES / 8];
__attribute__((used)) uint64_t *const fl_capture_stack_top = &fl_capture_stack[FL_CAPTURE_STACK_BYTES / 8];

static uint32_t fl_bounce[FL_CAPTURE_CHUNK_BYTES / 4];
static char fl_line[2 * FL_CAPTURE_CHUNK_BYTES + 2];

/* The main stack's top when no configured stack holds the SP: the linker
 * script's _estack when it has one (weak: 0 otherwise). */
extern uint32_t _estack[] __attribute__((weak));

void fl_capture_main(void) __attribute__((noreturn, used));

/*
 * The entry. Only r0-r3 are touched before the context is saved (the core
 * stacked them); no stack is used. Never returns.
 */
__attribute__((naked, noreturn, used)) void fl_capture_fault_entry(void)
{
	__asm volatile(
		"movw r0, #:lower16:fl_capture_ctx\n"
		"movt r0, #:upper16:fl_capture_ctx\n"
		"ldr r1, [r0, #" FL_STR(OFF_ACTIVE) "]\n"
		"cbnz r1, 9f\n" /* a fault inside the capture: halt */
		"movs r1, #1\n"
		"str r1, [r0, #" FL_STR(OFF_ACTIVE) "]\n"
		"add r1, r0, #" FL_STR(OFF_R4) "\n"
		"stmia r1, {r4-r11}\n"
		"mrs r1, msp\n"
		"mrs r2, psp\n"
		"mrs r3, xpsr\n"
		"str r1, [r0, #" FL_STR(OFF_MSP) "]\n"
		"str r2, [r0, #" FL_STR(OFF_PSP) "]\n"
		"str r3, [r0, #" FL_STR(OFF_EXCPSR) "]\n"
		"str lr, [r0, #" FL_STR(OFF_EXC_RETURN) "]\n"
#if defined(__ARM_FP)
		/* Extended frame (EXC_RETURN bit 4 clear): save S0-S31. The
		 * first FP instruction also performs a pending lazy stacking
		 * (FPCCR.LSPACT), so the frame's S0-S15 and FPSCR get written. */
		"tst lr, #0x10\n"
		"bne 1f\n"
		"add r1, r0, #" FL_STR(OFF_FP) "\n"
		"vstmia r1, {s0-s31}\n"
		"1:\n"
#endif
		"movw r1, #:lower16:fl_capture_stack_top\n"
		"movt r1, #:upper16:fl_capture_stack_top\n"
		"ldr r1, [r1]\n"
		"mov sp, r1\n"
		"b fl_capture_main\n"
		"9: b 9b\n");
}

#if !defined(FL_CAPTURE_NO_HARDFAULT_HANDLER)
/* A tail call: LR, SP and r4-r11 reach the entry unchanged. */
__attribute__((naked, noreturn)) void HardFault_Handler(void)
{
	__asm volatile("b fl_capture_fault_entry\n");
}
#endif

/* out writes n bytes at p (in RAM) as write calls of at most
 * FL_CAPTURE_CHUNK_BYTES bytes; in hex form each becomes one CR LF line. */
static void out(const void *p, uint32_t n)
{
	static const char digits[] = "0123456789ABCDEF";
	const struct fl_capture_config *c = &fl_capture_config;
	const volatile uint8_t *b = p;
	while (n > 0) {
		uint32_t k = n < FL_CAPTURE_CHUNK_BYTES ? n : FL_CAPTURE_CHUNK_BYTES;
		if (c->format == FL_CAPTURE_HEX) {
			volatile char *l = fl_line;
			for (uint32_t i = 0; i < k; i++) {
				l[2 * i] = digits[b[i] >> 4];
				l[2 * i + 1] = digits[b[i] & 15];
			}
			l[2 * k] = '\r';
			l[2 * k + 1] = '\n';
			c->write(fl_line, 2 * k + 2);
		} else {
			c->write((const void *)b, k);
		}
		b += k;
		n -= k;
	}
}

static void text(const char *s)
{
	uint32_t n = 0;
	while (((const volatile char *)s)[n] != 0)
		n++;
	fl_capture_config.write(s, n);
}

/* region writes one region: start, end (exclusive), then its bytes, copied
 * through a RAM buffer with word loads when aligned (the System Control
 * Space wants word accesses and a host may not read it directly). */
static void region(uint32_t start, uint32_t end)
{
	if (end <= start)
		return;
	volatile uint32_t *hdr = fl_bounce;
	hdr[0] = start;
	hdr[1] = end;
	out(fl_bounce, 8);
	for (uint32_t a = start; a < end;) {
		uint32_t k = end - a < FL_CAPTURE_CHUNK_BYTES ? end - a : FL_CAPTURE_CHUNK_BYTES;
		if (((a | k) & 3) == 0) {
			volatile uint32_t *d = fl_bounce;
			for (uint32_t i = 0; i < k / 4; i++)
				d[i] = REG32(a + 4 * i);
		} else {
			volatile uint8_t *d = (volatile uint8_t *)fl_bounce;
			for (uint32_t i = 0; i < k; i++)
				d[i] = *(const volatile uint8_t *)(uintptr_t)(a + i);
		}
		out(fl_bounce, k);
		a += k;
	}
}

/* region_minus writes [start, end) without the part [lo, hi) (0, 1 or 2
 * pieces), so that no two regions overlap. */
static void region_minus(uint32_t start, uint32_t end, uint32_t lo, uint32_t hi)
{
	if (hi <= start || lo >= end) {
		region(start, end);
		return;
	}
	region(start, lo);
	region(hi, end);
}

static uint32_t main_stack_top(void)
{
	uint32_t top = (uint32_t)(uintptr_t)_estack;
	if (top == 0)
		top = REG32(REG32(SCB_VTOR) & ~0x7Fu); /* the initial MSP */
	return top;
}

void fl_capture_main(void)
{
	const struct fl_capture_config *c = &fl_capture_config;
	volatile uint32_t *w = fl_capture_ctx;
	volatile uint32_t *stack = (volatile uint32_t *)fl_capture_stack;
	for (uint32_t i = 0; i < CANARY_WORDS; i++)
		stack[i] = CANARY;

	uint32_t exc = w[W_EXC_RETURN];
	uint32_t frame = (exc & 4) ? w[W_PSP] : w[W_MSP];
	uint32_t size = (exc & 0x10) ? 0x20 : 0x68;
	w[W_SIG] = CC_SIGNATURE;
	w[W_FLAGS] = 0;
	if ((REG32(SCB_CFSR) & (CFSR_MSTKERR | CFSR_STKERR)) == 0) {
		const volatile uint32_t *f = (const volatile uint32_t *)(uintptr_t)frame;
		for (uint32_t i = 0; i < 4; i++)
			w[W_R0 + i] = f[i];
		w[W_R12] = f[4];
		w[W_LR] = f[5];
		w[W_PC] = f[6];
		w[W_XPSR] = f[7];
		if (f[7] & (1u << 9))
			size += 4; /* the core aligned the frame to 8 bytes */
#if defined(__ARM_FP)
		if ((exc & 0x10) == 0) {
			w[W_FLAGS] = CC_FLAG_FP;
			w[W_FP + 32] = f[24]; /* FPSCR at frame + 0x60 */
		}
#endif
	} else {
		/* Stacking failed: the frame may be missing or unreadable. */
		for (uint32_t i = 0; i < 4; i++)
			w[W_R0 + i] = 0;
		w[W_R12] = w[W_LR] = w[W_PC] = w[W_XPSR] = 0;
	}
	uint32_t sp = frame + size;
	w[W_SP] = sp;

	/* The active stack: [sp, top of the stack that holds sp). */
	uint32_t lo = sp, hi = 0;
	for (uint32_t i = 0; i < c->n_stacks && hi == 0; i++)
		if (sp >= c->stacks[i].start && sp <= c->stacks[i].end)
			hi = c->stacks[i].end;
	if (hi == 0 && (exc & 4) == 0) {
		uint32_t top = main_stack_top();
		if (sp <= top)
			hi = top;
	}
	if (hi == 0 && c->stack_window != 0) {
		int covered = 0;
		for (uint32_t i = 0; i < c->n_regions; i++)
			covered |= sp >= c->regions[i].start && sp < c->regions[i].end;
		if (!covered)
			hi = sp + c->stack_window;
	}
	if (hi != 0 && hi - lo > FL_CAPTURE_MAX_STACK_BYTES)
		hi = lo + FL_CAPTURE_MAX_STACK_BYTES;
	if (hi < lo)
		hi = lo;

	if (c->format == FL_CAPTURE_HEX)
		text("\r\n\r\nCRASH ENCOUNTERED\r\nfaultline_capture: CrashCatcher 3.0 dump follows\r\n");
	out(fl_capture_ctx, 4 * (w[W_FLAGS] & CC_FLAG_FP ? W_FP_END : W_HDR_END));
	region(lo, hi);
	for (uint32_t i = 0; i < c->n_regions; i++)
		region_minus(c->regions[i].start, c->regions[i].end, lo, hi);
#if defined(__ARM_FP)
	region(FPU_FPCCR, FPU_FPCAR_END);
#endif
	region(SCB_CFSR, SCB_FSR_END);
	for (uint32_t i = 0; i < CANARY_WORDS; i++) {
		if (stack[i] != CANARY) {
			static const uint8_t overflow[4] = {0xAC, 0xCE, 0x55, 0xED};
			out(overflow, 4);
			break;
		}
	}
	if (c->format == FL_CAPTURE_HEX)
		text("End of dump\r\n");
	if (c->done)
		c->done();
	for (;;)
		__asm volatile("1: b 1b\n" ::: "memory");
}
