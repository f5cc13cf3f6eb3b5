/*
 * Bootloader of the faultline bootloader + application sample: vectors,
 * reset, a service table at a fixed address (boot_api.h) and the start of
 * the application (VTOR moved to its vectors, its entry called on the
 * same main stack, as bootloaders that keep their stack do).
 */
#include "../include/boot_api.h"

extern uint32_t _estack[];
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];

void Reset_Handler(void);
void Boot_Fault_Handler(void);
int main(void);

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used))
const vector_t boot_vectors[16] = {
	(vector_t)(uintptr_t)_estack, Reset_Handler,
	Boot_Fault_Handler, Boot_Fault_Handler, Boot_Fault_Handler,
	Boot_Fault_Handler, Boot_Fault_Handler, 0, 0, 0, 0,
	Boot_Fault_Handler, Boot_Fault_Handler, 0,
	Boot_Fault_Handler, Boot_Fault_Handler,
};

volatile uint32_t boot_count;

FW_NOINLINE void Boot_Fault_Handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

/* One CRC-32 step over a word; the word is read through the caller's
 * pointer without checking it (the bug the boot_service scenario hits). */
FW_NOINLINE static uint32_t boot_crc_word(uint32_t crc, const volatile uint32_t *p)
{
	crc ^= *p;
	for (int k = 0; k < 32; k++)
		crc = (crc >> 1) ^ (0xEDB88320u & -(crc & 1u));
	return crc;
}

FW_NOINLINE static uint32_t boot_crc32(const uint8_t *p, uint32_t n)
{
	uint32_t crc = 0xFFFFFFFFu;
	for (uint32_t i = 0; i + 4 <= n; i += 4)
		crc = boot_crc_word(crc, (const volatile uint32_t *)(p + i));
	boot_count++;
	return ~crc;
}

FW_NOINLINE static uint32_t boot_version(void)
{
	return 0x00010002u;
}

__attribute__((section(".boot_api"), used))
const struct boot_api boot_api_table = {
	BOOT_API_MAGIC, boot_crc32, boot_version,
};

FW_NOINLINE static void boot_start_app(void)
{
	const struct app_header *h = APP_HEADER;
	if (h->magic != APP_HEADER_MAGIC)
		return;
	SCB_VTOR = APP_BASE;
	__asm volatile("dsb\n isb" ::: "memory");
	h->entry();
	boot_count++;
}

int main(void)
{
	boot_count = 1;
	boot_start_app();
	for (;;)
		__asm volatile("" ::: "memory");
}

void Reset_Handler(void)
{
	volatile uint32_t *src = _sidata;
	volatile uint32_t *dst = _sdata;
	while (dst < _edata)
		*dst++ = *src++;
	for (dst = _sbss; dst < _ebss; dst++)
		*dst = 0;
	main();
	for (;;)
		__asm volatile("" ::: "memory");
}
