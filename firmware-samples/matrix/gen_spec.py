#!/usr/bin/env python3
"""Write the sample matrix spec (faultline.matrixspec/1) to stdout.

Usage: python3 gen_spec.py BUILD... > matrix.json   (what `make spec` runs)

The builds come from the Makefile's BUILDS (names
<compiler>-<core>-<opt>[-<variant>...]); their features follow from the core
and the language. The scenarios are listed below; a case is (build,
scenario) for every build whose features include all of the scenario's
requires. The output is deterministic: `make check` regenerates it and
compares.
"""
import json
import sys

# core -> (emulator CPU, features). Feature names (README.md, "Features"):
#   v6m/v7m/v8m  architecture profile (ARMv6-M, ARMv7-M/v7E-M, ARMv8-M Mainline)
#   fsr          the configurable-fault status registers exist (CFSR, HFSR...):
#                faults escalate with HFSR.FORCED and name their cause bits
#   div          hardware SDIV/UDIV and CCR.DIV_0_TRP
#   mpu          an MPU that the emulator models (PMSAv7 or PMSAv8)
#   fpu          a single-precision FPU in use (hard-float ABI, lazy stacking)
#   newlib       linked against newlib (qsort, memcpy, assert/abort): all builds
#   c / cxx      the language of the build
CORES = {
    "m0plus": ("cortex-m0plus", ["v6m", "newlib"]),
    "m3": ("cortex-m3", ["v7m", "fsr", "div", "mpu", "newlib"]),
    "m4f": ("cortex-m4", ["v7m", "fsr", "div", "mpu", "fpu", "newlib"]),
    "m7": ("cortex-m7", ["v7m", "fsr", "div", "mpu", "fpu", "newlib"]),
    "m33": ("cortex-m33", ["v8m", "fsr", "div", "mpu", "fpu", "newlib"]),
}
VARIANTS = ["fp", "unwind", "strip"]

BUS = ["CFSR.PRECISERR", "CFSR.BFARVALID", "HFSR.FORCED"]

# (name, number, description, requires, expect causes, expect function,
#  extra trigger fields, has an ARMv6-M twin)
SCENARIOS = [
    ("deep_chain", 1,
     "store to unmapped memory at the end of a 6-call chain with 320 B, 2060 B, 4096 B and "
     "5000 B frames (sub sp,#imm; subw; sub.w; on ARMv6-M add sp, rN after a literal load)",
     [], BUS, "deep_store", {}, True),
    ("callee_saved", 2,
     "store to unmapped memory in a leaf whose caller keeps ten values live (r4-r11 saved)",
     [], BUS, "cs_leaf", {}, True),
    ("vpush", 3,
     "store to unmapped memory while the caller's caller keeps floats live in s16+ (vpush)",
     ["fpu"], BUS, "vp_store", {}, False),
    ("recursion", 4,
     "store to unmapped memory at the bottom of a 25-level recursion",
     [], BUS, "rec_bottom", {}, True),
    ("tail_call", 5,
     "store to unmapped memory in a function reached by a sibling call (b/b.w when optimised)",
     [], BUS, "tc_leaf", {}, True),
    ("noreturn", 6,
     "store to unmapped memory in a noreturn function called as the last instruction of its caller",
     [], BUS, "nr_fatal", {}, True),
    ("fnptr", 7,
     "store to unmapped memory in a handler reached through two function pointers",
     [], BUS, "fn_on_error", {}, True),
    ("qsort_cb", 8,
     "newlib's qsort calls a comparator that loads through a corrupt record pointer",
     ["newlib"], BUS, "qs_compare", {}, True),
    ("memcpy_bad", 9,
     "newlib's memcpy faults reading from an unmapped source",
     ["newlib"], BUS, "memcpy", {}, True),
    ("alloca_vla", 10,
     "store to unmapped memory called from a VLA frame called from an alloca frame",
     [], BUS, "av_consume", {}, True),
    ("irq_nested", 11,
     "an interrupt pended through NVIC_ISPR, taken four calls deep, faults two calls into its ISR",
     [], BUS, "irqn_touch", {}, True),
    ("psp_thread", 12,
     "a thread on the process stack (CONTROL.SPSEL=1) faults three calls deep",
     [], BUS, "psp_store", {}, True),
    ("lazy_fp", 13,
     "an interrupt taken with the FP context active (extended frame, lazy stacking) faults in its ISR",
     ["fpu"], BUS, "lz_touch", {}, False),
    ("stack_guard", 14,
     "a stack overflow: a buffer reaching below the stack is filled upwards into the MPU guard region",
     ["mpu"], ["CFSR.DACCVIOL", "CFSR.MMARVALID", "HFSR.FORCED"], "sg_hog", {}, False),
    ("imprecise", 15,
     "a buffered store to unmapped memory: imprecise bus fault taken after the store (--imprecise-stores)",
     [], ["CFSR.IMPRECISERR", "HFSR.FORCED"], "imp_post", {"imprecise_stores": True}, False),
    ("assert_abort", 16,
     "assert() fails: __assert_func, abort, raise, then _exit executes UDF",
     ["newlib"], ["CFSR.UNDEFINSTR", "HFSR.FORCED"], "_exit", {}, True),
    ("div0", 17,
     "UDIV by zero with CCR.DIV_0_TRP set",
     ["div"], ["CFSR.DIVBYZERO", "HFSR.FORCED"], "dv_ratio", {}, False),
    ("cxx_dtor", 18,
     "a C++ exception thrown and caught across three frames with destructors, then a destructor "
     "stores to unmapped memory",
     ["cxx"], BUS, "_ZN7JournalD1Ev", {}, True),
    ("cxx_catch", 19,
     "a C++ exception thrown two frames down (through a cleanup pad and _Unwind_Resume) is "
     "caught, and the catch handler stores to unmapped memory",
     ["cxx"], BUS, "cxx_catch_crash", {}, True),
    ("cxx_terminate", 20,
     "a C++ exception thrown through a noexcept function: the EHABI unwinder runs a cleanup pad "
     "(the thrower's frames are gone), resumes, and the personality routine calls std::terminate, "
     "whose handler stores to unmapped memory",
     ["cxx"], BUS, "fw_terminate_handler", {}, True),
]


# Our RTOS test kernels, one crash per build and no trigger: a
# FreeRTOS-lookalike (../rtos-freertos: 13 tasks in every state, BusFault 4
# calls deep in task "net") and a Zephyr-lookalike (../rtos-zephyr: 8
# threads, MemManage in thread "net_rx"). Their cases also score every
# thread's backtrace against the emulator's shadow stack of that thread
# (truth.threads). The names are those of `make -C ../rtos-freertos list`
# and `make -C ../rtos-zephyr list`; each build's own Makefile checks it.
RTOS_KERNELS = {
    "freertos": ("../rtos-freertos/build", [
        "gcc-m3-O0", "gcc-m3-O2", "clang-m3-Os", "clang-m3-O2", "gcc-m4f-Og", "gcc-m4f-O2",
        "clang-m4f-O0", "clang-m4f-O2", "gcc-m33-O2", "clang-m33-Os", "gcc-m0-O2", "clang-m0-Os",
        "gcc-m3-Os-nomini", "gcc-m4f-O2-mpu", "gcc-m3-O2-strip"]),
    "zephyr": ("../rtos-zephyr/build", [
        "gcc-m3-O2", "gcc-m4f-O2", "gcc-m3-O0", "clang-m3-O2", "clang-m4f-O2", "clang-m4f-Os"]),
}
RTOS_CORES = {
    "m0": ("cortex-m0", ["v6m"]),
    "m3": ("cortex-m3", ["v7m", "fsr", "div", "mpu"]),
    "m4f": ("cortex-m4", ["v7m", "fsr", "div", "mpu", "fpu"]),
    "m33": ("cortex-m33", ["v8m", "fsr", "div", "mpu", "fpu"]),
}
# (name, kernel, description, requires, causes, function)
RTOS_SCENARIOS = [
    ("freertos_crash", "freertos",
     "FreeRTOS-lookalike kernel: task net stores to unmapped memory 4 calls deep with the scheduler "
     "suspended; every other task is switched out in its own state (threads scored too)",
     ["fsr"], BUS, "net_store"),
    ("freertos_crash_v6m", "freertos",
     "FreeRTOS-lookalike kernel on ARMv6-M: task net stores to unmapped memory 4 calls deep "
     "(HardFault, no fault status registers; threads scored too)",
     ["v6m"], [], "net_store"),
    ("zephyr_crash", "zephyr",
     "Zephyr-lookalike kernel: thread net_rx stores through a NULL pointer into the MPU guard "
     "(threads scored too)",
     ["fsr"], ["CFSR.DACCVIOL", "CFSR.MMARVALID", "HFSR.FORCED"], "store_len"),
]


def rtos_build_entry(kernel, name):
    where, _ = RTOS_KERNELS[kernel]
    parts = name.split("-")
    compiler, core, opt, variants = parts[0], parts[1], parts[2], parts[3:]
    cpu, features = RTOS_CORES[core]
    return {
        "name": f"{kernel}-{name}",
        "elf": f"{where}/{name}.elf",
        "cpu": cpu,
        "compiler": compiler,
        "core": core,
        "opt": opt,
        "lang": "c",
        "variants": variants,
        "features": features + ["rtos-" + kernel, "c"],
    }


def build_entry(name):
    parts = name.split("-")
    compiler, core, opt, variants = parts[0], parts[1], parts[2], parts[3:]
    cpu, features = CORES[core]
    lang = "cxx" if "cxx" in variants else "c"
    for v in variants:
        if v != "cxx" and v not in VARIANTS:
            sys.exit(f"gen_spec.py: {name}: unknown variant {v}")
    return {
        "name": name,
        "elf": f"build/{name}.elf",
        "cpu": cpu,
        "compiler": compiler,
        "core": core,
        "opt": opt,
        "lang": lang,
        "variants": [v for v in VARIANTS if v in variants],
        "features": features + [lang],
    }


def scenario_entries():
    out = []
    for name, num, desc, req, causes, fn, extra, twin in SCENARIOS:
        # The sample scenarios (crash_scenario=N) run on the sample builds,
        # all linked against newlib; the RTOS kernels are not.
        req = req + ["newlib"]
        trigger = {"set": [f"crash_scenario={num}"]}
        trigger.update(extra)
        out.append({
            "name": name,
            "description": desc,
            "requires": sorted(set(req + ["fsr"])),
            "trigger": trigger,
            "expect": {"exception": "HardFault", "causes": causes, "function": fn},
        })
        if twin:
            # ARMv6-M: every fault is a HardFault and there is no CFSR/HFSR,
            # so no cause bit can be required.
            out.append({
                "name": name + "_v6m",
                "description": desc + " (ARMv6-M: HardFault, no fault status registers)",
                "requires": sorted(set(req + ["v6m"])),
                "trigger": dict(trigger),
                "expect": {"exception": "HardFault", "causes": [], "function": fn},
            })
    for name, kernel, desc, req, causes, fn in RTOS_SCENARIOS:
        out.append({
            "name": name,
            "description": desc,
            "requires": sorted(set(req + ["rtos-" + kernel])),
            "trigger": {},
            "expect": {"exception": "HardFault", "causes": causes, "function": fn},
        })
    return out


def main():
    builds = [build_entry(b) for b in sys.argv[1:]]
    for kernel, (_, names) in RTOS_KERNELS.items():
        builds += [rtos_build_entry(kernel, b) for b in names]
    spec = {
        "schema": "faultline.matrixspec/1",
        "builds": builds,
        "scenarios": scenario_entries(),
    }
    json.dump(spec, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
