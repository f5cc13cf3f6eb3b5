/*
 * The newlib system-call layer of the C++ corpus (instead of libnosys,
 * whose stubs warn at link time). Output is discarded; the heap grows from
 * the end of .bss up to the main stack; _exit traps with UDF so that
 * abort() (std::terminate) ends in a HardFault.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "fw.h"

#undef errno
extern int errno;

extern char end[];          /* first byte after .bss (linker script) */
extern char _heap_limit[];  /* bottom of the main stack */

static char *heap_top;

void *_sbrk(ptrdiff_t incr)
{
	if (heap_top == 0)
		heap_top = end;
	if (incr > _heap_limit - heap_top) {
		errno = ENOMEM;
		return (void *)-1;
	}
	char *prev = heap_top;
	heap_top += incr;
	return prev;
}

int _write(int fd, const char *buf, int len)
{
	(void)fd;
	(void)buf;
	return len;
}

int _read(int fd, char *buf, int len)
{
	(void)fd;
	(void)buf;
	(void)len;
	return 0;
}

int _close(int fd)
{
	(void)fd;
	return -1;
}

int _fstat(int fd, struct stat *st)
{
	(void)fd;
	st->st_mode = S_IFCHR;
	return 0;
}

int _isatty(int fd)
{
	(void)fd;
	return 1;
}

int _lseek(int fd, int off, int whence)
{
	(void)fd;
	(void)off;
	(void)whence;
	return 0;
}

int _getpid(void)
{
	return 1;
}

/* raise(SIGABRT) with the default action lands here; returning lets
 * abort() go on to _exit. */
int _kill(int pid, int sig)
{
	(void)pid;
	(void)sig;
	errno = EINVAL;
	return -1;
}

/* A permanently undefined instruction: UsageFault UNDEFINSTR, escalated to
 * HardFault. */
FW_NOINLINE __attribute__((noreturn)) void _exit(int status)
{
	fw_sink = (uint32_t)status;
	for (;;)
		__asm volatile("udf #0x21" ::: "memory");
}
