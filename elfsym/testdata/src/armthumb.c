/* ARM-state and Thumb-state code in one image (ARMv5TE interworking), to
 * exercise the $a/$t/$d mapping symbols. Not Cortex-M, but valid EM_ARM. */
volatile int sink;

__attribute__((target("arm"), noinline)) int arm_func(int x)
{
	return x * 3 + 0x12345;
}

__attribute__((target("thumb"), noinline)) int thumb_func(int x)
{
	return arm_func(x) + 0x7654321;
}

__attribute__((target("arm"))) void _start(void)
{
	sink = thumb_func(sink);
	for (;;)
		;
}
