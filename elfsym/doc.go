// Package elfsym loads ELF32 little-endian ARM executables (the firmware
// images of Cortex-M devices) and answers the questions a crash decoder asks
// about them: which bytes the flash holds, which function contains an
// address, whether an address is Thumb code, ARM code or data, and which
// source line and inline chain an instruction belongs to.
//
// The formats it implements:
//
//   - ELF: the System V gABI (file header, section and program headers,
//     symbol table) restricted to ELFCLASS32, ELFDATA2LSB and EM_ARM.
//   - "ELF for the Arm Architecture" (IHI 0044), section 5.5.5 (mapping
//     symbols $a, $t, $d), 5.5.3 (the Thumb bit of STT_FUNC values) and
//     5.3.6 (the .ARM.attributes build attributes, IHI 0045).
//   - "Exception Handling ABI for the Arm Architecture" (IHI 0038), section
//     5 (the .ARM.exidx index table), for Info's coverage report.
//   - DWARF 2 to 5 line number programs (DWARF 5 section 6.2) decoded by this
//     package, and the debugging information entries of section 3.3.8
//     (DW_TAG_subprogram, DW_TAG_inlined_subroutine, DW_AT_call_file,
//     DW_AT_call_line), read by a fast decoder of this package (die.go)
//     that hands any unit it does not read exactly as debug/dwarf does
//     over to debug/dwarf.
//
// Open builds the symbol, section and compilation-unit indexes once; the
// line table and function tree of a compilation unit are decoded the first
// time an address inside it is symbolized and cached after that, so opening
// a large ELF is cheap and every lookup is a binary search. A File is safe
// for concurrent use.
//
// Symbolize follows the conventions of GNU addr2line -f -i (binutils 2.40)
// so that WriteAddr2Line reproduces its output, with one deliberate
// difference: debugging information of functions that the linker removed
// with --gc-sections is relocated to address 0 (and by ld.lld to a tombstone
// address); it is ignored unless a function symbol really starts at 0
// (cortex-m.md section 6.4), where addr2line would name the removed function.
package elfsym
