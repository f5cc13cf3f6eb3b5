/*
 * rtk: faultline's own small preemptive test kernel. It is NOT FreeRTOS and
 * contains no FreeRTOS code; it reproduces only what a debugger sees of a
 * FreeRTOS system, so that faultline's FreeRTOS awareness can be tested
 * against real compiled firmware:
 *   - the kernel's global symbol names (pxCurrentTCB, pxReadyTasksLists,
 *     xDelayedTaskList1/2, pxDelayedTaskList, pxOverflowDelayedTaskList,
 *     xPendingReadyList, xSuspendedTaskList, xTasksWaitingTermination,
 *     uxCurrentNumberOfTasks, xQueueRegistry, prvTaskExitError),
 *   - the public field order of the task control block, list, list item and
 *     mini list item types and their configuration variants,
 *   - each Cortex-M port's context frame as PendSV leaves it on the task's
 *     stack (see port.c).
 * The scheduling code itself is ours and much simpler.
 *
 * Configuration (set by the Makefile per build variant):
 *   RTK_MINI_LIST   1: the list end marker is a 3-word mini list item
 *                   (configUSE_MINI_LIST_ITEM), 0: a full list item
 *   RTK_TRACE       1: TCB and queue carry trace numbers (configUSE_TRACE_FACILITY)
 *   RTK_MPU         1: TCB starts with an MPU settings block (portUSING_MPU_WRAPPERS)
 *   RTK_END         1: TCB records pxEndOfStack (configRECORD_STACK_HIGH_ADDRESS)
 *   RTK_NAME_LEN    configMAX_TASK_NAME_LEN (16 by default)
 *   RTK_NOTIFY_N    configTASK_NOTIFICATION_ARRAY_ENTRIES (1 by default)
 *   RTK_NOTIFY_WAIT 1: the monitor task waits forever on a task
 *                   notification (ulTaskGenericNotifyTake) instead of
 *                   suspending itself
 *   RTK_HOOK        1: vTaskSwitchContext checks the outgoing task's saved SP and stack
 *                   bottom (configCHECK_FOR_STACK_OVERFLOW 2) and calls
 *                   vApplicationStackOverflowHook, inside PendSV
 */
#ifndef RTK_KERNEL_H
#define RTK_KERNEL_H

#include <stdint.h>
#include <stddef.h>

#ifndef RTK_MINI_LIST
#define RTK_MINI_LIST 1
#endif
#ifndef RTK_TRACE
#define RTK_TRACE 1
#endif
#ifndef RTK_MPU
#define RTK_MPU 0
#endif
#ifndef RTK_END
#define RTK_END 1
#endif

#define NOINLINE __attribute__((noinline))

#define configMAX_PRIORITIES 7
#ifndef RTK_NAME_LEN
#define RTK_NAME_LEN 16
#endif
#ifndef RTK_NOTIFY_N
#define RTK_NOTIFY_N 1
#endif
#ifndef RTK_NOTIFY_WAIT
#define RTK_NOTIFY_WAIT 0
#endif
#define configMAX_TASK_NAME_LEN RTK_NAME_LEN
#define configQUEUE_REGISTRY_SIZE 8
#define portMAX_DELAY 0xffffffffu
#define STACK_FILL_BYTE 0xa5

typedef uint32_t StackType_t;
typedef long BaseType_t;
typedef unsigned long UBaseType_t;
typedef uint32_t TickType_t;

struct xLIST;

struct xLIST_ITEM {
	TickType_t xItemValue;
	struct xLIST_ITEM *pxNext;
	struct xLIST_ITEM *pxPrevious;
	void *pvOwner;
	struct xLIST *pxContainer;
};
typedef struct xLIST_ITEM ListItem_t;

#if RTK_MINI_LIST
struct xMINI_LIST_ITEM {
	TickType_t xItemValue;
	struct xLIST_ITEM *pxNext;
	struct xLIST_ITEM *pxPrevious;
};
typedef struct xMINI_LIST_ITEM MiniListItem_t;
#else
typedef struct xLIST_ITEM MiniListItem_t;
#endif

typedef struct xLIST {
	volatile UBaseType_t uxNumberOfItems;
	ListItem_t *pxIndex;
	MiniListItem_t xListEnd;
} List_t;

#if RTK_MPU
typedef struct xMPU_REGION_REGISTERS {
	uint32_t ulRegionBaseAddress;
	uint32_t ulRegionAttribute;
} xMPU_REGION_REGISTERS;
typedef struct xMPU_SETTINGS {
	xMPU_REGION_REGISTERS xRegion[4];
} xMPU_SETTINGS;
#endif

typedef struct tskTaskControlBlock {
	volatile StackType_t *pxTopOfStack;
#if RTK_MPU
	xMPU_SETTINGS xMPUSettings;
#endif
	ListItem_t xStateListItem;
	ListItem_t xEventListItem;
	UBaseType_t uxPriority;
	StackType_t *pxStack;
	char pcTaskName[configMAX_TASK_NAME_LEN];
#if RTK_END
	StackType_t *pxEndOfStack;
#endif
#if RTK_TRACE
	UBaseType_t uxTCBNumber;
	UBaseType_t uxTaskNumber;
#endif
	UBaseType_t uxBasePriority;
	UBaseType_t uxMutexesHeld;
	volatile uint32_t ulNotifiedValue[RTK_NOTIFY_N];
	volatile uint8_t ucNotifyState[RTK_NOTIFY_N];
	uint8_t ucStaticallyAllocated;
} tskTCB;
typedef tskTCB TCB_t;
typedef TCB_t *TaskHandle_t;

typedef struct QueueDefinition {
	int8_t *pcHead;
	int8_t *pcWriteTo;
	union {
		struct {
			int8_t *pcTail;
			int8_t *pcReadFrom;
		} xQueue;
		struct {
			TaskHandle_t xMutexHolder;
			UBaseType_t uxRecursiveCallCount;
		} xSemaphore;
	} u;
	List_t xTasksWaitingToSend;
	List_t xTasksWaitingToReceive;
	volatile UBaseType_t uxMessagesWaiting;
	UBaseType_t uxLength;
	UBaseType_t uxItemSize;
	volatile int8_t cRxLock;
	volatile int8_t cTxLock;
#if RTK_TRACE
	UBaseType_t uxQueueNumber;
	uint8_t ucQueueType;
#endif
} xQUEUE;
typedef xQUEUE Queue_t;
typedef Queue_t *QueueHandle_t;

typedef struct QUEUE_REGISTRY_ITEM {
	const char *pcQueueName;
	QueueHandle_t xHandle;
} xQueueRegistryItem;
typedef xQueueRegistryItem QueueRegistryItem_t;

/* Task states as the kernel reports them (eTaskGetState). */
typedef enum { eRunning, eReady, eBlocked, eSuspended, eDeleted, eInvalid } eTaskState;

typedef void (*TaskFunction_t)(void *);

/* Kernel globals, with FreeRTOS's names (a debugger looks for these). */
extern TCB_t *volatile pxCurrentTCB;
extern List_t pxReadyTasksLists[configMAX_PRIORITIES];
extern List_t xDelayedTaskList1, xDelayedTaskList2;
extern List_t *volatile pxDelayedTaskList, *volatile pxOverflowDelayedTaskList;
extern List_t xPendingReadyList, xSuspendedTaskList, xTasksWaitingTermination;
extern volatile UBaseType_t uxCurrentNumberOfTasks;
extern volatile TickType_t xTickCount;
extern QueueRegistryItem_t xQueueRegistry[configQUEUE_REGISTRY_SIZE];

/* Task API. */
TaskHandle_t rtk_task_create(TCB_t *tcb, TaskFunction_t fn, const char *name, StackType_t *stack,
			     uint32_t depth, void *arg, UBaseType_t prio, uint32_t stack_limit);
void rtk_kernel_init(void);
void rtk_start(void) __attribute__((noreturn));
void rtk_delay(TickType_t ticks);
void rtk_suspend_self(void);
void rtk_delete_self(void);
void rtk_yield(void);
void rtk_suspend_all(void);
eTaskState rtk_task_state(TCB_t *t);
/* Task notifications (index 0 .. RTK_NOTIFY_N-1): the notify state is 0
 * not waiting, 1 waiting, 2 received, as FreeRTOS's ucNotifyState. */
uint32_t ulTaskGenericNotifyTake(UBaseType_t index, BaseType_t clear, TickType_t wait);
#ifndef RTK_HOOK
#define RTK_HOOK 0
#endif
#if RTK_HOOK
void vApplicationStackOverflowHook(TaskHandle_t task, char *name);
#endif
void rtk_tick(void); /* the SysTick handler's work */
void vTaskSwitchContext(void);
void prvTaskExitError(void);

/* Queues, semaphores, mutexes. */
void rtk_queue_init(Queue_t *q, int8_t *storage, UBaseType_t len, UBaseType_t item, uint8_t type, const char *name);
void rtk_mutex_init(Queue_t *q, const char *name);
BaseType_t rtk_queue_send(Queue_t *q, const void *item, TickType_t wait);
BaseType_t rtk_queue_receive(Queue_t *q, void *item, TickType_t wait);
BaseType_t rtk_queue_send_from_isr(Queue_t *q, const void *item);
BaseType_t rtk_mutex_take(Queue_t *q, TickType_t wait);

/* Port layer (port.c). */
uint32_t *rtk_port_init_stack(uint32_t *top, TaskFunction_t fn, void *arg, uint32_t limit);
void rtk_port_start_first(void) __attribute__((noreturn));
void rtk_port_yield(void);
void rtk_port_pend_tick(void);
void rtk_enter_critical(void);
void rtk_exit_critical(void);

/* RTK_TZ 1 (m33): the ARM_CM33 TrustZone port's frame, xSecureContext,
 * PSPLIM, EXC_RETURN, r4-r11 (see port.c). */
#ifndef RTK_TZ
#define RTK_TZ 0
#endif

#endif
