/*
 * C++ scenarios of the sample matrix (C++ builds only): exceptions thrown
 * and caught across frames whose objects have destructors, so the image
 * holds __gxx_personality_v0 entries in .ARM.extab next to the compact
 * pr0/pr1 ones, and libgcc's EHABI unwinder runs before the crash.
 *
 * 18 cxx_dtor:  the exception is caught and the catching function returns;
 *               then a destructor crashes when its object goes out of scope.
 * 19 cxx_catch: the crash is inside the catch handler itself, right after
 *               the unwinder abandoned the calls of the throw path (see
 *               below and README.md).
 * 20 cxx_terminate: the exception leaves a noexcept function: the EHABI
 *               unwinder runs cxx_middle's cleanup pad (the frames of
 *               __cxa_throw and cxx_throw_deep are gone from then on),
 *               _Unwind_Resume continues phase 2, and the personality
 *               routine of the noexcept frame calls std::terminate from
 *               inside the EH runtime; the terminate handler faults.
 */
#include "fw.h"

/* std::set_terminate, declared here: clang finds newlib's C headers but
 * not GCC's libstdc++ ones (the matrix compiles with -isystem for newlib
 * only), and <exception> declares nothing else we need. */
namespace std {
typedef void (*terminate_handler)();
terminate_handler set_terminate(terminate_handler) noexcept;
} // namespace std

namespace {

struct CxxError {
	uint32_t code;
};

} // namespace

/* An object with a non-trivial destructor: frames holding one get a
 * cleanup landing pad. */
class Resource {
public:
	FW_NOINLINE explicit Resource(uint32_t id);
	FW_NOINLINE ~Resource();
	uint32_t id() const { return id_; }

private:
	uint32_t id_;
};

Resource::Resource(uint32_t id) : id_(id)
{
	fw_sink = id;
}

Resource::~Resource()
{
	fw_sink = id_ ^ 0xdu;
}

/* Its destructor writes through the bad pointer. */
class Journal {
public:
	FW_NOINLINE explicit Journal(uint32_t seq);
	FW_NOINLINE ~Journal();

private:
	uint32_t seq_;
};

Journal::Journal(uint32_t seq) : seq_(seq)
{
	fw_sink = seq + 2u;
}

Journal::~Journal()
{
	fw_bad_ptr[12] = seq_;
	fw_sink = seq_ + 1u;
}

extern "C" {

/* libsupc++ registers static destructors with __cxa_atexit(..., &__dso_handle);
 * crtbegin.o, which would define it, is not linked (-nostartfiles). */
void *__dso_handle = nullptr;

/*
 * The throw path: cxx_try_catch (a Resource inside the try: its cleanup and
 * the handler are in the same frame) -> cxx_middle (a Resource: a cleanup
 * landing pad, then _Unwind_Resume) -> cxx_throw_deep (throws).
 *
 * The EHABI unwinder leaves for the landing pads with a non-local jump
 * (restore_core_regs), so the calls of the throw path (__cxa_throw,
 * _Unwind_RaiseException, unwind_phase2, ... and _Unwind_Resume's) never
 * return. The emulator's shadow stack drops such calls by their SP
 * (emu/uc/tracker.c, fl_prune): a call made below the SP the landing pad
 * runs at, or at it from the landing pad's own function. See README.md.
 */
FW_NOINLINE void cxx_throw_deep(uint32_t v)
{
	if (fw_inputs[v & 7] != 0)
		throw CxxError{v * 3u};
	fw_sink = v;
}

FW_NOINLINE uint32_t cxx_middle(uint32_t v)
{
	Resource r(v + 1u);
	cxx_throw_deep(v * 2u);
	return r.id() + 4u;
}

FW_NOINLINE uint32_t cxx_try_catch(uint32_t v)
{
	try {
		Resource r(v + 2u);
		return cxx_middle(v) + r.id();
	} catch (const CxxError &e) {
		return e.code + 1u;
	}
}

FW_NOINLINE void scenario_cxx_dtor(void)
{
	Journal j(fw_inputs[3]);
	fw_sink = cxx_try_catch(fw_inputs[2]);
} /* ~Journal() faults here */

FW_NOINLINE uint32_t cxx_catch_crash(uint32_t v)
{
	try {
		Resource r(v);
		return cxx_middle(v + 5u);
	} catch (const CxxError &e) {
		fw_bad_ptr[13] = e.code; /* faults inside the handler */
		return e.code;
	}
}

FW_NOINLINE void scenario_cxx_catch(void)
{
	fw_sink = cxx_catch_crash(fw_inputs[4]);
}

/*
 * 20 cxx_terminate. Truth at the fault: fw_terminate_handler <
 * __cxxabiv1::__terminate < __cxa_call_terminate < __gxx_personality_v0 <
 * the EHABI unwinder's phase 2 < _Unwind_Resume < cxx_middle (its cleanup
 * pad) < cxx_nothrow < scenario_cxx_terminate: no frame between
 * _Unwind_Resume's caller and the throw is left on the stack.
 */
FW_NOINLINE void fw_terminate_handler(void)
{
	fw_bad_ptr[14] = fw_inputs[6];
	for (;;)
		__asm volatile("" ::: "memory");
}

FW_NOINLINE uint32_t cxx_nothrow(uint32_t v) noexcept
{
	return cxx_middle(v + 7u) + 1u;
}

FW_NOINLINE void scenario_cxx_terminate(void)
{
	std::set_terminate(fw_terminate_handler);
	fw_sink = cxx_nothrow(fw_inputs[5]);
}

} // extern "C"
