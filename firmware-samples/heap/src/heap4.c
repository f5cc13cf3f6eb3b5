/*
 * A small first-fit allocator in the shape of FreeRTOS's heap_4 (written
 * for faultline from the public description of heap_4, not from its
 * source): the heap is the array ucHeap; each block starts with a
 * BlockLink_t {pxNextFreeBlock, xBlockSize}; free blocks form a list sorted
 * by address from xStart to the end marker pxEnd, and neighbours merge when
 * a block is freed; the top bit of xBlockSize marks a block allocated;
 * xFreeBytesRemaining and xMinimumEverFreeBytesRemaining keep the
 * statistics. Single-threaded: no scheduler to suspend.
 */
#include <stddef.h>
#include <stdint.h>

#include "heap4.h"

#define HEAP_TOTAL 4096u
#define HEAP_ALIGN 8u

typedef struct BlockLink {
	struct BlockLink *pxNextFreeBlock;
	size_t xBlockSize;
} BlockLink_t;

#define HDR_SIZE ((sizeof(BlockLink_t) + (HEAP_ALIGN - 1u)) & ~(size_t)(HEAP_ALIGN - 1u))
#define USED_BIT ((size_t)1 << 31)
#define MIN_SPLIT (2u * HDR_SIZE)

uint8_t ucHeap[HEAP_TOTAL] __attribute__((aligned(8)));
static BlockLink_t xStart;
static BlockLink_t *pxEnd;
static size_t xFreeBytesRemaining;
static size_t xMinimumEverFreeBytesRemaining;
static size_t xAllocs, xFrees;

static void heap_setup(void)
{
	uintptr_t lo = ((uintptr_t)ucHeap + HEAP_ALIGN - 1u) & ~(uintptr_t)(HEAP_ALIGN - 1u);
	uintptr_t hi = ((uintptr_t)ucHeap + HEAP_TOTAL - HDR_SIZE) & ~(uintptr_t)(HEAP_ALIGN - 1u);
	pxEnd = (BlockLink_t *)hi;
	pxEnd->xBlockSize = 0;
	pxEnd->pxNextFreeBlock = NULL;
	BlockLink_t *all = (BlockLink_t *)lo;
	all->xBlockSize = hi - lo;
	all->pxNextFreeBlock = pxEnd;
	xStart.pxNextFreeBlock = all;
	xStart.xBlockSize = 0;
	xFreeBytesRemaining = all->xBlockSize;
	xMinimumEverFreeBytesRemaining = all->xBlockSize;
}

/* Puts blk back in the address-ordered free list, merging it with the
 * free blocks just before and just after it. */
static void list_insert(BlockLink_t *blk)
{
	BlockLink_t *at = &xStart;
	while (at->pxNextFreeBlock < blk)
		at = at->pxNextFreeBlock;
	if (at != &xStart && (uint8_t *)at + at->xBlockSize == (uint8_t *)blk) {
		at->xBlockSize += blk->xBlockSize;
		blk = at;
	}
	BlockLink_t *next = at->pxNextFreeBlock;
	if (next != pxEnd && (uint8_t *)blk + blk->xBlockSize == (uint8_t *)next) {
		blk->xBlockSize += next->xBlockSize;
		blk->pxNextFreeBlock = next->pxNextFreeBlock;
	} else {
		blk->pxNextFreeBlock = next;
	}
	if (at != blk)
		at->pxNextFreeBlock = blk;
}

void *pvPortMalloc(size_t wanted)
{
	if (pxEnd == NULL)
		heap_setup();
	if (wanted == 0 || wanted > HEAP_TOTAL)
		return NULL;
	size_t need = (wanted + HDR_SIZE + HEAP_ALIGN - 1u) & ~(size_t)(HEAP_ALIGN - 1u);
	if (need > xFreeBytesRemaining)
		return NULL;
	BlockLink_t *prev = &xStart;
	BlockLink_t *blk = xStart.pxNextFreeBlock;
	while (blk->xBlockSize < need && blk->pxNextFreeBlock != NULL) {
		prev = blk;
		blk = blk->pxNextFreeBlock;
	}
	if (blk == pxEnd)
		return NULL;
	prev->pxNextFreeBlock = blk->pxNextFreeBlock;
	if (blk->xBlockSize - need > MIN_SPLIT) {
		BlockLink_t *rest = (BlockLink_t *)((uint8_t *)blk + need);
		rest->xBlockSize = blk->xBlockSize - need;
		blk->xBlockSize = need;
		list_insert(rest);
	}
	xFreeBytesRemaining -= blk->xBlockSize;
	if (xFreeBytesRemaining < xMinimumEverFreeBytesRemaining)
		xMinimumEverFreeBytesRemaining = xFreeBytesRemaining;
	blk->xBlockSize |= USED_BIT;
	blk->pxNextFreeBlock = NULL;
	xAllocs++;
	return (uint8_t *)blk + HDR_SIZE;
}

void vPortFree(void *pv)
{
	if (pv == NULL)
		return;
	BlockLink_t *blk = (BlockLink_t *)((uint8_t *)pv - HDR_SIZE);
	/* Not a block this allocator handed out (or freed already): ignored,
	 * where FreeRTOS would stop in configASSERT. */
	if ((blk->xBlockSize & USED_BIT) == 0 || blk->pxNextFreeBlock != NULL)
		return;
	blk->xBlockSize &= ~USED_BIT;
	xFreeBytesRemaining += blk->xBlockSize;
	xFrees++;
	list_insert(blk);
}

size_t xPortGetFreeHeapSize(void)
{
	return xFreeBytesRemaining;
}

size_t xPortGetMinimumEverFreeHeapSize(void)
{
	return xMinimumEverFreeBytesRemaining;
}

/* Walks the free list for its statistics, as FreeRTOS's does: it reads the
 * BlockLink_t of every free block. */
void vPortGetHeapStats(HeapStats_t *stats)
{
	size_t blocks = 0, largest = 0, smallest = (size_t)-1;
	if (pxEnd != NULL) {
		for (BlockLink_t *b = xStart.pxNextFreeBlock; b != pxEnd && b != NULL; b = b->pxNextFreeBlock) {
			blocks++;
			if (b->xBlockSize > largest)
				largest = b->xBlockSize;
			if (b->xBlockSize < smallest)
				smallest = b->xBlockSize;
		}
	}
	stats->xAvailableHeapSpaceInBytes = xFreeBytesRemaining;
	stats->xSizeOfLargestFreeBlockInBytes = largest;
	stats->xSizeOfSmallestFreeBlockInBytes = blocks ? smallest : 0;
	stats->xNumberOfFreeBlocks = blocks;
	stats->xMinimumEverFreeBytesRemaining = xMinimumEverFreeBytesRemaining;
	stats->xNumberOfSuccessfulAllocations = xAllocs;
	stats->xNumberOfSuccessfulFrees = xFrees;
}
