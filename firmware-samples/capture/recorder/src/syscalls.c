/*
 * The newlib system calls the sample needs: _sbrk grows the heap from the
 * end of .bss up to the main stack; the rest do nothing.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fw.h"

#undef errno
extern int errno;

extern char end[];         /* first byte after .bss (linker script) */
extern char _heap_limit[]; /* bottom of the main stack */

static char *brk_now;

void *_sbrk(ptrdiff_t incr)
{
	if (brk_now == 0)
		brk_now = end;
	if (incr > _heap_limit - brk_now) {
		errno = ENOMEM;
		return (void *)-1;
	}
	char *prev = brk_now;
	brk_now += incr;
	return prev;
}

void _exit(int status)
{
	fw_exit(status);
}

int _kill(int pid, int sig)
{
	(void)pid;
	(void)sig;
	return -1;
}

int _getpid(void)
{
	return 1;
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
