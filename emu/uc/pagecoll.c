//go:build cgo

// The store fast path for Debian's libunicorn 2.0.x (see pagecoll.h).

#include "pagecoll.h"

#include <dlfcn.h>
#include <stddef.h>

struct page_collection;

typedef struct page_collection *(*fl_pc_lock_fn)(void *uc, uint64_t start, uint64_t end);
typedef void (*fl_pc_unlock_fn)(struct page_collection *set);

// Set once by fl_pagecoll_setup, before any engine exists (under the Go
// side's sync.Once), then only read.
static int fl_pc_skip;
static fl_pc_lock_fn fl_pc_real_lock;
static fl_pc_unlock_fn fl_pc_real_unlock;
// Set (to 1) the first time libunicorn calls in here.
static int fl_pc_called;

// These two definitions interpose the library's own functions of the same
// names: libunicorn calls them through its PLT, and the dynamic loader
// resolves those references to the executable's exported definitions first
// (the executable is linked with --export-dynamic, see load.go).
//
// The ARM target's translate-all.c builds a page collection, a GTree of
// page entries, only to lock pages; Unicorn's page locks do nothing (one
// thread per engine), so with 2.0.x every guest store to RAM that holds
// translated code paid a malloc, a tree and its destruction for no effect.
// Unicorn after 2.0.1 returns no collection and frees none; that is what
// happens here when the loaded library reports 2.0. Any other version gets
// its own functions.
struct page_collection *page_collection_lock_arm(void *uc, uint64_t start, uint64_t end) {
	if (!__atomic_load_n(&fl_pc_called, __ATOMIC_RELAXED)) {
		__atomic_store_n(&fl_pc_called, 1, __ATOMIC_RELAXED);
	}
	if (fl_pc_skip || fl_pc_real_lock == NULL) {
		return NULL;
	}
	return fl_pc_real_lock(uc, start, end);
}

void page_collection_unlock_arm(struct page_collection *set) {
	if (set == NULL || fl_pc_real_unlock == NULL) {
		return;
	}
	fl_pc_real_unlock(set);
}

void fl_pagecoll_setup(void *lib, unsigned major, unsigned minor) {
	void *l = dlsym(lib, "page_collection_lock_arm");
	void *u = dlsym(lib, "page_collection_unlock_arm");
	// dlsym on the library's handle finds its own definitions (its scope
	// only), unless the library has none; never take our own by mistake.
	if (l == (void *)page_collection_lock_arm) {
		l = NULL;
	}
	if (u == (void *)page_collection_unlock_arm) {
		u = NULL;
	}
	fl_pc_real_lock = NULL;
	fl_pc_real_unlock = NULL;
	if (l != NULL && u != NULL) {
		__builtin_memcpy(&fl_pc_real_lock, &l, sizeof l);
		__builtin_memcpy(&fl_pc_real_unlock, &u, sizeof u);
	}
	fl_pc_skip = major == 2 && minor == 0;
}

int fl_pagecoll_skipping(void) { return fl_pc_skip; }

int fl_pagecoll_called(void) { return __atomic_load_n(&fl_pc_called, __ATOMIC_RELAXED); }
