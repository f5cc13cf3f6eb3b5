#ifndef FL_LAZYFP_H
#define FL_LAZYFP_H

#include <stdint.h>
#include <unicorn/unicorn.h>

struct fl_tracker;

// Lazy floating-point state preservation (ARMv7-M B1.5.7, ARMv8-M
// PreserveFPState): an exception taken with an active FP context reserves
// room for s0-s15 and FPSCR in its frame and sets FPCCR.LSPACT and FPCAR;
// the registers are written there by the first FP instruction executed
// while LSPACT is set (whichever code runs it: the handler, or a thread an
// RTOS switched to), which also clears LSPACT. Unicorn does not model
// FPCCR, so code hooks on the firmware's FP instructions (fl_lazyfp_watch)
// do it while fl_lazyfp_set armed it.
struct fl_lazyfp {
	uc_hook *hooks;
	uint32_t n, cap;
	int active;      // FPCCR.LSPACT
	uint32_t fpcar;  // FPCAR: where s0 goes
	uint64_t saves;  // preservations made
	uint64_t failed; // preservations whose write failed (unmapped FPCAR)
};

uc_err fl_lazyfp_watch(struct fl_tracker *t, uint32_t addr);
void fl_lazyfp_set(struct fl_tracker *t, int active, uint32_t fpcar);
void fl_lazyfp_free(struct fl_tracker *t);

#endif
