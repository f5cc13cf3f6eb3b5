/*
 * Overlapping line-number sequences in one compilation unit: each function
 * is in a section of its own (-ffunction-sections, so a line sequence of
 * its own), and src/overlap.ld places the sections on top of each other
 * (an overlay, as bank-switched or copied-to-RAM code is linked):
 *
 *   ov_big     at BASE            the longest
 *   ov_small   at BASE            same start, shorter
 *   ov_mid     inside ov_big      later start, runs past ov_big's end
 *
 * addr2line resolves each address to the sequence that starts lowest and,
 * between sequences with the same start, to the longest (bfd's
 * sort_line_sequences); elfsym must give the same answers.
 */
volatile unsigned ov_sink;

__attribute__((noinline)) void ov_big(unsigned v)
{
	ov_sink = v;
	ov_sink = v * 3u;
	ov_sink = v ^ 0x55u;
	ov_sink = v + 7u;
	ov_sink = v - 9u;
	ov_sink = v << 2;
	ov_sink = v >> 3;
	ov_sink = v | 0x80u;
}

__attribute__((noinline)) void ov_small(unsigned v)
{
	ov_sink = v + 1u;
}

__attribute__((noinline)) void ov_mid(unsigned v)
{
	ov_sink = v * 5u;
	ov_sink = v ^ 0xaau;
	ov_sink = v + 11u;
	ov_sink = v - 13u;
	ov_sink = v << 4;
	ov_sink = v >> 5;
	ov_sink = v & 0x7fu;
	ov_sink = v * 17u;
}

void Reset_Handler(void)
{
	ov_big(1u);
	ov_small(2u);
	ov_mid(3u);
	for (;;)
		;
}

__attribute__((section(".isr_vector"), used))
const unsigned ov_vectors[2] = {0x20010000u, (unsigned)Reset_Handler};
