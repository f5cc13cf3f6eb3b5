//go:build cgo

#include <stdlib.h>
#include <string.h>

#include "heapwatch.h"
#include "tracker.h"
#include "_cgo_export.h"

#define FL_HW_INDEX_SLOTS (2 * FL_HW_MAX_STACKS) // a power of two
#define FL_HW_NO_STACK 0xffffffffu

fl_heapwatch *fl_hw_new(uintptr_t handle, uint32_t base, uint32_t len) {
	fl_heapwatch *w = calloc(1, sizeof *w);
	if (w == NULL) {
		return NULL;
	}
	w->live_cap = 256;
	w->live = calloc(w->live_cap, sizeof *w->live);
	w->evcap = FL_HW_EVENTS;
	w->ev = calloc(w->evcap, sizeof *w->ev);
	w->stack_index = calloc(FL_HW_INDEX_SLOTS, sizeof *w->stack_index);
	if (len > 0) {
		w->map = calloc(len, 1);
	}
	if (w->live == NULL || w->ev == NULL || w->stack_index == NULL || (len > 0 && w->map == NULL)) {
		fl_hw_free(w);
		return NULL;
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
	free(w->funcs);
	free(w->map);
	free(w->live);
	free(w->ev);
	free(w->stacks);
	free(w->stack_index);
	free(w->pool);
	free(w);
}

static void refilter(fl_heapwatch *w) {
	memset(w->hit_addr, 0, sizeof w->hit_addr);
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

int fl_hw_is_entry(const fl_heapwatch *w, uint32_t addr) {
	uint32_t at;
	return !w->inside && fl_hw_wants(w, addr) && find(w, addr, &at) && w->funcs[at].op != FL_HW_OP_WATCH;
}

// fl_hw_add_func watches the entry point at addr (bit 0 ignored), or
// replaces its description. It returns 0 when out of memory.
int fl_hw_add_func(fl_heapwatch *w, uint32_t addr, const fl_hw_func *f) {
	addr &= ~1u;
	uint32_t at;
	if (find(w, addr, &at)) {
		w->funcs[at] = *f;
		memset(w->hit_addr, 0, sizeof w->hit_addr);
		return 1;
	}
	if (w->n == w->cap) {
		uint32_t nc = w->cap ? w->cap * 2 : 32;
		uint32_t *na = realloc(w->addrs, nc * sizeof *na);
		if (na == NULL) {
			return 0;
		}
		w->addrs = na;
		fl_hw_func *nf = realloc(w->funcs, nc * sizeof *nf);
		if (nf == NULL) {
			return 0;
		}
		w->funcs = nf;
		w->cap = nc;
	}
	memmove(&w->addrs[at + 1], &w->addrs[at], (w->n - at) * sizeof *w->addrs);
	memmove(&w->funcs[at + 1], &w->funcs[at], (w->n - at) * sizeof *w->funcs);
	w->addrs[at] = addr;
	w->funcs[at] = *f;
	w->n++;
	refilter(w);
	return 1;
}

// fl_hw_watch adds (on) or removes a block address watched for Go; an
// allocator entry point at addr is left alone. It returns 0 when out of
// memory.
int fl_hw_watch(fl_heapwatch *w, uint32_t addr, int on) {
	addr &= ~1u;
	uint32_t at;
	if (find(w, addr, &at)) {
		if (!on && w->funcs[at].op == FL_HW_OP_WATCH) {
			memmove(&w->addrs[at], &w->addrs[at + 1], (w->n - at - 1) * sizeof *w->addrs);
			memmove(&w->funcs[at], &w->funcs[at + 1], (w->n - at - 1) * sizeof *w->funcs);
			w->n--;
			refilter(w);
		}
		return 1;
	}
	if (!on) {
		return 1;
	}
	fl_hw_func f = {.op = FL_HW_OP_WATCH, .ptr = -1, .size = -1, .count = -1};
	return fl_hw_add_func(w, addr, &f);
}

static void go_block(fl_tracker *t, fl_heapwatch *w, uint32_t addr) {
	// The registers a watcher needs at a function's entry and return,
	// read here: one C->Go transition instead of one per register.
	static int ids[6] = {UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2,
	                     UC_ARM_REG_R3, UC_ARM_REG_SP, UC_ARM_REG_LR};
	uint32_t regs[6];
	void *p[6];
	for (int i = 0; i < 6; i++) {
		regs[i] = 0;
		p[i] = &regs[i];
	}
	uc_reg_read_batch(t->uc, ids, p, 6);
	goHeapBlock(w->handle, addr, regs);
}

// fl_hw_mark sets the state of [addr, addr+n), clipped to the map; with
// soft, bytes inside a live block keep their state.
static inline __attribute__((always_inline)) void mark(fl_heapwatch *w, uint32_t addr, uint32_t n,
                                                       uint8_t state, int soft) {
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
	if (soft == FL_HW_MARK_FILL) {
		for (size_t i = 0; i < len; i++) {
			if (m[i] == FL_HW_NONE) {
				m[i] = state;
			}
		}
		return;
	}
	for (size_t i = 0; i < len; i++) {
		if (m[i] != FL_HW_LIVE) {
			m[i] = state;
		}
	}
}

void fl_hw_mark(fl_heapwatch *w, uint32_t addr, uint32_t n, uint8_t state, int soft) {
	mark(w, addr, n, state, soft);
}

// The live-block table: linear probing on the block address, deletion by
// shifting the rest of the run back (no tombstones).

static uint32_t live_home(const fl_heapwatch *w, uint32_t addr) {
	return (uint32_t)((addr >> 2) * 0x9E3779B1u) & (w->live_cap - 1);
}

static fl_hw_live *live_find(fl_heapwatch *w, uint32_t addr) {
	uint32_t mask = w->live_cap - 1;
	for (uint32_t i = live_home(w, addr);; i = (i + 1) & mask) {
		if (w->live[i].addr == addr) {
			return &w->live[i];
		}
		if (w->live[i].addr == 0) {
			return NULL;
		}
	}
}

static int live_grow(fl_heapwatch *w) {
	uint32_t oc = w->live_cap;
	fl_hw_live *old = w->live;
	fl_hw_live *nl = calloc((size_t)oc * 2, sizeof *nl);
	if (nl == NULL) {
		return 0;
	}
	w->live = nl;
	w->live_cap = oc * 2;
	uint32_t mask = w->live_cap - 1;
	for (uint32_t j = 0; j < oc; j++) {
		if (old[j].addr == 0) {
			continue;
		}
		uint32_t i = live_home(w, old[j].addr);
		while (nl[i].addr != 0) {
			i = (i + 1) & mask;
		}
		nl[i] = old[j];
	}
	free(old);
	return 1;
}

// fl_hw_live_put records (or replaces) the live block at addr; addr 0 is
// never a block. It returns 0 when out of memory.
int fl_hw_live_put(fl_heapwatch *w, uint32_t addr, uint32_t size, uint32_t header) {
	if (addr == 0) {
		return 1;
	}
	fl_hw_live *e = live_find(w, addr);
	if (e == NULL) {
		if (2 * (w->nlive + 1) > w->live_cap && !live_grow(w)) {
			return 0;
		}
		uint32_t mask = w->live_cap - 1;
		uint32_t i = live_home(w, addr);
		while (w->live[i].addr != 0) {
			i = (i + 1) & mask;
		}
		e = &w->live[i];
		w->nlive++;
	}
	e->addr = addr;
	e->size = size;
	e->header = header;
	return 1;
}

static int live_del(fl_heapwatch *w, uint32_t addr, uint32_t *size, uint32_t *header) {
	fl_hw_live *e = live_find(w, addr);
	if (e == NULL) {
		return 0;
	}
	*size = e->size;
	*header = e->header;
	uint32_t mask = w->live_cap - 1;
	uint32_t i = (uint32_t)(e - w->live);
	for (uint32_t j = (i + 1) & mask; w->live[j].addr != 0; j = (j + 1) & mask) {
		uint32_t k = live_home(w, w->live[j].addr);
		// Move j back to the hole at i unless its home lies cyclically
		// in (i, j].
		int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (!stays) {
			w->live[i] = w->live[j];
			i = j;
		}
	}
	w->live[i].addr = 0;
	w->nlive--;
	return 1;
}

void fl_hw_live_clear(fl_heapwatch *w) {
	memset(w->live, 0, (size_t)w->live_cap * sizeof *w->live);
	w->nlive = 0;
}

// pad is the number of bytes from a block's requested end to the next
// multiple of 8 (the alignment of newlib's and heap_4's blocks).
static uint32_t pad(uint32_t addr, uint32_t size) {
	uint64_t end = (uint64_t)addr + size;
	return (uint32_t)(((end + 7) & ~(uint64_t)7) - end);
}

static void mark_live(fl_heapwatch *w, uint32_t addr, uint32_t size, uint32_t header) {
	// Bookkeeping before the block may overlap the end of the block
	// below (newlib lets a chunk in use keep data in the next chunk's
	// prev_size field): marked softly, it never takes a live byte.
	if (header > 0 && addr >= header) {
		mark(w, addr - header, header, FL_HW_HEADER, 1);
	}
	mark(w, addr, size, FL_HW_LIVE, 0);
	mark(w, addr + size, pad(addr, size), FL_HW_PAD, 1);
	// Past the padding lies what follows the block: the next block's
	// bookkeeping (heap_4, newlib-nano), or newlib's rounding slack (a
	// chunk's usable size runs 4 bytes into the next chunk's prev_size)
	// and then the next chunk's size. A write there is past the size the
	// program asked for (as valgrind checks), also when no block was ever
	// allocated after this one: memory nobody has marked becomes
	// bookkeeping.
	mark(w, addr + size + pad(addr, size), header, FL_HW_HEADER, FL_HW_MARK_FILL);
}

// release frees the live block at ptr in the map; 0 if there is none (Go
// reports the double or invalid free).
static int release(fl_heapwatch *w, uint32_t ptr, uint32_t *size, uint32_t *header) {
	if (!live_del(w, ptr, size, header)) {
		return 0;
	}
	mark(w, ptr, *size, FL_HW_FREED, 0);
	mark(w, ptr + *size, pad(ptr, *size), FL_HW_FREED, 1);
	return 1;
}

// Interned stacks.

static uint32_t mix(uint32_t h, uint32_t v) {
	h ^= v;
	h *= 0x01000193u;
	return h ^ (h >> 15);
}

// stack_hash hashes what tells stacks apart in practice (the return
// addresses and SPs); intern compares the whole entries.
static uint32_t stack_hash(const fl_frame *s, uint32_t d, uint32_t pc, uint32_t sp, uint32_t psp) {
	uint32_t h = mix(mix(mix(mix(0x811c9dc5u, pc), sp), psp), d);
	for (uint32_t i = 0; i < d; i++) {
		h = mix(h, s[i].ret ^ (s[i].sp << 7));
	}
	return h;
}

static int same_stack(const fl_heapwatch *w, const fl_hw_stack *k, const fl_frame *s, uint32_t d,
                      uint32_t pc, uint32_t sp, uint32_t psp) {
	return k->pc == pc && k->sp == sp && k->psp == psp && k->depth == d &&
	       (d == 0 || memcmp(&w->pool[k->off], s, (size_t)d * sizeof *s) == 0);
}

void fl_hw_stacks_reset(fl_heapwatch *w) {
	memset(w->stack_index, 0, FL_HW_INDEX_SLOTS * sizeof *w->stack_index);
	w->nstacks = 0;
	w->npool = 0;
	w->gen++;
}

// intern returns the id of the tracker's shadow stack seen from pc, sp and
// psp, adding it if new; FL_HW_NO_STACK when the table is full (or out of
// memory): the caller drains the events and resets the table.
static uint32_t intern(const fl_tracker *t, fl_heapwatch *w, uint32_t pc, uint32_t sp, uint32_t psp,
                       uint32_t lr) {
	uint32_t d = t->depth;
	const fl_frame *s = t->stack;
	// An allocation in a loop finds the stack of the last call from the
	// same call site: try that first.
	uint32_t *last = &w->last[((pc ^ lr) >> 1) & (FL_HW_LAST - 1)];
	if (*last < w->nstacks && same_stack(w, &w->stacks[*last], s, d, pc, sp, psp)) {
		return *last;
	}
	uint32_t h = stack_hash(s, d, pc, sp, psp);
	uint32_t mask = FL_HW_INDEX_SLOTS - 1;
	uint32_t i = h & mask;
	for (; w->stack_index[i] != 0; i = (i + 1) & mask) {
		const fl_hw_stack *k = &w->stacks[w->stack_index[i] - 1];
		if (k->hash == h && same_stack(w, k, s, d, pc, sp, psp)) {
			*last = w->stack_index[i] - 1;
			return *last;
		}
	}
	if (w->nstacks >= FL_HW_MAX_STACKS || d > FL_HW_MAX_FRAMES - w->npool) {
		return FL_HW_NO_STACK;
	}
	if ((w->nstacks & 1023) == 0) {
		fl_hw_stack *ns = realloc(w->stacks, (w->nstacks + 1024) * sizeof *ns);
		if (ns == NULL) {
			return FL_HW_NO_STACK;
		}
		w->stacks = ns;
	}
	uint32_t need = w->npool + d;
	uint32_t have = w->pool == NULL ? 0 : w->npool_cap;
	if (need > have) {
		uint32_t nc = have ? have : 4096;
		while (nc < need) {
			nc *= 2;
		}
		fl_frame *np = realloc(w->pool, (size_t)nc * sizeof *np);
		if (np == NULL) {
			return FL_HW_NO_STACK;
		}
		w->pool = np;
		w->npool_cap = nc;
	}
	if (d > 0) {
		memcpy(&w->pool[w->npool], s, (size_t)d * sizeof *s);
	}
	uint32_t id = w->nstacks++;
	fl_hw_stack *k = &w->stacks[id];
	k->hash = h;
	k->pc = pc;
	k->sp = sp;
	k->psp = psp;
	k->depth = d;
	k->off = w->npool;
	w->npool += d;
	w->stack_index[i] = id + 1;
	*last = id;
	return id;
}

// drain hands the buffered events to Go.
static void drain(fl_heapwatch *w) {
	if (w->nev == 0) {
		return;
	}
	w->drains++;
	goHeapDrain(w->handle);
	w->nev = 0;
	w->p_ev_ok = 0;
}

void fl_hw_events_done(fl_heapwatch *w) {
	w->nev = 0;
	w->p_ev_ok = 0;
}

// room makes room for one more event: the buffer grows, or Go reads it.
static void room(fl_heapwatch *w) {
	if (w->nev < w->evcap) {
		return;
	}
	if (w->evcap < FL_HW_EVENTS_MAX) {
		fl_hw_event *ne = realloc(w->ev, (size_t)w->evcap * 2 * sizeof *ne);
		if (ne != NULL) {
			w->ev = ne;
			w->evcap *= 2;
			return;
		}
	}
	drain(w);
}

// The registers entry needs, read in one call (a uc_reg_read per register
// cost more than the rest of the entry's work): SP, LR, IPSR, CONTROL and
// the operands of f (ptr, size, count; 0 when not in r0-r3).
enum { E_SP, E_LR, E_IPSR, E_CONTROL, E_N };

static void entry_regs(const fl_tracker *t, const fl_hw_func *f, uint32_t v[E_N], uint32_t op[3]) {
	int ids[E_N + 3] = {UC_ARM_REG_SP, UC_ARM_REG_LR, UC_ARM_REG_IPSR, UC_ARM_REG_CONTROL};
	uint32_t r[E_N + 3] = {0};
	void *p[E_N + 3];
	const int32_t reg[3] = {f->ptr, f->size, f->count};
	int at[3];
	int n = E_N;
	for (int i = 0; i < 3; i++) {
		at[i] = -1;
		if (reg[i] >= 0 && reg[i] <= 3) {
			at[i] = n;
			ids[n++] = UC_ARM_REG_R0 + reg[i];
		}
	}
	for (int i = 0; i < n; i++) {
		p[i] = &r[i];
	}
	uc_reg_read_batch(t->uc, ids, p, n);
	for (int i = 0; i < E_N; i++) {
		v[i] = r[i];
	}
	for (int i = 0; i < 3; i++) {
		op[i] = at[i] >= 0 ? r[at[i]] : 0;
	}
}

// entry handles a call of an entry point: the block at its address.
static void entry(fl_tracker *t, fl_heapwatch *w, uint32_t addr, const fl_hw_func *f) {
	uint32_t v[E_N], op[3]; // op: ptr, size, count
	entry_regs(t, f, v, op);
	uint32_t ptr = op[0], size;
	if (f->op == FL_HW_OP_CALLOC) {
		uint64_t n = (uint64_t)op[2] * op[1];
		size = n > 0xffffffffu ? 0xffffffffu : (uint32_t)n;
	} else {
		size = op[1];
	}
	uint32_t sp = v[E_SP], lr = v[E_LR];
	uint32_t psp = 0;
	if ((v[E_IPSR] & 0x1ff) == 0) {
		psp = (v[E_CONTROL] >> 1) & 1;
	}
	room(w);
	uint32_t id = intern(t, w, addr, sp, psp, lr);
	if (id == FL_HW_NO_STACK) {
		drain(w);
		fl_hw_stacks_reset(w);
		id = intern(t, w, addr, sp, psp, lr);
	}
	fl_hw_event *e = &w->ev[w->nev++];
	if (w->nev + 1 < w->evcap) {
		// The buffer is written once per call, far apart: fetch the
		// next events' memory meanwhile.
		__builtin_prefetch(&w->ev[w->nev + 1], 1);
	}
	e->insn = t->insns;
	e->kind = FL_HW_EV_ENTRY;
	e->func = f->id;
	e->ptr = ptr;
	e->size = size;
	e->ret = lr & ~1u;
	e->sp = sp;
	e->stack = id;
	e->result = 0;
	w->p_ev = w->nev - 1;
	w->p_ev_ok = 1;

	w->p_op = f->op;
	w->p_func = f->id;
	w->p_ptr = ptr;
	w->p_size = size;
	w->p_header = f->header;
	w->p_old = 0;
	if (ptr != 0 && (f->op == FL_HW_OP_FREE || f->op == FL_HW_OP_REALLOC)) {
		uint32_t osize = 0, oheader = 0;
		if (release(w, ptr, &osize, &oheader) && f->op == FL_HW_OP_REALLOC) {
			w->p_old = 1;
			w->p_old_size = osize;
			w->p_old_header = oheader;
		}
	}
	w->ret = lr & ~1u;
	w->ret_sp = sp;
	w->inside = 1;
}

// ret handles the return of the call in progress.
static void ret(fl_tracker *t, fl_heapwatch *w, uint32_t r0) {
	w->inside = 0;
	uint32_t p = (w->p_op == FL_HW_OP_FREE || w->p_op == FL_HW_OP_INTERNAL) ? 0 : r0;
	if (w->p_ev_ok && w->p_ev < w->nev && w->ev[w->p_ev].kind == FL_HW_EV_ENTRY) {
		// The entry is still buffered (the usual case): it becomes the
		// whole call.
		w->ev[w->p_ev].kind = FL_HW_EV_CALL;
		w->ev[w->p_ev].result = p;
	} else {
		room(w);
		fl_hw_event *e = &w->ev[w->nev++];
		memset(e, 0, sizeof *e);
		e->insn = t->insns;
		e->kind = FL_HW_EV_RETURN;
		e->func = w->p_func;
		e->ptr = p;
	}
	w->p_ev_ok = 0;
	if (w->p_op == FL_HW_OP_FREE || w->p_op == FL_HW_OP_INTERNAL) {
		return;
	}
	if (p == 0) {
		if (w->p_op == FL_HW_OP_REALLOC && w->p_old && w->p_size != 0) {
			// Failed: the old block stays allocated.
			fl_hw_live_put(w, w->p_ptr, w->p_old_size, w->p_old_header);
			mark_live(w, w->p_ptr, w->p_old_size, w->p_old_header);
		}
		return;
	}
	fl_hw_live_put(w, p, w->p_size, w->p_header);
	mark_live(w, p, w->p_size, w->p_header);
}

// fl_hw_block runs in the block hook for every block that runs.
void fl_hw_block(fl_tracker *t, uint32_t addr) {
	fl_heapwatch *w = t->hw;
	if (w->inside) {
		// Inside an allocator call only its return matters (the
		// allocator's own calls of other entry points are its business).
		if (addr != w->ret) {
			return;
		}
		// SP and r0 in one call.
		static int ids[2] = {UC_ARM_REG_SP, UC_ARM_REG_R0};
		uint32_t v[2] = {0, 0};
		void *p[2] = {&v[0], &v[1]};
		uc_reg_read_batch(t->uc, ids, p, 2);
		if (v[0] >= w->ret_sp) {
			if (w->p_op != FL_HW_OP_WATCH) {
				ret(t, w, v[1]);
			} else if (w->ret_go) {
				go_block(t, w, addr); // Go ends the call
			} else {
				w->inside = 0;
			}
		}
		return;
	}
	uint32_t b = (addr >> 1) & (FL_HW_FILTER_BITS - 1);
	if ((w->filter[b >> 3] & (1u << (b & 7))) == 0) {
		return;
	}
	uint32_t at;
	uint32_t h = (addr >> 1) & (FL_HW_HIT - 1);
	if (w->hit_addr[h] == (addr | 1)) {
		at = w->hit_at[h];
	} else {
		if (!find(w, addr, &at)) {
			return;
		}
		w->hit_addr[h] = addr | 1;
		w->hit_at[h] = at;
	}
	if (w->funcs[at].op == FL_HW_OP_WATCH) {
		go_block(t, w, addr);
	} else {
		entry(t, w, addr, &w->funcs[at]);
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
