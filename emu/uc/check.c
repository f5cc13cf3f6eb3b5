//go:build cgo

// Access checks that a Cortex-M core makes and Unicorn 2.0.1 does not:
//
//   - the MPU (ARMv7-M ARM B3.5 PMSAv7, ARMv8-M ARM D1.2 PMSAv8) for data
//     accesses and instruction fetches that Unicorn allows (a NULL read from
//     readable flash, a store into a read-only region inside RAM, an
//     unprivileged access to a privileged-only region, executing code in an
//     XN region of executable memory);
//   - CCR.UNALIGN_TRP (B3.2.8): unaligned halfword and word accesses fault;
//   - the instructions that always fault on an unaligned address on ARMv7-M
//     whatever UNALIGN_TRP says (A3.2.1): LDM/STM, LDRD/STRD, LDREX/STREX
//     (word), LDREXH/STREXH (halfword), VLDR/VSTR/VLDM/VSTM.
//
// Cost: Unicorn decides at translation time whether a load or store takes
// the inline TLB fast path, and any UC_HOOK_MEM_READ/WRITE hook sends every
// load and store of every block translated while it exists through the
// helper, whatever the hook's address range. So the data hook (mem_hook) is
// installed only while it is needed (the MPU enabled with a region, or
// UNALIGN_TRP set) and the harness flushes the translated blocks when it
// installs it. Fetch checks are code hooks bounded to the XN ranges, and the
// always-aligned instructions get a code hook each at their address (found
// by scanning the image, like SDIV/UDIV): code outside them keeps its speed.
//
// A failed check records chk_* and stops the emulation. A code hook stops
// before its instruction runs; the data hook runs inside the access, so the
// harness replays to the instruction (see emu.exactCheckPC).
#include <stdlib.h>
#include "tracker.h"
#include "heapwatch.h"

enum { K_READ = 0, K_WRITE = 1, K_FETCH = 2 };

static int privileged(fl_tracker *t) {
	uint32_t ipsr = 0, control = 0;
	uc_reg_read(t->uc, UC_ARM_REG_IPSR, &ipsr);
	if ((ipsr & 0x1ff) != 0) {
		return 1;
	}
	uc_reg_read(t->uc, UC_ARM_REG_CONTROL, &control);
	return (control & 1) == 0;
}

enum { NO_REGION = -1, MULTIPLE_REGIONS = -2 };

// region finds the MPU region deciding addr: PMSAv7 the highest-numbered
// enabled region containing it whose subregion is enabled; PMSAv8 the only
// enabled region containing it, MULTIPLE_REGIONS when there are several
// (ARMv8-M ARM B3.5: PMSAv8 regions have no priority, an address in two
// regions faults). It returns NO_REGION for none (the background map).
static int region(fl_tracker *t, uint32_t addr) {
	if (t->v8m) {
		int found = NO_REGION;
		for (int n = 0; n < 16; n++) {
			uint32_t rlar = t->rlim[n];
			if ((rlar & 1) == 0) {
				continue;
			}
			uint32_t base = t->rbar[n] & ~0x1fu, limit = rlar | 0x1f;
			if (addr >= base && addr <= limit) {
				if (found != NO_REGION) {
					return MULTIPLE_REGIONS;
				}
				found = n;
			}
		}
		return found;
	}
	for (int n = 15; n >= 0; n--) {
		uint32_t rasr = t->rlim[n];
		if ((rasr & 1) == 0) {
			continue;
		}
		uint32_t sf = (rasr >> 1) & 0x1f;
		if (sf < 4) {
			continue;
		}
		uint64_t size = (uint64_t)1 << (sf + 1);
		uint64_t base = (uint64_t)t->rbar[n] & ~(size - 1);
		uint64_t a = addr;
		if (a < base || a >= base + size) {
			continue;
		}
		if (size >= 256) {
			uint64_t sub = (a - base) / (size / 8);
			if ((rasr >> (8 + sub)) & 1) {
				continue;
			}
		}
		return n;
	}
	return NO_REGION;
}

// fl_mpu_denied reports whether the MPU denies an access of kind (K_*) at
// addr; priv < 0 means read the privilege from the core when it matters.
// The MPU is off while an exception of negative priority is active or
// FAULTMASK is set, unless MPU_CTRL.HFNMIENA (B3.5.5).
int fl_mpu_denied(fl_tracker *t, uint32_t addr, int kind, int priv) {
	if ((t->mpu_ctrl & 1) == 0) {
		return 0;
	}
	int n = region(t, addr);
	int r_priv, w_priv, r_user, w_user, xn = 0;
	if (n == MULTIPLE_REGIONS) {
		r_priv = w_priv = r_user = w_user = 0;
	} else if (n < 0) {
		// Background region: privileged only, with PRIVDEFENA.
		r_priv = w_priv = (t->mpu_ctrl & 4) != 0;
		r_user = w_user = 0;
	} else if (t->v8m) {
		uint32_t ap = (t->rbar[n] >> 1) & 3;
		xn = t->rbar[n] & 1;
		r_priv = 1;
		w_priv = (ap & 2) == 0;
		r_user = (ap & 1) != 0;
		w_user = r_user && w_priv;
	} else {
		uint32_t ap = (t->rlim[n] >> 24) & 7;
		xn = (t->rlim[n] >> 28) & 1;
		r_priv = ap != 0 && ap != 4;
		w_priv = ap == 1 || ap == 2 || ap == 3;
		r_user = ap == 2 || ap == 3 || ap == 6 || ap == 7;
		w_user = ap == 3;
	}
	int ok_priv, ok_user;
	if (kind == K_FETCH) {
		ok_priv = r_priv && !xn;
		ok_user = r_user && !xn;
	} else if (kind == K_WRITE) {
		ok_priv = w_priv;
		ok_user = w_user;
	} else {
		ok_priv = r_priv;
		ok_user = r_user;
	}
	if (ok_priv && ok_user) {
		return 0;
	}
	if (priv < 0) {
		priv = (!ok_priv && !ok_user) ? 1 : privileged(t);
	}
	if (priv ? ok_priv : ok_user) {
		return 0;
	}
	if ((t->mpu_ctrl & 2) == 0) {
		uint32_t fm = 0;
		uc_reg_read(t->uc, UC_ARM_REG_FAULTMASK, &fm);
		if (t->neg_prio || (fm & 1)) {
			return 0;
		}
	}
	return 1;
}

static void record(fl_tracker *t, int what, uint32_t addr, uint32_t size, int write, uint32_t pc) {
	if (t->chk_fault != FL_CHK_NONE) {
		return;
	}
	t->chk_fault = what;
	t->chk_addr = addr;
	t->chk_size = size;
	t->chk_write = write;
	t->chk_pc = pc;
	t->chk_blk = t->cur_addr;
	t->chk_blk_size = t->cur_size;
	t->chk_exact = t->exact_insns;
	t->chk_last_pc = t->last_pc;
	t->chk_it = t->last_it;
	uc_emu_stop(t->uc);
}

static void mem_hook(uc_engine *uc, uc_mem_type type, uint64_t addr64, int size, int64_t value, void *ud) {
	fl_tracker *t = ud;
	uint32_t addr = (uint32_t)addr64;
	int write = type == UC_MEM_WRITE;
	if (t->hw != NULL) {
		fl_hw_access(t, addr, size, write);
	}
	if (t->chk_fault != FL_CHK_NONE) {
		return;
	}
	if (t->align_trap && size > 1 && (addr & (uint32_t)(size - 1)) != 0) {
		record(t, FL_CHK_UNALIGNED, addr, (uint32_t)size, write, 0);
		return;
	}
	if (t->mpu_check && (addr >> 29) != 7 && fl_mpu_denied(t, addr, write ? K_WRITE : K_READ, -1)) {
		// The PPB (0xE0000000-0xFFFFFFFF) is not subject to the MPU; a
		// denied access of several bytes is reported at its first byte.
		record(t, FL_CHK_MPU_DATA, addr, (uint32_t)size, write, 0);
	}
}

// xn_hook runs before each instruction in an XN (or no-access) range, and
// before an instruction that starts in the halfword just below one: a
// 32-bit instruction whose second halfword is in the range is fetched from
// it, and faults at its own address.
static void xn_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	if (t->chk_fault == FL_CHK_NONE && (fl_mpu_denied(t, (uint32_t)addr, K_FETCH, -1) ||
	                                    (size == 4 && fl_mpu_denied(t, (uint32_t)addr + 2, K_FETCH, -1)))) {
		record(t, FL_CHK_MPU_FETCH, (uint32_t)addr, size, 0, (uint32_t)addr);
	}
}

static uint32_t reg(uc_engine *uc, int n) {
	uint32_t v = 0;
	int id = n <= 12 ? UC_ARM_REG_R0 + n : n == 13 ? UC_ARM_REG_SP : n == 14 ? UC_ARM_REG_LR : UC_ARM_REG_PC;
	uc_reg_read(uc, id, &v);
	return v;
}

// fl_aligned_class decodes the Thumb instruction hw1:hw2 and returns the
// alignment an ARMv7-M core requires of its base register whatever
// UNALIGN_TRP says (ARMv7-M ARM A3.2.1, encodings A5.3.5, A5.3.6, A6.4),
// with the base register in *rn: 4 for LDM/STM, LDRD/STRD, LDREX/STREX and
// the FP loads and stores, 2 for LDREXH/STREXH, 0 for anything else. Every
// offset these instructions add is a multiple of that alignment, so the
// base register alone decides. SP-based forms (PUSH/POP, [sp, #imm]) and
// PC-relative literals are always aligned and return 0.
static int aligned_class(uint16_t hw1, uint16_t hw2, int *rn) {
	int n = hw1 & 0xf;
	int cls = 0;
	if ((hw1 & 0xf000) == 0xc000) { // LDM/STM T1 (16-bit)
		*rn = (hw1 >> 8) & 7;
		return 4;
	}
	if ((hw1 >> 11) < 0x1d) {
		return 0; // other 16-bit instructions
	}
	if ((hw1 & 0xfe40) == 0xe800) { // LDM/STM (T2), 1110 100x x0xx
		uint32_t op = (hw1 >> 7) & 3;
		if (op == 1 || op == 2) {
			cls = 4;
		}
	} else if ((hw1 & 0xfe40) == 0xe840) { // dual/exclusive, 1110 100x x1xx
		uint32_t op1 = (hw1 >> 7) & 3, op2 = (hw1 >> 4) & 3;
		uint32_t op3 = (hw2 >> 4) & 0xf;
		if (op1 == 0 && op2 <= 1) {
			cls = 4; // STREX/LDREX
		} else if ((op1 & 2) || (op2 & 2)) {
			cls = 4; // STRD/LDRD (immediate)
		} else if (op1 == 1 && (op3 == 5)) {
			cls = 2; // STREXH/LDREXH
		}
	} else if ((hw1 & 0xfe00) == 0xec00 || (hw1 & 0xfe00) == 0xed00) {
		// Coprocessor loads/stores; CP10/CP11 are VLDR/VSTR/VLDM/VSTM.
		if ((hw2 & 0x0e00) == 0x0a00 && (hw1 & 0xffe0) != 0xec40) {
			uint32_t puw = ((hw1 >> 6) & 6) | ((hw1 >> 5) & 1);
			if ((hw1 & 0xfe00) == 0xed00 || puw != 0) {
				cls = 4;
			}
		}
	}
	if (cls == 0 || n == 13 || n == 15) {
		return 0;
	}
	*rn = n;
	return cls;
}

int fl_aligned_insn(uint16_t hw1, uint16_t hw2) {
	int rn = 0;
	return aligned_class(hw1, hw2, &rn);
}

static void align_hook(uc_engine *uc, uint64_t addr, uint32_t size, void *ud) {
	fl_tracker *t = ud;
	uint8_t b[4] = {0};
	if (t->chk_fault != FL_CHK_NONE || uc_mem_read(uc, addr, b, 4) != UC_ERR_OK) {
		return;
	}
	int rn = 0;
	int cls = aligned_class((uint16_t)(b[0] | b[1] << 8), (uint16_t)(b[2] | b[3] << 8), &rn);
	if (cls == 0) {
		return;
	}
	uint32_t base = reg(uc, rn);
	if ((base & (uint32_t)(cls - 1)) != 0) {
		record(t, FL_CHK_UNALIGNED, base, (uint32_t)cls, 0, (uint32_t)addr);
	}
}

// fl_tracker_mem_hook installs or removes the data-access hook. Blocks
// translated before it was installed do not call it: the caller flushes.
uc_err fl_tracker_mem_hook(fl_tracker *t, int on) {
	if (on && !t->mem_on) {
		uc_err err = uc_hook_add(t->uc, &t->mem_hook, UC_HOOK_MEM_READ | UC_HOOK_MEM_WRITE,
		                         (void *)mem_hook, t, (uint64_t)1, (uint64_t)0);
		if (err == UC_ERR_OK) {
			t->mem_on = 1;
		}
		return err;
	}
	if (!on && t->mem_on) {
		t->mem_on = 0;
		return uc_hook_del(t->uc, t->mem_hook);
	}
	return UC_ERR_OK;
}

static uc_err add_chk(fl_tracker *t, void *fn, uint64_t begin, uint64_t end) {
	if (t->nchk == t->capchk) {
		uint32_t nc = t->capchk ? t->capchk * 2 : 16;
		uc_hook *nh = realloc(t->chk_hooks, nc * sizeof *nh);
		if (nh == NULL) {
			return UC_ERR_NOMEM;
		}
		t->chk_hooks = nh;
		t->capchk = nc;
	}
	uc_err err = uc_hook_add(t->uc, &t->chk_hooks[t->nchk], UC_HOOK_CODE, fn, t, begin, end);
	if (err == UC_ERR_OK) {
		t->nchk++;
		uc_ctl(t->uc, UC_CTL_WRITE(UC_CTL_TB_REMOVE_CACHE, 2), begin, end + 1);
	}
	return err;
}

// fl_tracker_watch_xn checks every instruction in [begin, end] against the
// MPU before it runs; the range's translated blocks are dropped.
uc_err fl_tracker_watch_xn(fl_tracker *t, uint32_t begin, uint32_t end) {
	return add_chk(t, (void *)xn_hook, begin, end);
}

// fl_tracker_watch_aligned checks the base register of the always-aligned
// instruction at addr before it runs.
uc_err fl_tracker_watch_aligned(fl_tracker *t, uint32_t addr) {
	return add_chk(t, (void *)align_hook, addr, addr);
}

// fl_tracker_clear_watches removes the XN and alignment code hooks added
// after the first keep.
uc_err fl_tracker_clear_watches(fl_tracker *t, uint32_t keep) {
	uc_err err = UC_ERR_OK;
	if (keep > t->nchk) {
		keep = t->nchk;
	}
	for (uint32_t i = keep; i < t->nchk; i++) {
		uc_err e = uc_hook_del(t->uc, t->chk_hooks[i]);
		if (err == UC_ERR_OK) {
			err = e;
		}
	}
	t->nchk = keep;
	return err;
}
