/*
 * A deliberately broken fault hook, for `faultline regress` (broken.json).
 *
 * A product wants its error LED on as soon as the device faults, before the
 * crash dump goes out, so it keeps a HardFault_Handler of its own in C and
 * hands over to the capture from there. The capture build is made with
 * FL_CAPTURE_NO_HARDFAULT_HANDLER for that, and faultline_capture.h says
 * what the hand-over needs: "make your handler's first instruction a branch
 * to fl_capture_fault_entry (LR, SP and r4-r11 must still be the values at
 * exception entry)".
 *
 * The bug: this handler is an ordinary C function. Its call to
 * board_error_led() overwrites LR, which held EXC_RETURN, with a return
 * address into HardFault_Handler, and its prologue pushes two words on the
 * faulting stack. fl_capture_fault_entry then takes that return address for
 * EXC_RETURN (so it picks the stack, and the frame size, from the bits of a
 * code address) and reads the exception frame 8 bytes off. The dump it
 * writes decodes, but its registers and backtrace are not the crash's.
 *
 * The fix is the one line faultline_capture.c's own handler has: a naked
 * handler whose first instruction is `b fl_capture_fault_entry`, with the
 * LED switched on in the capture's `done` hook, or after the dump.
 */
#include <stdint.h>

#include "faultline_capture.h"

/* Mirrored to the board's error LED by the status task; a variable here, so
 * that the sample runs on any MPS2 model and in the emulator. */
volatile uint32_t board_error_led_on;

__attribute__((noinline)) void board_error_led(void)
{
	board_error_led_on = 1;
}

void HardFault_Handler(void);

void HardFault_Handler(void)
{
	board_error_led();
	fl_capture_fault_entry();
}
