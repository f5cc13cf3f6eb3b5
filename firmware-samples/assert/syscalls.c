/*
 * newlib system calls of the message sample, kept apart from the other samples'
 * on purpose: _exit traps with UDF so that abort() ends in a HardFault the oracle
 * catches; output is discarded; _sbrk hands out a small static heap (stdio may).
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "../src/fw.h"

#undef errno
extern int errno;

static char heap[1024] __attribute__((aligned(8)));
static size_t heap_used;

void *_sbrk(ptrdiff_t incr)
{
	if (incr < 0 || (size_t)incr > sizeof heap - heap_used) {
		errno = ENOMEM;
		return (void *)-1;
	}
	void *prev = heap + heap_used;
	heap_used += (size_t)incr;
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

int _lseek(int fd, int off, int whence)
{
	(void)fd;
	(void)off;
	(void)whence;
	return 0;
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
__attribute__((noreturn)) void _exit(int status)
{
	(void)status;
	for (;;)
		__asm volatile("udf #0x21" ::: "memory");
}
