/*
 * rtk scheduler, lists and queues: our own code (see kernel.h). Every list
 * operation runs with interrupts masked (rtk_enter_critical).
 */
#include "kernel.h"

TCB_t *volatile pxCurrentTCB;
List_t pxReadyTasksLists[configMAX_PRIORITIES];
List_t xDelayedTaskList1, xDelayedTaskList2;
List_t *volatile pxDelayedTaskList, *volatile pxOverflowDelayedTaskList;
List_t xPendingReadyList, xSuspendedTaskList, xTasksWaitingTermination;
volatile UBaseType_t uxCurrentNumberOfTasks;
volatile TickType_t xTickCount;
volatile UBaseType_t uxSchedulerSuspended;
volatile BaseType_t xYieldPending;
QueueRegistryItem_t xQueueRegistry[configQUEUE_REGISTRY_SIZE];
#if RTK_TRACE
static UBaseType_t task_numbers;
static UBaseType_t queue_numbers;
#endif

/* ---- lists ---- */

static void list_init(List_t *l)
{
	l->uxNumberOfItems = 0;
	l->pxIndex = (ListItem_t *)&l->xListEnd;
	l->xListEnd.xItemValue = portMAX_DELAY;
	l->xListEnd.pxNext = (ListItem_t *)&l->xListEnd;
	l->xListEnd.pxPrevious = (ListItem_t *)&l->xListEnd;
}

static void item_init(ListItem_t *it, void *owner)
{
	it->pxContainer = NULL;
	it->pvOwner = owner;
	it->pxNext = it->pxPrevious = NULL;
}

/* Insert before `before`. */
static void insert_before(List_t *l, ListItem_t *before, ListItem_t *it)
{
	it->pxNext = before;
	it->pxPrevious = before->pxPrevious;
	before->pxPrevious->pxNext = it;
	before->pxPrevious = it;
	it->pxContainer = l;
	l->uxNumberOfItems++;
}

static void list_append(List_t *l, ListItem_t *it)
{
	insert_before(l, (ListItem_t *)&l->xListEnd, it);
}

/* Sorted by xItemValue; equal values keep insertion order. */
static void list_insert_sorted(List_t *l, ListItem_t *it)
{
	ListItem_t *p = l->xListEnd.pxNext;
	while (p != (ListItem_t *)&l->xListEnd && p->xItemValue <= it->xItemValue)
		p = p->pxNext;
	insert_before(l, p, it);
}

static void list_remove(ListItem_t *it)
{
	List_t *l = it->pxContainer;
	if (l == NULL)
		return;
	it->pxNext->pxPrevious = it->pxPrevious;
	it->pxPrevious->pxNext = it->pxNext;
	if (l->pxIndex == it)
		l->pxIndex = it->pxPrevious;
	it->pxContainer = NULL;
	l->uxNumberOfItems--;
}

static ListItem_t *list_head(List_t *l)
{
	return l->uxNumberOfItems ? l->xListEnd.pxNext : NULL;
}

/* ---- tasks ---- */

void prvTaskExitError(void)
{
	/* A task function returned: it must not. */
	rtk_enter_critical();
	for (;;)
		__asm volatile("" ::: "memory");
}

static void make_ready(TCB_t *t)
{
	list_append(&pxReadyTasksLists[t->uxPriority], &t->xStateListItem);
}

TaskHandle_t rtk_task_create(TCB_t *t, TaskFunction_t fn, const char *name, StackType_t *stack,
			     uint32_t depth, void *arg, UBaseType_t prio, uint32_t stack_limit)
{
	uint8_t *b = (uint8_t *)stack;
	for (uint32_t i = 0; i < depth * sizeof(StackType_t); i++)
		b[i] = STACK_FILL_BYTE;
	uint32_t i;
	for (i = 0; i + 1 < configMAX_TASK_NAME_LEN && name[i]; i++)
		t->pcTaskName[i] = name[i];
	for (; i < configMAX_TASK_NAME_LEN; i++)
		t->pcTaskName[i] = 0;
	t->pxStack = stack;
#if RTK_END
	t->pxEndOfStack = stack + depth - 1;
#endif
	t->uxPriority = t->uxBasePriority = prio;
	t->uxMutexesHeld = 0;
	t->ucStaticallyAllocated = 1;
#if RTK_TRACE
	t->uxTCBNumber = ++task_numbers;
	t->uxTaskNumber = 0;
#endif
#if RTK_MPU
	for (int r = 0; r < 4; r++) {
		t->xMPUSettings.xRegion[r].ulRegionBaseAddress = 0;
		t->xMPUSettings.xRegion[r].ulRegionAttribute = 0;
	}
#endif
	item_init(&t->xStateListItem, t);
	item_init(&t->xEventListItem, t);
	t->xEventListItem.xItemValue = configMAX_PRIORITIES - prio;
	uint32_t top = (uint32_t)(stack + depth) & ~7u;
	t->pxTopOfStack = rtk_port_init_stack((uint32_t *)top, fn, arg,
					      stack_limit ? stack_limit : (uint32_t)stack);
	rtk_enter_critical();
	uxCurrentNumberOfTasks++;
	if (pxCurrentTCB == NULL || pxCurrentTCB->uxPriority < prio)
		pxCurrentTCB = t;
	make_ready(t);
	rtk_exit_critical();
	return t;
}

static void init_lists(void)
{
	for (int p = 0; p < configMAX_PRIORITIES; p++)
		list_init(&pxReadyTasksLists[p]);
	list_init(&xDelayedTaskList1);
	list_init(&xDelayedTaskList2);
	list_init(&xPendingReadyList);
	list_init(&xSuspendedTaskList);
	list_init(&xTasksWaitingTermination);
	pxDelayedTaskList = &xDelayedTaskList1;
	pxOverflowDelayedTaskList = &xDelayedTaskList2;
}


void rtk_kernel_init(void) { init_lists(); }

void rtk_start(void)
{
	rtk_port_start_first();
}

/* Highest non-empty ready list; the task at its head runs. A yielding task
 * moves to the back of its list (round robin). */
void vTaskSwitchContext(void)
{
	if (uxSchedulerSuspended) {
		xYieldPending = 1;
		return;
	}
	xYieldPending = 0;
#if RTK_HOOK
	{
		/* The outgoing task's saved context must be above its stack's
		 * start and its lowest 16 stack bytes must still hold the
		 * creation fill. */
		const volatile uint32_t *bottom = pxCurrentTCB->pxStack;
		if (pxCurrentTCB->pxTopOfStack <= pxCurrentTCB->pxStack ||
		    (bottom[0] & bottom[1] & bottom[2] & bottom[3]) != 0xa5a5a5a5u ||
		    (bottom[0] | bottom[1] | bottom[2] | bottom[3]) != 0xa5a5a5a5u)
			vApplicationStackOverflowHook(pxCurrentTCB, pxCurrentTCB->pcTaskName);
	}
#endif
	for (int p = configMAX_PRIORITIES - 1; p >= 0; p--) {
		ListItem_t *h = list_head(&pxReadyTasksLists[p]);
		if (h) {
			pxCurrentTCB = h->pvOwner;
			return;
		}
	}
}

void rtk_yield(void)
{
	rtk_enter_critical();
	TCB_t *t = pxCurrentTCB;
	list_remove(&t->xStateListItem);
	make_ready(t);
	rtk_port_yield();
	rtk_exit_critical();
}

/* Blocks the current task: on the delayed list until wake, or (no
 * timeout) on the suspended list. Called in a critical section. */
static void block_current(TickType_t ticks)
{
	TCB_t *t = pxCurrentTCB;
	list_remove(&t->xStateListItem);
	if (ticks == portMAX_DELAY) {
		list_append(&xSuspendedTaskList, &t->xStateListItem);
	} else {
		TickType_t wake = xTickCount + ticks;
		t->xStateListItem.xItemValue = wake;
		list_insert_sorted(wake < xTickCount ? pxOverflowDelayedTaskList : pxDelayedTaskList,
				   &t->xStateListItem);
	}
	rtk_port_yield();
}

void rtk_delay(TickType_t ticks)
{
	rtk_enter_critical();
	block_current(ticks);
	rtk_exit_critical();
}

void rtk_suspend_self(void)
{
	rtk_enter_critical();
	TCB_t *t = pxCurrentTCB;
	list_remove(&t->xStateListItem);
	list_remove(&t->xEventListItem);
	list_append(&xSuspendedTaskList, &t->xStateListItem);
	rtk_port_yield();
	rtk_exit_critical();
}

void rtk_delete_self(void)
{
	rtk_enter_critical();
	TCB_t *t = pxCurrentTCB;
	list_remove(&t->xStateListItem);
	list_remove(&t->xEventListItem);
	/* The idle task would reclaim it; ours never does, so it stays here. */
	list_append(&xTasksWaitingTermination, &t->xStateListItem);
	uxCurrentNumberOfTasks--;
	rtk_port_yield();
	rtk_exit_critical();
	for (;;)
		__asm volatile("" ::: "memory");
}

#if RTK_NOTIFY_WAIT
uint32_t ulTaskGenericNotifyTake(UBaseType_t index, BaseType_t clear, TickType_t wait)
{
	rtk_enter_critical();
	TCB_t *t = pxCurrentTCB;
	if (t->ulNotifiedValue[index] == 0 && wait != 0) {
		t->ucNotifyState[index] = 1;
		block_current(wait);
	}
	rtk_exit_critical();
	rtk_enter_critical();
	uint32_t v = t->ulNotifiedValue[index];
	if (v != 0)
		t->ulNotifiedValue[index] = clear ? 0 : v - 1;
	t->ucNotifyState[index] = 0;
	rtk_exit_critical();
	return v;
}
#endif

void rtk_suspend_all(void)
{
	uxSchedulerSuspended++;
}

/* The kernel's own view of a task's state (as eTaskGetState defines it). */
eTaskState rtk_task_state(TCB_t *t)
{
	List_t *state = t->xStateListItem.pxContainer;
	List_t *event = t->xEventListItem.pxContainer;
	if (t == pxCurrentTCB)
		return eRunning;
	if (event == &xPendingReadyList)
		return eReady;
	if (state == pxDelayedTaskList || state == pxOverflowDelayedTaskList)
		return eBlocked;
	if (state == &xSuspendedTaskList) {
		if (event != NULL)
			return eBlocked;
		for (int i = 0; i < RTK_NOTIFY_N; i++)
			if (t->ucNotifyState[i] == 1)
				return eBlocked; /* waiting on a notification without timeout */
		return eSuspended;
	}
	if (state == &xTasksWaitingTermination || state == NULL)
		return eDeleted;
	return eReady;
}

/* Wakes one task from an event list; returns 1 when it outranks the
 * current task. */
static int wake_from_event(List_t *ev)
{
	ListItem_t *h = list_head(ev);
	if (!h)
		return 0;
	TCB_t *t = h->pvOwner;
	list_remove(&t->xEventListItem);
	if (uxSchedulerSuspended) {
		list_append(&xPendingReadyList, &t->xEventListItem);
	} else {
		list_remove(&t->xStateListItem);
		make_ready(t);
	}
	return t->uxPriority > pxCurrentTCB->uxPriority;
}

void rtk_tick(void)
{
	xTickCount++;
	if (xTickCount == 0) {
		List_t *tmp = pxDelayedTaskList;
		pxDelayedTaskList = pxOverflowDelayedTaskList;
		pxOverflowDelayedTaskList = tmp;
	}
	int switch_needed = 0;
	for (;;) {
		ListItem_t *h = list_head(pxDelayedTaskList);
		if (!h || h->xItemValue > xTickCount)
			break;
		TCB_t *t = h->pvOwner;
		list_remove(&t->xStateListItem);
		list_remove(&t->xEventListItem);
		make_ready(t);
		if (t->uxPriority >= pxCurrentTCB->uxPriority)
			switch_needed = 1;
	}
	if (switch_needed)
		rtk_port_yield();
}

/* ---- queues ---- */

static void registry_add(Queue_t *q, const char *name)
{
	for (int i = 0; i < configQUEUE_REGISTRY_SIZE; i++) {
		if (xQueueRegistry[i].pcQueueName == NULL) {
			xQueueRegistry[i].pcQueueName = name;
			xQueueRegistry[i].xHandle = q;
			return;
		}
	}
}

void rtk_queue_init(Queue_t *q, int8_t *storage, UBaseType_t len, UBaseType_t item, uint8_t type, const char *name)
{
	q->pcHead = storage;
	q->pcWriteTo = storage;
	q->u.xQueue.pcTail = storage ? storage + len * item : NULL;
	q->u.xQueue.pcReadFrom = storage ? storage + (len - 1) * item : NULL;
	list_init(&q->xTasksWaitingToSend);
	list_init(&q->xTasksWaitingToReceive);
	q->uxMessagesWaiting = 0;
	q->uxLength = len;
	q->uxItemSize = item;
	q->cRxLock = q->cTxLock = -1;
#if RTK_TRACE
	q->uxQueueNumber = ++queue_numbers;
	q->ucQueueType = type;
#else
	(void)type;
#endif
	if (name)
		registry_add(q, name);
}

void rtk_mutex_init(Queue_t *q, const char *name)
{
	rtk_queue_init(q, NULL, 1, 0, 1, name);
	q->u.xSemaphore.xMutexHolder = NULL;
	q->u.xSemaphore.uxRecursiveCallCount = 0;
	q->uxMessagesWaiting = 1;
}

static void copy_in(Queue_t *q, const void *item)
{
	if (q->uxItemSize) {
		const int8_t *s = item;
		for (UBaseType_t i = 0; i < q->uxItemSize; i++)
			q->pcWriteTo[i] = s[i];
		q->pcWriteTo += q->uxItemSize;
		if (q->pcWriteTo >= q->u.xQueue.pcTail)
			q->pcWriteTo = q->pcHead;
	}
	q->uxMessagesWaiting++;
}

static void copy_out(Queue_t *q, void *item)
{
	if (q->uxItemSize) {
		q->u.xQueue.pcReadFrom += q->uxItemSize;
		if (q->u.xQueue.pcReadFrom >= q->u.xQueue.pcTail)
			q->u.xQueue.pcReadFrom = q->pcHead;
		int8_t *d = item;
		for (UBaseType_t i = 0; i < q->uxItemSize; i++)
			d[i] = q->u.xQueue.pcReadFrom[i];
	}
	q->uxMessagesWaiting--;
}

/* Puts the current task on an event list (by priority) and blocks it. */
static void wait_on(List_t *ev, TickType_t wait)
{
	TCB_t *t = pxCurrentTCB;
	t->xEventListItem.xItemValue = configMAX_PRIORITIES - t->uxPriority;
	list_insert_sorted(ev, &t->xEventListItem);
	block_current(wait);
}

BaseType_t rtk_queue_send(Queue_t *q, const void *item, TickType_t wait)
{
	for (int tries = 0;; tries++) {
		rtk_enter_critical();
		if (q->uxMessagesWaiting < q->uxLength) {
			copy_in(q, item);
			if (wake_from_event(&q->xTasksWaitingToReceive))
				rtk_port_yield();
			rtk_exit_critical();
			return 1;
		}
		if (wait == 0 || tries > 0) { /* no wait, or woken/timed out */
			rtk_exit_critical();
			return 0;
		}
		wait_on(&q->xTasksWaitingToSend, wait);
		rtk_exit_critical();
	}
}

BaseType_t rtk_queue_receive(Queue_t *q, void *item, TickType_t wait)
{
	for (int tries = 0;; tries++) {
		rtk_enter_critical();
		if (q->uxMessagesWaiting > 0) {
			copy_out(q, item);
			if (wake_from_event(&q->xTasksWaitingToSend))
				rtk_port_yield();
			rtk_exit_critical();
			return 1;
		}
		if (wait == 0 || tries > 0) { /* no wait, or woken/timed out */
			rtk_exit_critical();
			return 0;
		}
		wait_on(&q->xTasksWaitingToReceive, wait);
		rtk_exit_critical();
	}
}

BaseType_t rtk_queue_send_from_isr(Queue_t *q, const void *item)
{
	if (q->uxMessagesWaiting >= q->uxLength)
		return 0;
	copy_in(q, item);
	if (wake_from_event(&q->xTasksWaitingToReceive) && !uxSchedulerSuspended)
		rtk_port_yield();
	return 1;
}

/* Priority inheritance: a holder of lower priority runs at the waiter's
 * priority until it gives the mutex back (uxBasePriority keeps its own). */
static void inherit(TCB_t *holder)
{
	TCB_t *me = pxCurrentTCB;
	if (holder->uxPriority >= me->uxPriority)
		return;
	if (holder->xStateListItem.pxContainer == &pxReadyTasksLists[holder->uxPriority]) {
		list_remove(&holder->xStateListItem);
		holder->uxPriority = me->uxPriority;
		make_ready(holder);
	} else {
		holder->uxPriority = me->uxPriority;
	}
	holder->xEventListItem.xItemValue = configMAX_PRIORITIES - holder->uxPriority;
}

BaseType_t rtk_mutex_take(Queue_t *q, TickType_t wait)
{
	for (int tries = 0;; tries++) {
		rtk_enter_critical();
		if (q->uxMessagesWaiting > 0) {
			q->uxMessagesWaiting--;
			q->u.xSemaphore.xMutexHolder = pxCurrentTCB;
			pxCurrentTCB->uxMutexesHeld++;
			rtk_exit_critical();
			return 1;
		}
		if (wait == 0 || tries > 0) { /* no wait, or woken/timed out */
			rtk_exit_critical();
			return 0;
		}
		inherit(q->u.xSemaphore.xMutexHolder);
		wait_on(&q->xTasksWaitingToReceive, wait);
		rtk_exit_critical();
	}
}
