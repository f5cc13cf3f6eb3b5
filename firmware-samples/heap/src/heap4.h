/* The heap_4-style allocator of heap4.c. */
#ifndef FAULTLINE_HEAP4_H
#define FAULTLINE_HEAP4_H

#include <stddef.h>

void *pvPortMalloc(size_t wanted);
void vPortFree(void *pv);
size_t xPortGetFreeHeapSize(void);
size_t xPortGetMinimumEverFreeHeapSize(void);

/* The statistics FreeRTOS's vPortGetHeapStats fills in. */
typedef struct {
	size_t xAvailableHeapSpaceInBytes;
	size_t xSizeOfLargestFreeBlockInBytes;
	size_t xSizeOfSmallestFreeBlockInBytes;
	size_t xNumberOfFreeBlocks;
	size_t xMinimumEverFreeBytesRemaining;
	size_t xNumberOfSuccessfulAllocations;
	size_t xNumberOfSuccessfulFrees;
} HeapStats_t;
void vPortGetHeapStats(HeapStats_t *stats);

#endif
