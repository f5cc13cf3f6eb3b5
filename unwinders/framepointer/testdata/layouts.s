@ Hand-written prologues and epilogues for the framepointer tests: one
@ function per frame shape of cortex-m.md section 4 (clang, GCC 12, APCS)
@ and the control flow the analysis must follow. Rebuild with `make`
@ (see README.md); the tests read layouts.elf.
	.syntax unified
	.text

	.thumb
	.thumb_func
	.globl	leaf
	.type	leaf, %function
leaf:
	bx	lr
	.size	leaf, .-leaf

@ clang: push {r4-r7, lr}; add r7, sp, #12; callee-saved high registers
@ pushed after r7 is set.
	.thumb_func
	.globl	clang_frame
	.type	clang_frame, %function
clang_frame:
	push	{r4, r5, r6, r7, lr}
	add	r7, sp, #12
	push.w	{r8, r9, r10, r11}
	sub	sp, #8
	bl	leaf
clang_frame_ret:
	add	sp, #8
	pop.w	{r8, r9, r10, r11}
	pop	{r4, r5, r6, r7, pc}
	.size	clang_frame, .-clang_frame

@ clang: push {r7, lr}; mov r7, sp.
	.thumb_func
	.globl	clang_simple
	.type	clang_simple, %function
clang_simple:
	push	{r7, lr}
	mov	r7, sp
	bl	leaf
clang_simple_ret:
	pop	{r7, pc}
	.size	clang_simple, .-clang_simple

@ GCC 12: push {r4, r7, lr}; sub sp, #20; add r7, sp, #0 (record at
@ r7+20), and GCC -O0's epilogue that moves r7 before restoring SP.
	.thumb_func
	.globl	gcc_frame
	.type	gcc_frame, %function
gcc_frame:
	push	{r4, r7, lr}
	sub	sp, #20
	add	r7, sp, #0
	bl	leaf
gcc_frame_ret:
	adds	r7, #20
gcc_frame_adjusted:
	mov	sp, r7
gcc_frame_sp_restored:
	pop	{r4, r7, pc}
	.size	gcc_frame, .-gcc_frame

@ Large frames: SUBW (T4), SUB.W with a modified immediate (T2), and
@ SUB SP, SP, Rm after MOVW.
	.thumb_func
	.globl	gcc_subw
	.type	gcc_subw, %function
gcc_subw:
	push	{r7, lr}
	subw	sp, sp, #2056
	add	r7, sp, #0
	bl	leaf
gcc_subw_ret:
	addw	r7, r7, #2056
	mov	sp, r7
	pop	{r7, pc}
	.size	gcc_subw, .-gcc_subw

	.thumb_func
	.globl	gcc_subw2
	.type	gcc_subw2, %function
gcc_subw2:
	push	{r7, lr}
	sub.w	sp, sp, #2080
	add	r7, sp, #8
	bl	leaf
gcc_subw2_ret:
	sub	r7, r7, #8
	add.w	sp, sp, #2080
	pop	{r7, pc}
	.size	gcc_subw2, .-gcc_subw2

	.thumb_func
	.globl	gcc_regsub
	.type	gcc_regsub, %function
gcc_regsub:
	push	{r7, lr}
	movw	r3, #5000
	sub	sp, sp, r3
	add	r7, sp, #0
	bl	leaf
gcc_regsub_ret:
	mov	sp, r7
	add	sp, sp, r3
	pop	{r7, pc}
	.size	gcc_regsub, .-gcc_regsub

@ GCC leaf with a frame pointer: LR is never saved.
	.thumb_func
	.globl	gcc_leaf
	.type	gcc_leaf, %function
gcc_leaf:
	push	{r7}
	sub	sp, #12
	add	r7, sp, #0
gcc_leaf_body:
	str	r0, [r7, #4]
	adds	r7, #12
	mov	sp, r7
	pop	{r7}
gcc_leaf_after_pop:
	bx	lr
	.size	gcc_leaf, .-gcc_leaf

@ Shrink-wrapped: the frame exists only on the slow path.
	.thumb_func
	.globl	shrink
	.type	shrink, %function
shrink:
	cbz	r0, 1f
	push	{r7, lr}
	mov	r7, sp
	bl	leaf
shrink_ret:
	pop	{r7, pc}
1:
shrink_fast:
	bx	lr
	.size	shrink, .-shrink

@ Body code after an epilogue, reached by a branch.
	.thumb_func
	.globl	midret
	.type	midret, %function
midret:
	push	{r7, lr}
	mov	r7, sp
	cmp	r0, #0
	beq	2f
	bl	leaf
	pop	{r7, pc}
2:
	bl	leaf
midret_ret2:
	pop	{r7, pc}
	.size	midret, .-midret

@ A switch through TBB: the case blocks are reached only through the table.
	.thumb_func
	.globl	switcher
	.type	switcher, %function
switcher:
	push	{r4, r6, r7, lr}
	add	r7, sp, #8
	cmp	r0, #2
	bhi	9f
	tbb	[pc, r0]
3:
	.byte	(4f-3b)/2, (5f-3b)/2, (6f-3b)/2
	.balign	2
4:	bl	leaf
	b	9f
5:	bl	leaf
switcher_case1_ret:
	b	9f
6:	bl	leaf
9:	pop	{r4, r6, r7, pc}
	.size	switcher, .-switcher

@ r7 changed in a loop: not a frame pointer after the loop.
	.thumb_func
	.globl	r7loop
	.type	r7loop, %function
r7loop:
	push	{r7, lr}
	mov	r7, sp
1:	adds	r7, #4
	subs	r0, #1
	bne	1b
	bl	leaf
r7loop_ret:
	pop	{r7, pc}
	.size	r7loop, .-r7loop

@ No frame pointer: r7 is not touched.
	.thumb_func
	.globl	no_fp
	.type	no_fp, %function
no_fp:
	push	{r4, lr}
	bl	leaf
no_fp_ret:
	pop	{r4, pc}
	.size	no_fp, .-no_fp

@ r7 pushed as a callee-saved register and used for data (GCC -O2).
	.thumb_func
	.globl	r7data
	.type	r7data, %function
r7data:
	push	{r4, r5, r6, r7, lr}
	ldr	r7, [r0]
	bl	leaf
r7data_ret:
	pop	{r4, r5, r6, r7, pc}
	.size	r7data, .-r7data

@ ARM state, APCS frame (-mapcs-frame).
	.arm
	.globl	apcs_leaf
	.type	apcs_leaf, %function
apcs_leaf:
	bx	lr
	.size	apcs_leaf, .-apcs_leaf

	.globl	apcs_frame
	.type	apcs_frame, %function
apcs_frame:
	mov	ip, sp
	push	{r4, r5, fp, ip, lr, pc}
	sub	fp, ip, #4
apcs_frame_body:
	sub	sp, sp, #16
	bl	apcs_leaf
apcs_frame_ret:
	cmp	r0, #0
	ldmdbeq	fp, {r4, r5, fp, sp, pc}
	bl	apcs_leaf
apcs_frame_ret2:
	ldmdb	fp, {r4, r5, fp, sp, pc}
	.size	apcs_frame, .-apcs_frame

	.globl	apcs_none
	.type	apcs_none, %function
apcs_none:
	push	{r4, lr}
	bl	apcs_leaf
apcs_none_ret:
	pop	{r4, pc}
	.size	apcs_none, .-apcs_none
