//go:build cgo

#include "bridge.h"
#include "_cgo_export.h"

// fl_open opens an ARM engine in Thumb mode and selects the CPU model before
// any other call (docs/unicorn.md, trap 1). On failure nothing is leaked.
uc_err fl_open(int model, uc_engine **out) {
	uc_engine *uc = NULL;
	uc_err err = uc_open(UC_ARCH_ARM, UC_MODE_THUMB, &uc);
	if (err != UC_ERR_OK) {
		return err;
	}
	err = uc_ctl(uc, UC_CTL_WRITE(UC_CTL_CPU_MODEL, 1), model);
	if (err != UC_ERR_OK) {
		uc_close(uc);
		return err;
	}
	*out = uc;
	return UC_ERR_OK;
}

uc_err fl_get_cpu_model(uc_engine *uc, int *model) {
	return uc_ctl(uc, UC_CTL_READ(UC_CTL_CPU_MODEL, 1), model);
}

uc_err fl_page_size(uc_engine *uc, uint32_t *size) {
	return uc_ctl(uc, UC_CTL_READ(UC_CTL_UC_PAGE_SIZE, 1), size);
}

uc_err fl_flush_tb(uc_engine *uc) {
	return uc_ctl(uc, UC_CTL_WRITE(UC_CTL_TB_FLUSH, 0));
}

// fl_remove_tb drops every translated block that contains code in [begin,
// end). UC_CTL_TB_REMOVE_CACHE in Unicorn 2.0.1 invalidates only the blocks
// that overlap the first byte of each page of its range, so it is asked for
// every halfword (a Thumb block contains at least one).
uc_err fl_remove_tb(uc_engine *uc, uint64_t begin, uint64_t end) {
	for (uint64_t a = begin & ~(uint64_t)1; a < end; a += 2) {
		uc_err err = uc_ctl(uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), a, a + 1);
		if (err != UC_ERR_OK) {
			return err;
		}
	}
	return UC_ERR_OK;
}

// fl_request_tb translates the block that starts at addr with the core's
// current state (Thumb, mode, stack, FP flags), unless a translation for
// that state exists, without running it (UC_CTL_TB_REQUEST_CACHE), and
// returns its extent.
uc_err fl_request_tb(uc_engine *uc, uint64_t addr, uint32_t *size, uint32_t *icount) {
	uc_tb tb = {0};
	uc_err err = uc_ctl(uc, UC_CTL_READ_WRITE(UC_CTL_TB_REQUEST_CACHE, 2), addr, &tb);
	*size = tb.size;
	*icount = tb.icount;
	return err;
}

// Trampolines: Unicorn calls these with the cgo.Handle as user_data.

static void tramp_code(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	goHookCode((uintptr_t)ud, addr, size);
}

static void tramp_block(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	goHookBlock((uintptr_t)ud, addr, size);
}

static bool tramp_mem_invalid(uc_engine *uc, uc_mem_type type, uint64_t addr,
                              int size, int64_t value, void *ud) {
	return goHookMemInvalid((uintptr_t)ud, (int)type, addr, size, value) != 0;
}

static void tramp_intr(uc_engine *uc, uint32_t intno, void *ud) {
	goHookIntr((uintptr_t)ud, intno);
}

static bool tramp_insn_invalid(uc_engine *uc, void *ud) {
	return goHookInsnInvalid((uintptr_t)ud) != 0;
}

static uint64_t tramp_mmio_read(uc_engine *uc, uint64_t off, unsigned size, void *ud) {
	return goMMIORead((uintptr_t)ud, off, size);
}

static void tramp_mmio_write(uc_engine *uc, uint64_t off, unsigned size,
                             uint64_t value, void *ud) {
	goMMIOWrite((uintptr_t)ud, off, size, value);
}

uc_err fl_hook_code(uc_engine *uc, uc_hook *hh, uint64_t begin, uint64_t end, uintptr_t h) {
	return uc_hook_add(uc, hh, UC_HOOK_CODE, (void *)tramp_code, (void *)h, begin, end);
}

uc_err fl_hook_block(uc_engine *uc, uc_hook *hh, uint64_t begin, uint64_t end, uintptr_t h) {
	return uc_hook_add(uc, hh, UC_HOOK_BLOCK, (void *)tramp_block, (void *)h, begin, end);
}

uc_err fl_hook_mem_invalid(uc_engine *uc, uc_hook *hh, uintptr_t h) {
	return uc_hook_add(uc, hh, UC_HOOK_MEM_INVALID, (void *)tramp_mem_invalid,
	                   (void *)h, (uint64_t)1, (uint64_t)0);
}

uc_err fl_hook_intr(uc_engine *uc, uc_hook *hh, uintptr_t h) {
	return uc_hook_add(uc, hh, UC_HOOK_INTR, (void *)tramp_intr, (void *)h,
	                   (uint64_t)1, (uint64_t)0);
}

uc_err fl_hook_insn_invalid(uc_engine *uc, uc_hook *hh, uintptr_t h) {
	return uc_hook_add(uc, hh, UC_HOOK_INSN_INVALID, (void *)tramp_insn_invalid,
	                   (void *)h, (uint64_t)1, (uint64_t)0);
}

uc_err fl_mmio_map(uc_engine *uc, uint64_t addr, size_t size, uintptr_t h) {
	return uc_mmio_map(uc, addr, size, tramp_mmio_read, (void *)h,
	                   tramp_mmio_write, (void *)h);
}
