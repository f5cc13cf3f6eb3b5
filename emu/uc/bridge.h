// C side of the uc binding: wrappers around libunicorn's variadic entry
// points and the trampolines that forward callbacks to Go.
#ifndef FAULTLINE_UC_BRIDGE_H
#define FAULTLINE_UC_BRIDGE_H

#include <stdint.h>
#include "ucapi.h" // <unicorn/unicorn.h>, with the uc_* functions loaded at run time

uc_err fl_open(int model, uc_engine **out);
uc_err fl_get_cpu_model(uc_engine *uc, int *model);
uc_err fl_page_size(uc_engine *uc, uint32_t *size);
uc_err fl_flush_tb(uc_engine *uc);
uc_err fl_remove_tb(uc_engine *uc, uint64_t begin, uint64_t end);
uc_err fl_request_tb(uc_engine *uc, uint64_t addr, uint32_t *size, uint32_t *icount);

uc_err fl_hook_code(uc_engine *uc, uc_hook *hh, uint64_t begin, uint64_t end, uintptr_t h);
uc_err fl_hook_block(uc_engine *uc, uc_hook *hh, uint64_t begin, uint64_t end, uintptr_t h);
uc_err fl_hook_mem_invalid(uc_engine *uc, uc_hook *hh, uintptr_t h);
uc_err fl_hook_intr(uc_engine *uc, uc_hook *hh, uintptr_t h);
uc_err fl_hook_insn_invalid(uc_engine *uc, uc_hook *hh, uintptr_t h);
uc_err fl_mmio_map(uc_engine *uc, uint64_t addr, size_t size, uintptr_t h);

#endif
