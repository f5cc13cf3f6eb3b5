//go:build cgo

#include <stdlib.h>
#include <string.h>

#include "heapwatch.h"
#include "tracker.h"
#include "_cgo_export.h"

fl_heapwatch *fl_hw_new(uintptr_t handle, uint32_t base, uint32_t len) {
	fl_heapwatch *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return NULL;
	}
	if (len > 0) {
		w->map = calloc(len, 1);
		if (w->map == NULL) {
			free(w);
			return NULL;
		}
	}
	w->handle = handle;
	w->base = base;
	w->len = len;
	return w;
}

void fl_hw_free(fl_heapwatch *w) {
	if (w == NULL) {
		return;
	}
	free(w->addrs);
	free(w->map);
	free(w);
}

static void refilter(fl_heapwatch *w) {
	memset(w->filter, 0, sizeof w->filter);
	for (uint32_t i = 0; i < w->n; i++) {
		uint32_t b = (w->addrs[i] >> 1) & (FL_HW_FILTER_BITS - 1);
		w->filter[b >> 3] |= (uint8_t)(1u << (b & 7));
	}
}

static int find(const fl_heapwatch *w, uint32_t addr, uint32_t *at) {
	uint32_t lo = 0, hi = w->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (w->addrs[mid] < addr) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	*at = lo;
	return lo < w->n && w->addrs[lo] == addr;
}

// fl_hw_watch adds (on) or removes addr from the watched block addresses.
// It returns 0 when out of memory.
int fl_hw_watch(fl_heapwatch *w, uint32_t addr, int on) {
	addr &= ~1u;
	uint32_t at;
	int have = find(w, addr, &at);
	if (on && !have) {
		if (w->n == w->cap) {
			uint32_t nc = w->cap ? w->cap * 2 : 32;
			uint32_t *na = realloc(w->addrs, nc * sizeof *na);
			if (na == NULL) {
				return 0;
			}
			w->addrs = na;
			w->cap = nc;
		}
		memmove(&w->addrs[at + 1], &w->addrs[at], (w->n - at) * sizeof *w->addrs);
		w->addrs[at] = addr;
		w->n++;
	} else if (!on && have) {
		memmove(&w->addrs[at], &w->addrs[at + 1], (w->n - at - 1) * sizeof *w->addrs);
		w->n--;
	}
	refilter(w);
	return 1;
}

// fl_hw_mark sets the state of [addr, addr+n), clipped to the map; with
// soft, bytes inside a live block keep their state.
void fl_hw_mark(fl_heapwatch *w, uint32_t addr, uint32_t n, uint8_t state, int soft) {
	if (w->map == NULL || n == 0) {
		return;
	}
	uint64_t lo = addr, hi = (uint64_t)addr + n;
	uint64_t mlo = w->base, mhi = (uint64_t)w->base + w->len;
	if (lo < mlo) {
		lo = mlo;
	}
	if (hi > mhi) {
		hi = mhi;
	}
	if (lo >= hi) {
		return;
	}
	uint8_t *m = w->map + (lo - mlo);
	size_t len = (size_t)(hi - lo);
	if (!soft) {
		memset(m, state, len);
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (m[i] != FL_HW_LIVE) {
			m[i] = state;
		}
	}
}

// fl_hw_block runs in the block hook for every block that runs.
void fl_hw_block(fl_tracker *t, uint32_t addr) {
	fl_heapwatch *w = t->hw;
	uint32_t b = (addr >> 1) & (FL_HW_FILTER_BITS - 1);
	if ((w->filter[b >> 3] & (1u << (b & 7))) == 0) {
		return;
	}
	uint32_t at;
	if (w->inside) {
		// Inside an allocator call only its return matters (the
		// allocator's own calls of other entry points are its business).
		if (addr != w->ret) {
			return;
		}
		uint32_t sp = 0;
		uc_reg_read(t->uc, UC_ARM_REG_SP, &sp);
		if (sp < w->ret_sp) {
			return;
		}
		if (!w->ret_go) {
			w->inside = 0;
			return;
		}
	}
	if (find(w, addr, &at)) {
		// The registers an allocator's entry and return need, read here:
		// one C->Go transition instead of one per register.
		static const int ids[FL_HW_NREGS] = {UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2,
		                                     UC_ARM_REG_R3, UC_ARM_REG_SP, UC_ARM_REG_LR};
		uint32_t regs[FL_HW_NREGS];
		for (int i = 0; i < FL_HW_NREGS; i++) {
			regs[i] = 0;
			uc_reg_read(t->uc, ids[i], &regs[i]);
		}
		goHeapBlock(w->handle, addr, regs);
	}
}

// fl_hw_access runs in the data-access hook. Outside an allocator call, an
// access to a freed block, or a write to bookkeeping or past a block's end,
// is reported to Go (which decides what it is and keeps the first of each).
void fl_hw_access(fl_tracker *t, uint32_t addr, int size, int write) {
	fl_heapwatch *w = t->hw;
	if (!w->checks || w->inside) {
		return;
	}
	uint32_t off = addr - w->base;
	if (off >= w->len) {
		return;
	}
	uint32_t n = (uint32_t)size;
	if (n > w->len - off) {
		n = w->len - off;
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t s = w->map[off + i];
		if (s == FL_HW_FREED || (write && (s == FL_HW_HEADER || s == FL_HW_PAD))) {
			goHeapAccess(w->handle, addr + i, (uint32_t)size, write, s, t->cur_addr);
			return;
		}
	}
}

// fl_hw_stack_key writes, for each of the newest n shadow-stack entries
// (oldest first), its return address, SP, kind and process-stack flag into
// key[0:4n] and returns the depth: two captures with equal keys have the
// same call stack.
uint32_t fl_hw_stack_key(const fl_tracker *t, uint32_t *key, uint32_t n) {
	uint32_t d = t->depth < n ? t->depth : n;
	for (uint32_t i = 0; i < d; i++) {
		const fl_frame *f = &t->stack[t->depth - d + i];
		key[4 * i] = f->ret;
		key[4 * i + 1] = f->sp;
		key[4 * i + 2] = f->kind | (f->exc << 8);
		key[4 * i + 3] = f->psp | (f->target << 1);
	}
	return t->depth;
}
