//go:build cgo

// The run-time loader of libunicorn (see ucapi.h).

#define FL_UC_API_IMPL
#include "ucapi.h"
#include "pagecoll.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

fl_uc_api_t fl_uc_api;

// The name and the slot of every function in fl_uc_api_t.
static const struct {
	const char *name;
	size_t off;
} fl_uc_syms[] = {
#define FL_UC_SYM(f) {#f, offsetof(fl_uc_api_t, f)}
	FL_UC_SYM(uc_version),
	FL_UC_SYM(uc_open),
	FL_UC_SYM(uc_close),
	FL_UC_SYM(uc_ctl),
	FL_UC_SYM(uc_mem_map),
	FL_UC_SYM(uc_mem_unmap),
	FL_UC_SYM(uc_mem_protect),
	FL_UC_SYM(uc_mem_read),
	FL_UC_SYM(uc_mem_write),
	FL_UC_SYM(uc_mmio_map),
	FL_UC_SYM(uc_reg_read),
	FL_UC_SYM(uc_reg_read_batch),
	FL_UC_SYM(uc_reg_write),
	FL_UC_SYM(uc_hook_add),
	FL_UC_SYM(uc_hook_del),
	FL_UC_SYM(uc_emu_start),
	FL_UC_SYM(uc_emu_stop),
	FL_UC_SYM(uc_context_alloc),
	FL_UC_SYM(uc_context_save),
	FL_UC_SYM(uc_context_restore),
	FL_UC_SYM(uc_context_free),
#undef FL_UC_SYM
};

// Every slot of the table is filled: a function added to fl_uc_api_t must
// be added to fl_uc_syms too.
_Static_assert(sizeof(fl_uc_syms) / sizeof(fl_uc_syms[0]) == FL_UC_NFUNCS, "fl_uc_syms is incomplete");
_Static_assert(sizeof(fl_uc_api_t) == FL_UC_NFUNCS * sizeof(void (*)(void)), "fl_uc_api_t has unlisted members");
_Static_assert(sizeof(void *) == sizeof(void (*)(void)), "dlsym results must fit a function pointer");

int fl_uc_load(const char *lib, char *err, size_t n) {
	if (n > 0) {
		err[0] = '\0';
	}
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e != NULL ? e : "dlopen failed");
		return FL_UC_NOLIB;
	}
	fl_uc_api_t api;
	memset(&api, 0, sizeof api);
	for (size_t i = 0; i < FL_UC_NFUNCS; i++) {
		dlerror();
		void *p = dlsym(h, fl_uc_syms[i].name);
		if (p == NULL) {
			snprintf(err, n, "%s", fl_uc_syms[i].name);
			dlclose(h);
			return FL_UC_NOSYM;
		}
		// POSIX guarantees a data pointer from dlsym converts to a function
		// pointer; copy the bits rather than cast.
		memcpy((char *)&api + fl_uc_syms[i].off, &p, sizeof p);
	}
	unsigned int major = 0, minor = 0;
	api.uc_version(&major, &minor);
	if (major != UC_API_MAJOR) {
		snprintf(err, n, "%u.%u", major, minor);
		dlclose(h);
		return FL_UC_VERSION;
	}
	fl_uc_api = api;
	fl_pagecoll_setup(h, major, minor);
	return FL_UC_OK;
}
