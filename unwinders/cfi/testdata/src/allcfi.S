@ Hand-written call frame information covering every CFA instruction kind
@ the cfi package decodes. Assembled twice: with -DDEBUG_FRAME the CFI goes
@ to .debug_frame (as GCC emits it for ARM), without it to .eh_frame (the
@ GNU as default: augmentation "zR", pc-relative FDE addresses, plus "zPLR"
@ for the function with a personality routine and "zRS" for the signal
@ frame). The code is real Thumb-2 code whose CFI matches what it does, so
@ the step tests can run it against a synthetic stack.
	.syntax unified
	.cpu cortex-m4
	.fpu fpv4-sp-d16
	.thumb
#ifdef DEBUG_FRAME
	.cfi_sections .debug_frame
#endif

	.section .vectors, "a"
	.word 0x20010000
	.word reset + 1

	.text

@ push_frame: push {r4, r5, r7, lr}; add r7, sp, #8 (frame pointer);
@ a remember/restore pair around a mid-function epilogue; restore forms.
	.global push_frame
	.type push_frame, %function
	.thumb_func
push_frame:
	.cfi_startproc
	push	{r4, r5, r7, lr}
	.cfi_def_cfa_offset 16
	.cfi_offset r4, -16
	.cfi_offset r5, -12
	.cfi_offset r7, -8
	.cfi_offset lr, -4
	add	r7, sp, #8
	.cfi_def_cfa r7, 8
	sub	sp, sp, #8
	cmp	r0, #0
	bne	1f
	.cfi_remember_state
	mov	sp, r7
	.cfi_def_cfa sp, 8
	pop	{r7, lr}
	.cfi_restore r7
	.cfi_restore lr
	.cfi_adjust_cfa_offset -8
	pop	{r4, r5}
	.cfi_restore r4
	.cfi_restore r5
	.cfi_def_cfa_offset 0
	bx	lr
1:
	.cfi_restore_state
	bl	leaf
	mov	sp, r7
	.cfi_def_cfa_register sp
	pop	{r4, r5, r7, pc}
	.cfi_endproc
	.size push_frame, .-push_frame

@ leaf: no CFI instruction at all (only the CIE's initial row).
	.global leaf
	.type leaf, %function
	.thumb_func
leaf:
	.cfi_startproc
	adds	r0, r0, #1
	bx	lr
	.cfi_endproc
	.size leaf, .-leaf

@ regmoves: LR kept in r12 (.cfi_register), r4 same value, r5 undefined,
@ r6 at CFA-8 through .cfi_rel_offset, nested remember/restore.
	.global regmoves
	.type regmoves, %function
	.thumb_func
regmoves:
	.cfi_startproc
	mov	r12, lr
	.cfi_register lr, r12
	.cfi_same_value r4
	.cfi_undefined r5
	push	{r6, r7}
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r6, 0
	.cfi_rel_offset r7, 4
	.cfi_remember_state
	nop
	.cfi_remember_state
	.cfi_undefined r6
	nop
	.cfi_restore_state
	nop
	.cfi_restore_state
	pop	{r6, r7}
	.cfi_adjust_cfa_offset -8
	.cfi_restore r6
	.cfi_restore r7
	bx	r12
	.cfi_endproc
	.size regmoves, .-regmoves

@ vfp: callee-saved VFP registers in both DWARF numberings (d8 = 264 as
@ GCC writes it, s18/s19 = 82/83 as clang does), offset_extended and
@ restore_extended.
	.global vfp
	.type vfp, %function
	.thumb_func
vfp:
	.cfi_startproc
	push	{r4, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset r4, -8
	.cfi_offset lr, -4
	vpush	{d8, d9}
	.cfi_def_cfa_offset 24
	.cfi_offset d8, -24
	.cfi_escape 0x05, 0x52, 0x04	@ DW_CFA_offset_extended s18, 4*-4 ... factored: 4 x df(-4) = -16
	.cfi_escape 0x05, 0x53, 0x03	@ DW_CFA_offset_extended s19, 3 x -4 = -12
	vmov	s16, r0
	bl	leaf
	vpop	{d8, d9}
	.cfi_restore d8
	.cfi_restore s18
	.cfi_restore s19
	.cfi_def_cfa_offset 8
	pop	{r4, pc}
	.cfi_endproc
	.size vfp, .-vfp

@ valoff: DW_CFA_val_offset, the _sf forms, GNU_args_size and
@ GNU_negative_offset_extended through .cfi_escape.
	.global valoff
	.type valoff, %function
	.thumb_func
valoff:
	.cfi_startproc
	push	{r4, r5, r6, lr}
	.cfi_escape 0x13, 0x7c		@ DW_CFA_def_cfa_offset_sf -4 x -4 = 16
	.cfi_escape 0x11, 0x0e, 0x01	@ DW_CFA_offset_extended_sf lr, 1 x -4 = -4
	.cfi_offset r4, -16
	.cfi_escape 0x2f, 0x0a, 0x02	@ DW_CFA_GNU_negative_offset_extended r10, -(2 x -4) = +8 (table only)
	.cfi_val_offset r8, -16
	.cfi_escape 0x15, 0x09, 0x7d	@ DW_CFA_val_offset_sf r9, -3 x -4 = +12
	mov	r6, sp
	.cfi_escape 0x12, 0x06, 0x7c	@ DW_CFA_def_cfa_sf r6, -4 x -4 = 16
	.cfi_escape 0x2e, 0x08		@ DW_CFA_GNU_args_size 8
	.cfi_offset r5, -12
	.cfi_offset r6, -8
	nop
	mov	sp, r6
	.cfi_def_cfa sp, 16
	pop	{r4, r5, r6, pc}
	.cfi_endproc
	.size valoff, .-valoff

@ exprs: DWARF expressions, which the cfi package decodes but refuses to
@ evaluate: DW_CFA_expression r4 = [sp+0], DW_CFA_val_expression r5 =
@ sp+4, and finally DW_CFA_def_cfa_expression sp+8.
	.global exprs
	.type exprs, %function
	.thumb_func
exprs:
	.cfi_startproc
	push	{r4, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset lr, -4
	.cfi_escape 0x10, 0x04, 0x02, 0x7d, 0x00	@ DW_CFA_expression r4, {DW_OP_breg13 0}
	nop
	.cfi_escape 0x16, 0x05, 0x02, 0x7d, 0x04	@ DW_CFA_val_expression r5, {DW_OP_breg13 4}
	nop
	.cfi_escape 0x0f, 0x02, 0x7d, 0x08		@ DW_CFA_def_cfa_expression {DW_OP_breg13 8}
	nop
	pop	{r4, pc}
	.cfi_endproc
	.size exprs, .-exprs

@ farloc: gaps of 200 and 600 bytes between CFI changes: DW_CFA_advance_loc1
@ and DW_CFA_advance_loc2 (the code alignment factor is 2).
	.global farloc
	.type farloc, %function
	.thumb_func
farloc:
	.cfi_startproc
	push	{r7, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset r7, -8
	.cfi_offset lr, -4
	.rept 100
	nop
	.endr
	sub	sp, sp, #8
	.cfi_def_cfa_offset 16
	.rept 300
	nop
	.endr
	add	sp, sp, #8
	.cfi_def_cfa_offset 8
	pop	{r7, pc}
	.cfi_endproc
	.size farloc, .-farloc

@ retcol: a CIE whose return address column is r12, not lr
@ (.cfi_return_column makes GNU as emit a second CIE).
	.global retcol
	.type retcol, %function
	.thumb_func
retcol:
	.cfi_startproc
	.cfi_return_column r12
	mov	r12, lr
	.cfi_register r12, r14
	push	{r4, r12}
	.cfi_def_cfa_offset 8
	.cfi_offset r4, -8
	.cfi_offset r12, -4
	pop	{r4, r12}
	.cfi_def_cfa_offset 0
	.cfi_restore r4
	.cfi_register r12, r14
	bx	r12
	.cfi_endproc
	.size retcol, .-retcol

#ifndef DEBUG_FRAME
@ withpers: a personality routine and an LSDA ("zPLR"), and sigframe: a
@ signal frame ("zRS"); both only in the .eh_frame build.
	.global withpers
	.type withpers, %function
	.thumb_func
withpers:
	.cfi_startproc
	.cfi_personality 0x1b, pers
	.cfi_lsda 0x1b, lsda
	push	{r7, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset r7, -8
	.cfi_offset lr, -4
	pop	{r7, pc}
	.cfi_endproc
	.size withpers, .-withpers

	.global sigframe
	.type sigframe, %function
	.thumb_func
sigframe:
	.cfi_startproc
	.cfi_signal_frame
	push	{r4, lr}
	.cfi_def_cfa_offset 8
	.cfi_offset r4, -8
	.cfi_offset lr, -4
	pop	{r4, pc}
	.cfi_endproc
	.size sigframe, .-sigframe

	.type pers, %function
	.thumb_func
pers:
	bx	lr
	.size pers, .-pers
#endif

	.global reset
	.type reset, %function
	.thumb_func
reset:
	.cfi_startproc
	.cfi_undefined lr
	bl	push_frame
	bl	regmoves
	bl	vfp
	bl	valoff
	bl	exprs
	bl	farloc
	bl	retcol
1:	b	1b
	.cfi_endproc
	.size reset, .-reset

#ifndef DEBUG_FRAME
	.section .rodata
lsda:
	.word 0
#endif
