/*
 * faultline pairing sample: the code shapes that real firmware has and
 * that made the pairing check call the right ELF a mismatch (README.md):
 *
 *   - an interpreter whose dispatcher ends in an indirect tail call (a
 *     computed `bx rN` through a constant table of handlers), each handler
 *     tail-calling the dispatcher again, and a native-call opcode that
 *     tail-calls through a function pointer held in RAM;
 *   - tail-call chains 3 and 4 functions deep on the crash path;
 *   - constant data linked inside .text (the shared linker script puts
 *     .rodata there), with pointers to constant objects at odd addresses
 *     live on the stack when the crash happens.
 *
 * Startup, vector table, fault handlers and the oracle's register-capture
 * routine are the shared ones (../src/startup.c, ../src/fw.h), linked with
 * the shared script (../ld/mps2.ld). crash_scenario selects the crash.
 */
#include "../src/fw.h"

enum {
	SCENARIO_DISPATCH_BX = 1,
	SCENARIO_DISPATCH_NATIVE = 2,
	SCENARIO_CHAIN3 = 3,
	SCENARIO_CHAIN4 = 4,
	SCENARIO_RODATA_PTRS = 5,
};

volatile uint32_t crash_scenario = SCENARIO_DISPATCH_BX;
volatile uint32_t fw_sink;

/* The vector table names it; this sample pends no interrupt. */
void fl_crash_irq_handler(void)
{
	for (;;)
		__asm volatile("" ::: "memory");
}

/* ---- a tiny stack interpreter ---------------------------------------- */

struct vm {
	const uint8_t *ip;
	int32_t *sp;
	int32_t stack[16];
	uint32_t steps;
};

typedef void (*op_fn)(struct vm *);

enum { OP_HALT, OP_PUSH, OP_ADD, OP_MUL, OP_STORE, OP_NATIVE, OP_COUNT };

FW_NOINLINE void vm_dispatch(struct vm *vm);

FW_NOINLINE void op_halt(struct vm *vm)
{
	fw_sink = vm->steps;
}

FW_NOINLINE void op_push(struct vm *vm)
{
	*vm->sp++ = (int8_t)*vm->ip++;
	vm->steps++;
	vm_dispatch(vm);
}

FW_NOINLINE void op_add(struct vm *vm)
{
	vm->sp--;
	vm->sp[-1] += vm->sp[0];
	vm->steps++;
	vm_dispatch(vm);
}

FW_NOINLINE void op_mul(struct vm *vm)
{
	vm->sp--;
	vm->sp[-1] *= vm->sp[0];
	vm->steps++;
	vm_dispatch(vm);
}

/* STORE: pops a value and an address (scaled: the address is 0x30000000
 * plus 16 times the operand, QEMU's unmapped window) and stores. */
FW_NOINLINE void op_store(struct vm *vm)
{
	int32_t value = *--vm->sp;
	uint32_t addr = 0x30000000u + 16u * (uint32_t)*--vm->sp;
	*(volatile uint32_t *)(uintptr_t)addr = (uint32_t)value;
	vm->steps++;
	vm_dispatch(vm);
}

/* Native functions a NATIVE opcode calls by index, through a table in
 * RAM (the firmware could patch it), as a tail call; they go on with the
 * program by tail-calling the dispatcher. */
FW_NOINLINE void native_poke(struct vm *vm)
{
	*(volatile uint32_t *)(uintptr_t)(UNMAPPED_ADDR + (uint32_t)vm->sp[-1]) = vm->steps;
}

FW_NOINLINE void native_count(struct vm *vm)
{
	vm->sp[-1] = (int32_t)vm->steps;
	vm_dispatch(vm);
}

op_fn native_table[2] = {native_count, native_poke};

FW_NOINLINE void op_native(struct vm *vm)
{
	uint8_t idx = *vm->ip++;
	vm->steps++;
	native_table[idx & 1](vm);
}

static const op_fn op_table[OP_COUNT] = {
	op_halt, op_push, op_add, op_mul, op_store, op_native,
};

/* The dispatcher: fetch, then an indirect tail call into the handler. */
FW_NOINLINE void vm_dispatch(struct vm *vm)
{
	uint8_t op = *vm->ip++;
	op_table[op < OP_COUNT ? op : OP_HALT](vm);
}

FW_NOINLINE int32_t vm_run(const uint8_t *code)
{
	struct vm vm;
	vm.ip = code;
	vm.sp = vm.stack;
	vm.steps = 0;
	vm_dispatch(&vm);
	return vm.sp > vm.stack ? vm.sp[-1] : -1;
}

/* Programs: constant data, linked inside .text. Each starts at an odd
 * offset of its array so that the interpreter's ip is an odd address. */
static const uint8_t prog_store[] = {
	0xff, OP_PUSH, 3, OP_PUSH, 4, OP_ADD, OP_PUSH, 6, OP_MUL,
	OP_PUSH, 1, OP_PUSH, 5, OP_ADD, OP_STORE, OP_HALT,
};
static const uint8_t prog_native[] = {
	0xff, OP_PUSH, 2, OP_PUSH, 3, OP_MUL, OP_NATIVE, 0, OP_PUSH, 8, OP_NATIVE, 1, OP_HALT,
};

/* ---- tail-call chains --------------------------------------------------- */

FW_NOINLINE void chain_crash(uint32_t x)
{
	*(volatile uint32_t *)(uintptr_t)UNMAPPED_ADDR = x;
	fw_sink = x;
}

/* Three tail calls: c3_a -> c3_b -> c3_c -> chain_crash. */
FW_NOINLINE void c3_c(uint32_t x) { chain_crash(x ^ 0x5a5a0000u); }
FW_NOINLINE void c3_b(uint32_t x) { c3_c(x * 5u + 3u); }
FW_NOINLINE void c3_a(uint32_t x) { c3_b(x + 0x100u); }

FW_NOINLINE uint32_t chain3_entry(uint32_t x)
{
	c3_a(x);
	return x + fw_sink;
}

/* Four tail calls: c4_a -> c4_b -> c4_c -> c4_d -> chain_crash. */
FW_NOINLINE void c4_d(uint32_t x) { chain_crash(x | 0x40000000u); }
FW_NOINLINE void c4_c(uint32_t x) { c4_d(x - 7u); }
FW_NOINLINE void c4_b(uint32_t x) { c4_c(x << 2); }
FW_NOINLINE void c4_a(uint32_t x) { c4_b(x + 0x200u); }

FW_NOINLINE uint32_t chain4_entry(uint32_t x)
{
	c4_a(x);
	return x + fw_sink;
}

/* ---- pointers to constant objects on the stack -------------------------- */

static const char messages[] =
	"\x00" "overcurrent\0undervoltage\0sensor lost\0watchdog\0"
	"brownout\0link down\0checksum\0timeout\0overflow\0underrun\0"
	"parity\0framing\0";

FW_NOINLINE void report_crash(const char *const *msgs, uint32_t n)
{
	uint32_t sum = 0;
	for (uint32_t i = 0; i < n; i++)
		sum += (uint8_t)msgs[i][0];
	*(volatile uint32_t *)(uintptr_t)UNMAPPED_ADDR = sum;
	fw_sink = sum;
}

FW_NOINLINE uint32_t collect_messages(void)
{
	/* Twelve pointers into messages[]: most at odd addresses, all inside
	 * the .text output section, none after a call instruction. */
	const char *volatile msgs[12];
	const char *p = messages + 1;
	for (uint32_t i = 0; i < 12; i++) {
		msgs[i] = p;
		while (*p)
			p++;
		p++;
	}
	report_crash((const char *const *)msgs, 12);
	return fw_sink + 1u;
}

/* ---- scenario selection ------------------------------------------------- */

FW_NOINLINE void run_scenario(uint32_t which)
{
	switch (which) {
	case SCENARIO_DISPATCH_BX:
		fw_sink = (uint32_t)vm_run(prog_store + 1);
		break;
	case SCENARIO_DISPATCH_NATIVE:
		fw_sink = (uint32_t)vm_run(prog_native + 1);
		break;
	case SCENARIO_CHAIN3:
		fw_sink = chain3_entry(which);
		break;
	case SCENARIO_CHAIN4:
		fw_sink = chain4_entry(which);
		break;
	case SCENARIO_RODATA_PTRS:
		fw_sink = collect_messages();
		break;
	}
}

int main(void)
{
	run_scenario(crash_scenario);
	for (;;)
		__asm volatile("" ::: "memory");
}
