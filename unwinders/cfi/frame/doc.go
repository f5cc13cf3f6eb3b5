// Package frame decodes DWARF call frame information (.debug_frame and
// .eh_frame) for 32-bit ARM and evaluates it into rule tables: for an
// address, the rule that computes the canonical frame address (CFA) and a
// rule per register saying where the caller's value of that register is.
//
// It is faultline's equivalent of delve's pkg/dwarf/frame: one package per
// DWARF concern, the table row as a value (Row) holding one Rule per
// register column. The unwinding strategy that applies the rules to a
// crashed device's registers and memory is the parent package, cfi.
//
// The package has three layers:
//
//   - Parse decodes a section into its CIEs and FDEs: the 32-bit and 64-bit
//     DWARF formats, CIE versions 1, 3 and 4, the augmentation strings "",
//     "z" with 'R', 'L', 'P', 'S' (and the flag letters 'B', 'G'), and the
//     DW_EH_PE pointer encodings .eh_frame uses (absptr, pcrel, aligned;
//     textrel, datarel and funcrel bases are unknown to a static reader and
//     are rejected). An entry that cannot be decoded is reported and
//     skipped; the others stay usable.
//   - Index sorts the FDEs of a section once for binary search by address.
//     It leaves out the FDEs of code that ld --gc-sections removed: their
//     initial location is relocated to 0 (or to an ld.lld tombstone), where
//     they would shadow the real code at low flash addresses
//     (cortex-m.md 6.4).
//   - FDE.Rows and FDE.RowAt run the call frame instructions (DWARF 5
//     section 6.4.2) of the CIE and the FDE: every instruction GCC and
//     clang emit for ARM, plus the GNU extensions DW_CFA_GNU_args_size and
//     DW_CFA_GNU_negative_offset_extended. DWARF expressions
//     (DW_CFA_def_cfa_expression, DW_CFA_expression,
//     DW_CFA_val_expression) are decoded into rules of their own kind so
//     the table is complete, but this package never evaluates them: a
//     consumer that needs one gets ErrUnsupported rather than a misread
//     value.
//
// Register columns follow the ARM DWARF register numbering (AADWARF32,
// "DWARF for the Arm Architecture", section 4.1): r0-r15 are 0-15, the
// legacy single-precision registers s0-s31 are 64-95 and the VFP/Neon
// double registers d0-d31 are 256-287. A rule for any other register number
// is rejected with ErrUnsupported.
//
// Everything decoded here comes from firmware images that may be corrupt or
// hostile. Every loop is bounded by the size of the section or of the
// instruction stream, the remember_state stack by MaxRememberDepth, and
// locations by the 32-bit address space; malformed input yields an error
// (a *DecodeError saying which section, which offset and what was
// expected), never a panic or a hang.
//
// References: DWARF Debugging Information Format version 5, section 6.4
// (call frame information) and 7.24; version 2 section 6.4 and version 3
// section 6.4 for CIE versions 1 and 3; Linux Standard Base Core
// Specification 5.0, sections 10.5-10.6 (.eh_frame, augmentations and
// DW_EH_PE pointer encodings); "DWARF for the Arm Architecture" (IHI 0040)
// for the register numbers.
package frame
