// Lazy binding to libunicorn. faultline does not link -lunicorn: the 19 MB
// library costs every process ~6 ms of dynamic relocation at start, and the
// commands that only decode dumps never emulate. Instead fl_uc_load (ucapi.c)
// dlopens it on the first uc.Open and fills fl_uc_api with the entry points
// the binding uses.
//
// Every file of the binding includes this header instead of
// <unicorn/unicorn.h>, which still provides the types and constants. After
// the table, each uc_* name used by the binding is redirected: the
// non-variadic functions to static inline wrappers (which cgo can call, so
// the Go side keeps writing C.uc_mem_map), the two variadic ones (uc_ctl,
// uc_hook_add, called from C only) straight to the function pointer. A call
// to any uc_* function missing from the table is a link error (undefined
// symbol), never a silent dependency on libunicorn.
//
// The table is only valid after fl_uc_load succeeded; every call goes
// through a uc_engine, which only exists after uc.Open loaded it.
#ifndef FAULTLINE_UC_API_H
#define FAULTLINE_UC_API_H

#include <stddef.h>
#include <stdint.h>
#include <unicorn/unicorn.h>

// fl_uc_api_t holds exactly the libunicorn functions the binding calls, each
// typed after its declaration in <unicorn/unicorn.h>.
typedef struct fl_uc_api_t {
	__typeof__(uc_version) *uc_version;
	__typeof__(uc_open) *uc_open;
	__typeof__(uc_close) *uc_close;
	__typeof__(uc_ctl) *uc_ctl;
	__typeof__(uc_mem_map) *uc_mem_map;
	__typeof__(uc_mem_unmap) *uc_mem_unmap;
	__typeof__(uc_mem_protect) *uc_mem_protect;
	__typeof__(uc_mem_read) *uc_mem_read;
	__typeof__(uc_mem_write) *uc_mem_write;
	__typeof__(uc_mmio_map) *uc_mmio_map;
	__typeof__(uc_reg_read) *uc_reg_read;
	__typeof__(uc_reg_read_batch) *uc_reg_read_batch;
	__typeof__(uc_reg_write) *uc_reg_write;
	__typeof__(uc_hook_add) *uc_hook_add;
	__typeof__(uc_hook_del) *uc_hook_del;
	__typeof__(uc_emu_start) *uc_emu_start;
	__typeof__(uc_emu_stop) *uc_emu_stop;
	__typeof__(uc_context_alloc) *uc_context_alloc;
	__typeof__(uc_context_save) *uc_context_save;
	__typeof__(uc_context_restore) *uc_context_restore;
	__typeof__(uc_context_free) *uc_context_free;
} fl_uc_api_t;

#define FL_UC_NFUNCS 21

extern fl_uc_api_t fl_uc_api;

// fl_uc_load results.
enum {
	FL_UC_OK = 0,
	FL_UC_NOLIB = 1,   // dlopen failed (err: dlerror)
	FL_UC_NOSYM = 2,   // a function is missing (err: its name)
	FL_UC_VERSION = 3, // uc_version reports another major version (err: "M.m")
};

// fl_uc_load dlopens lib, resolves every function of fl_uc_api_t and checks
// that uc_version reports major version UC_API_MAJOR (2). On success it
// fills fl_uc_api and keeps the library loaded; on failure it leaves
// fl_uc_api untouched, unloads lib and writes the detail into err[0:n]. It
// is not thread-safe: the Go side calls it under a sync.Once (load.go),
// except in tests with a library name that cannot succeed.
int fl_uc_load(const char *lib, char *err, size_t n);

#ifndef FL_UC_API_IMPL

static inline unsigned int fl_uc_version(unsigned int *major, unsigned int *minor) {
	return fl_uc_api.uc_version(major, minor);
}
static inline uc_err fl_uc_open(uc_arch arch, uc_mode mode, uc_engine **uc) {
	return fl_uc_api.uc_open(arch, mode, uc);
}
static inline uc_err fl_uc_close(uc_engine *uc) {
	return fl_uc_api.uc_close(uc);
}
static inline uc_err fl_uc_mem_map(uc_engine *uc, uint64_t address, size_t size, uint32_t perms) {
	return fl_uc_api.uc_mem_map(uc, address, size, perms);
}
static inline uc_err fl_uc_mem_unmap(uc_engine *uc, uint64_t address, size_t size) {
	return fl_uc_api.uc_mem_unmap(uc, address, size);
}
static inline uc_err fl_uc_mem_protect(uc_engine *uc, uint64_t address, size_t size, uint32_t perms) {
	return fl_uc_api.uc_mem_protect(uc, address, size, perms);
}
static inline uc_err fl_uc_mem_read(uc_engine *uc, uint64_t address, void *bytes, size_t size) {
	return fl_uc_api.uc_mem_read(uc, address, bytes, size);
}
static inline uc_err fl_uc_mem_write(uc_engine *uc, uint64_t address, const void *bytes, size_t size) {
	return fl_uc_api.uc_mem_write(uc, address, bytes, size);
}
static inline uc_err fl_uc_mmio_map(uc_engine *uc, uint64_t address, size_t size,
                                    uc_cb_mmio_read_t read_cb, void *user_data_read,
                                    uc_cb_mmio_write_t write_cb, void *user_data_write) {
	return fl_uc_api.uc_mmio_map(uc, address, size, read_cb, user_data_read, write_cb, user_data_write);
}
static inline uc_err fl_uc_reg_read(uc_engine *uc, int regid, void *value) {
	return fl_uc_api.uc_reg_read(uc, regid, value);
}
static inline uc_err fl_uc_reg_read_batch(uc_engine *uc, int *regs, void **vals, int count) {
	return fl_uc_api.uc_reg_read_batch(uc, regs, vals, count);
}
static inline uc_err fl_uc_reg_write(uc_engine *uc, int regid, const void *value) {
	return fl_uc_api.uc_reg_write(uc, regid, value);
}
static inline uc_err fl_uc_hook_del(uc_engine *uc, uc_hook hh) {
	return fl_uc_api.uc_hook_del(uc, hh);
}
static inline uc_err fl_uc_emu_start(uc_engine *uc, uint64_t begin, uint64_t until,
                                     uint64_t timeout, size_t count) {
	return fl_uc_api.uc_emu_start(uc, begin, until, timeout, count);
}
static inline uc_err fl_uc_emu_stop(uc_engine *uc) {
	return fl_uc_api.uc_emu_stop(uc);
}
static inline uc_err fl_uc_context_alloc(uc_engine *uc, uc_context **context) {
	return fl_uc_api.uc_context_alloc(uc, context);
}
static inline uc_err fl_uc_context_save(uc_engine *uc, uc_context *context) {
	return fl_uc_api.uc_context_save(uc, context);
}
static inline uc_err fl_uc_context_restore(uc_engine *uc, uc_context *context) {
	return fl_uc_api.uc_context_restore(uc, context);
}
static inline uc_err fl_uc_context_free(uc_context *context) {
	return fl_uc_api.uc_context_free(context);
}

// Each wrapper has exactly the type of the function it stands for.
#define FL_UC_SAME_TYPE(f) \
	_Static_assert(__builtin_types_compatible_p(__typeof__(fl_##f), __typeof__(f)), \
	               "fl_" #f " does not match the declaration of " #f " in unicorn.h")
FL_UC_SAME_TYPE(uc_version);
FL_UC_SAME_TYPE(uc_open);
FL_UC_SAME_TYPE(uc_close);
FL_UC_SAME_TYPE(uc_mem_map);
FL_UC_SAME_TYPE(uc_mem_unmap);
FL_UC_SAME_TYPE(uc_mem_protect);
FL_UC_SAME_TYPE(uc_mem_read);
FL_UC_SAME_TYPE(uc_mem_write);
FL_UC_SAME_TYPE(uc_mmio_map);
FL_UC_SAME_TYPE(uc_reg_read);
FL_UC_SAME_TYPE(uc_reg_read_batch);
FL_UC_SAME_TYPE(uc_reg_write);
FL_UC_SAME_TYPE(uc_hook_del);
FL_UC_SAME_TYPE(uc_emu_start);
FL_UC_SAME_TYPE(uc_emu_stop);
FL_UC_SAME_TYPE(uc_context_alloc);
FL_UC_SAME_TYPE(uc_context_save);
FL_UC_SAME_TYPE(uc_context_restore);
FL_UC_SAME_TYPE(uc_context_free);
#undef FL_UC_SAME_TYPE

#define uc_version fl_uc_version
#define uc_open fl_uc_open
#define uc_close fl_uc_close
#define uc_ctl (fl_uc_api.uc_ctl)
#define uc_mem_map fl_uc_mem_map
#define uc_mem_unmap fl_uc_mem_unmap
#define uc_mem_protect fl_uc_mem_protect
#define uc_mem_read fl_uc_mem_read
#define uc_mem_write fl_uc_mem_write
#define uc_mmio_map fl_uc_mmio_map
#define uc_reg_read fl_uc_reg_read
#define uc_reg_read_batch fl_uc_reg_read_batch
#define uc_reg_write fl_uc_reg_write
#define uc_hook_add (fl_uc_api.uc_hook_add)
#define uc_hook_del fl_uc_hook_del
#define uc_emu_start fl_uc_emu_start
#define uc_emu_stop fl_uc_emu_stop
#define uc_context_alloc fl_uc_context_alloc
#define uc_context_save fl_uc_context_save
#define uc_context_restore fl_uc_context_restore
#define uc_context_free fl_uc_context_free

#endif // FL_UC_API_IMPL

#endif
