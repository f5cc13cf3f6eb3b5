/*
 * Shared definitions of the allocation recorder's sample firmware.
 */
#ifndef FAULTLINE_RECORDER_FW_H
#define FAULTLINE_RECORDER_FW_H

#include <stdint.h>

#if defined(__clang__)
#define FW_NOINLINE __attribute__((noinline))
#else
#define FW_NOINLINE __attribute__((noinline, noclone))
#endif

#ifdef __cplusplus
extern "C" {
#endif

extern volatile uint32_t fw_sink;

int main(void);
void fw_exit(int status) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif

#endif
