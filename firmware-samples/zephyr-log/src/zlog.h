/*
 * faultline's Zephyr-like deferred logger (our own code, written from the
 * published layout of Zephyr 3.x logging): messages wait in a packet ring
 * of 32-bit words (log_buffer over buf32) until the "log thread" formats
 * them to the UART, as Zephyr's log_core/log_output do.
 */
#ifndef ZLOG_H
#define ZLOG_H
#include <stdint.h>

struct log_source_const_data {
	const char *name;
	uint8_t level;
};

/* The message header as Zephyr 3.x lays it out; the firmware's DWARF
 * describes it, as a Zephyr ELF's does. */
struct log_msg_desc {
	uint32_t valid : 1;
	uint32_t busy : 1;
	uint32_t type : 1;
	uint32_t domain : 3;
	uint32_t level : 3;
	uint32_t package_len : 11;
	uint32_t data_len : 12;
};

struct log_msg_hdr {
	struct log_msg_desc desc;
	const void *source;
	uint32_t timestamp;
};

struct log_msg {
	struct log_msg_hdr hdr;
	uint8_t padding[4];
	uint8_t data[];
};

#define LOG_LEVEL_ERR 1
#define LOG_LEVEL_WRN 2
#define LOG_LEVEL_INF 3
#define LOG_LEVEL_DBG 4

#define LOG_MODULE(n)                                                          \
	__attribute__((section("log_const_area"), used))                      \
	const struct log_source_const_data log_const_##n = {#n, LOG_LEVEL_DBG}

void log_init(uint32_t cycles_per_sec);
void log_set_cycles(uint32_t cycles);
void z_log(const struct log_source_const_data *src, int level, const char *fmt, ...);
void z_log_hexdump(const struct log_source_const_data *src, int level, const void *data,
		   uint32_t len, const char *fmt, ...);
/* The log thread's step: print and free one message; 0 when none. */
int log_process(void);
/* Panic: print every message still in the ring. */
void log_panic(void);

/* log_output.c */
void log_output_timestamp_freq_set(uint32_t frequency);
void log_output_msg_process(const uint32_t *msg);
void uart_init(void);
void uart_puts(const char *s);
#endif
