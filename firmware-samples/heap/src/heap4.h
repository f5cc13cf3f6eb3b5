/* The heap_4-style allocator of heap4.c. */
#ifndef FAULTLINE_HEAP4_H
#define FAULTLINE_HEAP4_H

#include <stddef.h>

void *pvPortMalloc(size_t wanted);
void vPortFree(void *pv);
size_t xPortGetFreeHeapSize(void);
size_t xPortGetMinimumEverFreeHeapSize(void);

#endif
