/*
 * faultline_allocrec_cxx: C++ operator new for the allocation recorder
 * (faultline_allocrec.c). Link with
 *     -Wl,--wrap=_Znwj -Wl,--wrap=_Znaj
 *     -Wl,--wrap=_ZnwjRKSt9nothrow_t -Wl,--wrap=_ZnajRKSt9nothrow_t
 * (32-bit targets: size_t is unsigned int, "j") besides the malloc family.
 *
 * The library's operator new calls malloc, which the recorder's malloc
 * wrapper records with ret[0] inside operator new: useless for finding
 * who allocated. These wrappers call the real operator new and then give
 * that entry the return addresses of new's caller (fl_allocrec_retag),
 * collected the same way as for malloc (SP and LR at the call, then the
 * bounded stack scan). delete needs no wrapper: it calls free, which the
 * recorder sees.
 *
 * Exceptions: when the real operator new throws (std::bad_alloc), nothing
 * was recorded and the exception passes through fl_allocrec_new, which is
 * compiled as C++ with your flags (so it has unwind tables when your build
 * uses exceptions). Not covered: the align_val_t forms (they allocate with
 * aligned_alloc/memalign, which the recorder does not wrap).
 */
#include <cstddef>
#include <new>

#include "faultline_allocrec.h"

extern "C" {
void *__real__Znwj(std::size_t n);
void *__real__Znaj(std::size_t n);
void *__real__ZnwjRKSt9nothrow_t(std::size_t n, const std::nothrow_t &nt) noexcept;
void *__real__ZnajRKSt9nothrow_t(std::size_t n, const std::nothrow_t &nt) noexcept;

void *fl_allocrec_new(std::size_t n, uint32_t sp, uint32_t lr);
void *fl_allocrec_new_array(std::size_t n, uint32_t sp, uint32_t lr);
void *fl_allocrec_new_nothrow(std::size_t n, const std::nothrow_t &nt, uint32_t sp, uint32_t lr) noexcept;
void *fl_allocrec_new_array_nothrow(std::size_t n, const std::nothrow_t &nt, uint32_t sp, uint32_t lr) noexcept;
}

/* As in faultline_allocrec.c: SP and LR at the call into the next free
 * argument registers, then a tail branch to the C++ part. */
__asm__(
	"	.syntax unified\n"
	"	.thumb\n"
	"	.section .text.__wrap__Znwj,\"ax\",%progbits\n"
	"	.global __wrap__Znwj\n"
	"	.type __wrap__Znwj, %function\n"
	"	.thumb_func\n"
	"__wrap__Znwj:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_new\n"
	"	.size __wrap__Znwj, . - __wrap__Znwj\n"
	"	.section .text.__wrap__Znaj,\"ax\",%progbits\n"
	"	.global __wrap__Znaj\n"
	"	.type __wrap__Znaj, %function\n"
	"	.thumb_func\n"
	"__wrap__Znaj:\n"
	"	mov r1, sp\n"
	"	mov r2, lr\n"
	"	b.w fl_allocrec_new_array\n"
	"	.size __wrap__Znaj, . - __wrap__Znaj\n"
	"	.section .text.__wrap__ZnwjRKSt9nothrow_t,\"ax\",%progbits\n"
	"	.global __wrap__ZnwjRKSt9nothrow_t\n"
	"	.type __wrap__ZnwjRKSt9nothrow_t, %function\n"
	"	.thumb_func\n"
	"__wrap__ZnwjRKSt9nothrow_t:\n"
	"	mov r2, sp\n"
	"	mov r3, lr\n"
	"	b.w fl_allocrec_new_nothrow\n"
	"	.size __wrap__ZnwjRKSt9nothrow_t, . - __wrap__ZnwjRKSt9nothrow_t\n"
	"	.section .text.__wrap__ZnajRKSt9nothrow_t,\"ax\",%progbits\n"
	"	.global __wrap__ZnajRKSt9nothrow_t\n"
	"	.type __wrap__ZnajRKSt9nothrow_t, %function\n"
	"	.thumb_func\n"
	"__wrap__ZnajRKSt9nothrow_t:\n"
	"	mov r2, sp\n"
	"	mov r3, lr\n"
	"	b.w fl_allocrec_new_array_nothrow\n"
	"	.size __wrap__ZnajRKSt9nothrow_t, . - __wrap__ZnajRKSt9nothrow_t\n"
	"	.text\n");

void *fl_allocrec_new(std::size_t n, uint32_t sp, uint32_t lr)
{
	void *p = __real__Znwj(n);
	fl_allocrec_retag(p, static_cast<uint32_t>(n), sp, lr);
	return p;
}

void *fl_allocrec_new_array(std::size_t n, uint32_t sp, uint32_t lr)
{
	void *p = __real__Znaj(n);
	fl_allocrec_retag(p, static_cast<uint32_t>(n), sp, lr);
	return p;
}

void *fl_allocrec_new_nothrow(std::size_t n, const std::nothrow_t &nt, uint32_t sp, uint32_t lr) noexcept
{
	void *p = __real__ZnwjRKSt9nothrow_t(n, nt);
	if (p != nullptr)
		fl_allocrec_retag(p, static_cast<uint32_t>(n), sp, lr);
	return p;
}

void *fl_allocrec_new_array_nothrow(std::size_t n, const std::nothrow_t &nt, uint32_t sp, uint32_t lr) noexcept
{
	void *p = __real__ZnajRKSt9nothrow_t(n, nt);
	if (p != nullptr)
		fl_allocrec_retag(p, static_cast<uint32_t>(n), sp, lr);
	return p;
}
