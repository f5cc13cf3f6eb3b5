package rtos

// discoverZephyr recognises a Zephyr kernel (_kernel and its thread list)
// and lists its threads.
// Nothing is done here yet: it always reports "no Zephyr kernel" (nil, nil).
func discoverZephyr(in Input) (*Kernel, error) {
	_ = in
	return nil, nil
}
