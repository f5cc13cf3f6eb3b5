// Test firmware for the PMSAv8 MPU model of ARMv8-M (package emu,
// pmsav8_test.go): the MPU registers of ARMv8-M ARM D1.2 (MPU_RBAR with
// BASE/SH/AP/XN, MPU_RLAR with LIMIT/AttrIndx/EN, the RBAR_An/RLAR_An
// aliases, MAIR0/MAIR1) and the checks of B3.5 (regions do not overlap: an
// address in two regions faults; no region: the background map, privileged
// only and only with PRIVDEFENA). Built for Cortex-M33 (soft float); see the
// Makefile. The global crash_scenario (Config.Sets) selects what main does.
//
// The map every scenario programs (setup), all regions Normal memory
// (AttrIndx 0) except the peripheral-like window (AttrIndx 1):
//
//	0  flash [vectors, xn_function)       read-only, any privilege, executable
//	1  RAM   [0x20000000, areas)          read/write, any privilege, XN
//	2  areas.ro                           read-only, any privilege, XN
//	3  areas.priv                         read/write, privileged only, XN
//	   areas.hole                         no region (the background map)
//	4  RAM   [areas.rest, top of RAM)     read/write, any privilege, XN
//	5  xn_function (32 bytes)             read-only, XN
//	6  flash [xn_function+32, image end)  read-only, executable
#include <stdint.h>

#define NOINLINE __attribute__((noinline))
#define REG(a) (*(volatile uint32_t *)(a))
#define SCB_SHCSR REG(0xE000ED24)
#define MPU_TYPE REG(0xE000ED90)
#define MPU_CTRL REG(0xE000ED94)
#define MPU_RNR REG(0xE000ED98)
#define MPU_RBAR REG(0xE000ED9C)
#define MPU_RLAR REG(0xE000EDA0)
#define MPU_RBAR_A(n) REG(0xE000ED9C + 8 * (n))
#define MPU_RLAR_A(n) REG(0xE000EDA0 + 8 * (n))
#define MPU_MAIR0 REG(0xE000EDC0)
#define MPU_MAIR1 REG(0xE000EDC4)

#define CTRL_ENABLE 1u
#define CTRL_PRIVDEFENA 4u
// AP[2:1] of MPU_RBAR (B3.5, D1.2.x MPU_RBAR).
enum { AP_RW_PRIV = 0, AP_RW_ANY = 1, AP_RO_PRIV = 2, AP_RO_ANY = 3 };

volatile uint32_t crash_scenario = 0;
volatile uint32_t sink;
uint32_t data_word = 0x5a5a5a5a; // .data comes first in RAM: areas never start at 0x20000000
// What the MPU registers read back (scenario 1).
volatile uint32_t readback[8];
// How far scenario 1 got through its allowed accesses.
volatile uint32_t progress;

// Three 32-byte areas (the PMSAv8 granule) that get their own treatment.
static struct {
	uint32_t ro[8];
	uint32_t priv[8];
	uint32_t hole[8];
} areas __attribute__((aligned(32)));

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void Reset_Handler(void);
void Default_Handler(void) { for (;;) {} }
void HardFault_Handler(void) { for (;;) {} }
void MemManage_Handler(void) { for (;;) {} }
void BusFault_Handler(void) { for (;;) {} }
void UsageFault_Handler(void) { for (;;) {} }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
	(void (*)(void))&_estack, Reset_Handler, Default_Handler, HardFault_Handler,
	MemManage_Handler, BusFault_Handler, UsageFault_Handler, 0, 0, 0, 0,
	Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

// A function alone in its 32-byte granule, made execute-never by region 5.
__attribute__((section(".text.xn"), aligned(32), noinline)) void xn_function(void) { sink = 7; }
// Keeps the code after xn_function out of its granule.
__attribute__((section(".text.xn"), aligned(32), noinline)) void after_xn(void) { sink = 8; }

static void region(uint32_t n, uint32_t base, uint32_t end, uint32_t ap, uint32_t xn, uint32_t attr) {
	MPU_RNR = n;
	MPU_RBAR = (base & ~0x1fu) | ap << 1 | xn;
	MPU_RLAR = ((end - 1) & ~0x1fu) | attr << 1 | 1; // LIMIT is inclusive
}

static void setup(void) {
	uint32_t xn = (uint32_t)xn_function & ~1u;
	// The flash image: the vector table up to the end of the .data copy.
	uint32_t flash = (uint32_t)vectors;
	uint32_t flash_end = (uint32_t)&_sidata + ((uint32_t)&_edata - (uint32_t)&_sdata);
	MPU_MAIR0 = 0x04aa; // Attr0 Normal write-through read-allocate, Attr1 Device-nGnRE
	MPU_MAIR1 = 0x44000000;
	region(0, flash, xn, AP_RO_ANY, 0, 0);
	region(1, 0x20000000, (uint32_t)&areas, AP_RW_ANY, 1, 0);
	region(2, (uint32_t)areas.ro, (uint32_t)areas.ro + 32, AP_RO_ANY, 1, 0);
	region(3, (uint32_t)areas.priv, (uint32_t)areas.priv + 32, AP_RW_PRIV, 1, 0);
	region(4, (uint32_t)&areas + sizeof areas, (uint32_t)&_estack, AP_RW_ANY, 1, 0);
	region(5, xn, xn + 32, AP_RO_ANY, 1, 1);
	region(6, xn + 32, (flash_end + 31) & ~31u, AP_RO_ANY, 0, 0);
}

static void mpu_on(uint32_t ctrl) {
	MPU_CTRL = ctrl;
	__asm volatile("dsb\n isb" ::: "memory");
}

NOINLINE uint32_t load_word(const volatile uint32_t *p) { return *p; }
NOINLINE void store_word(volatile uint32_t *p, uint32_t v) { *p = v; }
NOINLINE void call_xn(void) { xn_function(); sink = 9; }
NOINLINE void do_udf(void) { __asm volatile("udf #1"); }
static void drop_privilege(void) {
	__asm volatile("movs r0, #1\n msr control, r0\n isb" ::: "r0", "memory"); // nPRIV
}

// Scenario 1: every access below is allowed; the run ends at the UDF.
NOINLINE void allowed(void) {
	readback[0] = MPU_TYPE;
	readback[1] = MPU_MAIR0;
	readback[2] = MPU_MAIR1;
	MPU_RNR = 2;
	readback[3] = MPU_RBAR;
	readback[4] = MPU_RLAR;
	MPU_RNR = 4;
	readback[5] = MPU_RBAR_A(1); // region 5
	readback[6] = MPU_RLAR_A(2); // region 6
	readback[7] = MPU_CTRL;
	progress = 1;
	sink = load_word(&areas.ro[1]);   // read-only region: reads are fine
	progress = 2;
	store_word(&areas.priv[1], 0x11); // privileged-only region, privileged
	progress = 3;
	sink = load_word(&areas.hole[1]); // background map, privileged, PRIVDEFENA
	store_word(&areas.hole[2], 0x22);
	progress = 4;
	after_xn();                       // code right after the XN granule
	progress = 5;
	drop_privilege();
	sink = load_word(&areas.ro[2]);   // read-only for any privilege
	store_word(&data_word, 0x33);     // RAM, read/write for any privilege
	progress = 6;
	do_udf();
}

int main(void) {
	setup();
	switch (crash_scenario) {
	case 1: // only allowed accesses
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		allowed();
		break;
	case 2: // store to a read-only region: DACCVIOL, escalated
	case 3: // the same with MemManage enabled
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		if (crash_scenario == 3)
			SCB_SHCSR |= 1u << 16; // MEMFAULTENA
		sink = load_word(&areas.ro[2]);
		store_word(&areas.ro[2], 5);
		break;
	case 4: // call into the XN granule: IACCVIOL
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		call_xn();
		break;
	case 5: // no region and PRIVDEFENA clear: even privileged reads fault
		mpu_on(CTRL_ENABLE);
		sink = load_word(&areas.ro[1]);
		sink = load_word(&areas.hole[3]);
		break;
	case 6: // unprivileged read of the privileged-only region
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		store_word(&areas.priv[0], 1);
		drop_privilege();
		sink = load_word(&areas.ro[0]);
		sink = load_word(&areas.priv[0]);
		break;
	case 7: // two regions that both allow the access overlap: it faults
		region(7, (uint32_t)&data_word, (uint32_t)&data_word + 32, AP_RW_ANY, 1, 0);
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		sink = load_word(&areas.ro[0]);
		sink = load_word(&data_word);
		break;
	case 8: // region 7 programmed through the RBAR_A3/RLAR_A3 aliases
		MPU_RNR = 4;
		MPU_RBAR_A(3) = (uint32_t)areas.hole | AP_RO_ANY << 1 | 1;
		MPU_RLAR_A(3) = (uint32_t)areas.hole | 1;
		mpu_on(CTRL_ENABLE | CTRL_PRIVDEFENA);
		sink = load_word(&areas.hole[0]);
		store_word(&areas.hole[4], 6);
		break;
	}
	for (;;) {}
}

void Reset_Handler(void) {
	uint32_t *src = &_sidata, *dst = &_sdata;
	while (dst < &_edata)
		*dst++ = *src++;
	for (dst = &_sbss; dst < &_ebss;)
		*dst++ = 0;
	main();
}
