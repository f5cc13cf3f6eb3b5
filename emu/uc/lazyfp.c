//go:build cgo

#include <stdlib.h>
#include <string.h>
#include "tracker.h"
#include "lazyfp.h"

static struct fl_lazyfp *lazyfp(fl_tracker *t) {
	if (t->lf == NULL) {
		t->lf = calloc(1, sizeof *t->lf);
	}
	return t->lf;
}

// fp_hook runs before an FP instruction (a coprocessor 10/11 encoding).
// With LSPACT set it writes s0-s15 and FPSCR at FPCAR, as the core does
// before executing the instruction, and clears LSPACT. The hook sees the
// instruction whether or not an IT block skips it: a skipped FP
// instruction preserves too here (the core would not; compilers do not put
// FP instructions in IT blocks at the points where it matters).
static void fp_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	struct fl_lazyfp *lf = t->lf;
	if (lf == NULL || !lf->active) {
		return;
	}
	uint8_t buf[0x44];
	for (int i = 0; i < 16; i++) {
		uint8_t v[16] = {0};
		uc_reg_read(uc, UC_ARM_REG_S0 + i, v);
		memcpy(buf + 4 * i, v, 4); // little-endian host and guest
	}
	uint32_t fpscr = 0;
	uc_reg_read(uc, UC_ARM_REG_FPSCR, &fpscr);
	for (int i = 0; i < 4; i++) {
		buf[0x40 + i] = (uint8_t)(fpscr >> (8 * i));
	}
	if (uc_mem_write(uc, lf->fpcar, buf, sizeof buf) == UC_ERR_OK) {
		lf->saves++;
	} else {
		lf->failed++;
	}
	lf->active = 0;
}

uc_err fl_lazyfp_watch(fl_tracker *t, uint32_t addr) {
	struct fl_lazyfp *lf = lazyfp(t);
	if (lf == NULL) {
		return UC_ERR_NOMEM;
	}
	if (lf->n == lf->cap) {
		uint32_t nc = lf->cap ? lf->cap * 2 : 16;
		uc_hook *nh = realloc(lf->hooks, nc * sizeof *nh);
		if (nh == NULL) {
			return UC_ERR_NOMEM;
		}
		lf->hooks = nh;
		lf->cap = nc;
	}
	uc_err err = uc_hook_add(t->uc, &lf->hooks[lf->n], UC_HOOK_CODE, (void *)fp_hook, t,
	                         (uint64_t)addr, (uint64_t)addr);
	if (err == UC_ERR_OK) {
		lf->n++;
	}
	return err;
}

void fl_lazyfp_set(fl_tracker *t, int active, uint32_t fpcar) {
	struct fl_lazyfp *lf = lazyfp(t);
	if (lf != NULL) {
		lf->active = active;
		lf->fpcar = fpcar;
	}
}

void fl_lazyfp_free(fl_tracker *t) {
	struct fl_lazyfp *lf = t->lf;
	if (lf == NULL) {
		return;
	}
	for (uint32_t i = 0; i < lf->n; i++) {
		uc_hook_del(t->uc, lf->hooks[i]);
	}
	free(lf->hooks);
	free(lf);
	t->lf = NULL;
}
