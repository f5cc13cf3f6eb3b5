/*
 * The newlib system calls the test firmware needs (malloc's _sbrk, and the
 * stubs abort() and the stdio that libstdc++'s verbose terminate handler
 * reach). Output is discarded; _exit stops at a breakpoint.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/stat.h>

#undef errno
extern int errno;
extern char end[], _heap_limit[];

static char *heap_top;

void *_sbrk(ptrdiff_t incr)
{
	if (heap_top == NULL)
		heap_top = end;
	if (incr > _heap_limit - heap_top) {
		errno = ENOMEM;
		return (void *)-1;
	}
	char *prev = heap_top;
	heap_top += incr;
	return prev;
}

int _write(int fd, const char *buf, int len) { (void)fd; (void)buf; return len; }
int _read(int fd, char *buf, int len) { (void)fd; (void)buf; (void)len; return 0; }
int _close(int fd) { (void)fd; return -1; }
int _fstat(int fd, struct stat *st) { (void)fd; st->st_mode = S_IFCHR; return 0; }
int _isatty(int fd) { (void)fd; return 1; }
int _lseek(int fd, int off, int whence) { (void)fd; (void)off; (void)whence; return 0; }
int _getpid(void) { return 1; }
int _kill(int pid, int sig) { (void)pid; (void)sig; errno = EINVAL; return -1; }

void _exit(int code)
{
	(void)code;
	for (;;)
		__asm__ volatile("bkpt #4");
}

/* libstdc++ registers static destructors with __cxa_atexit(..., &__dso_handle);
 * crtbegin.o, which would define it, is not linked (-nostartfiles). */
void *__dso_handle = NULL;
