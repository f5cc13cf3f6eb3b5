	.syntax unified
	.cpu cortex-m4
	.fpu fpv4-sp-d16
	.thumb
	.text
	.org 0
@ f_mid: push/sub prologue; call
f_mid:
	push {r4, r5, lr}
	sub sp, #16
	mov r4, r0
	bl callee
	add sp, #16
	pop {r4, r5, pc}
	.balign 4
@ f_epi: epilogue
f_epi:
	push {r4-r7, lr}
	sub sp, #8
	bl callee
	mov r0, r4
	add sp, #8
	pop {r4-r7, pc}
	.balign 4
@ leaf: no LR save
f_leaf:
	push {r4}
	sub sp, #8
	ldr r0, [r1]
	str r0, [r2]
	add sp, #8
	pop {r4}
	bx lr
	.balign 4
@ clobbers LR without saving
f_lrclob:
	mov lr, r0
	ldr r0, [r1]
	str r0, [r2]
	bx lr
	.balign 4
@ sub sp by register with movw
f_movw:
	push {r7, lr}
	movw r3, #4104
	sub sp, r3
	bl callee
	movw r3, #4104
	add sp, r3
	pop {r7, pc}
	.balign 4
@ literal pool constant
f_lit:
	push {r4, r5, lr}
	ldr r4, .Lbig
	add sp, r4
	bl callee
	b .Lout
	.balign 4
.Lbig:	.word -100012
.Lout:
	ldr r4, .Lbig2
	add sp, r4
	pop {r4, r5, pc}
	.balign 4
.Lbig2:	.word 100012
@ vpush
f_vpush:
	push {r4, lr}
	vpush {d8-d9}
	sub sp, #8
	bl callee
	add sp, #8
	vpop {d8-d9}
	pop {r4, pc}
	.balign 4
f_vpushs:
	push {r4, lr}
	vpush {s16-s18}
	sub sp, #4
	bl callee
	add sp, #4
	vpop {s16-s18}
	pop {r4, pc}
	.balign 4
@ strd pre-index + str.w pre-index
f_strd:
	strd r4, r5, [sp, #-8]!
	str lr, [sp, #-4]!
	sub sp, #4
	bl callee
	add sp, #4
	ldr lr, [sp], #4
	ldrd r4, r5, [sp], #8
	bx lr
	.balign 4
@ alloca through r7
f_alloca:
	push {r4, r7, lr}
	add r7, sp, #4
	sub sp, #12
	ldr r0, [r0]
	sub sp, r0
	bl callee
	subs r4, r7, #4
	mov sp, r4
	pop {r4, r7, pc}
	.balign 4
@ shrink-wrapped
f_shrink:
	cbz r0, .Lsw
	push {r4, lr}
	bl callee
	pop {r4, pc}
.Lsw:
	ldr r0, [r1]
	str r0, [r2]
	bx lr
	.balign 4
@ mid-function return, call reached by a branch
f_midret:
	push {r4, lr}
	cmp r0, #0
	bne .Lm2
	movs r0, #1
	pop {r4, pc}
.Lm2:
	adds r0, #2
	bl callee
	pop {r4, pc}
	.balign 4
@ unknown SP change, no frame register
f_unknown:
	push {r4, lr}
	ldr r0, [r0]
	sub sp, r0
	bl callee
	b .
	.balign 4
@ switch via tbb
f_tbb:
	push {r4, lr}
	cmp r0, #2
	bhi .Ltdef
	tbb [pc, r0]
.Ltab:
	.byte (.Lc0-.Ltab)/2, (.Lc1-.Ltab)/2, (.Lc2-.Ltab)/2
	.balign 2
.Lc0:
	bl callee
	pop {r4, pc}
.Lc1:
	movs r0, #3
	bl callee
	pop {r4, pc}
.Lc2:
	sub sp, #8
	bl callee
	add sp, #8
.Ltdef:
	pop {r4, pc}
	.balign 4
@ gcc -O0 frame pointer: push {r7, lr}; sub sp; add r7, sp, #0
f_gccfp:
	push {r7, lr}
	sub sp, #8
	add r7, sp, #0
	bl callee
	adds r7, r7, #8
	mov sp, r7
	pop {r7, pc}
	.balign 4
@ loop entered by forward branch; call inside the loop body
f_loop:
	push {r4, r5, r6, lr}
	movs r4, #0
	b .Llc
.Llb:
	bl callee
	adds r4, #1
.Llc:
	cmp r4, r0
	blt .Llb
	pop {r4, r5, r6, pc}
	.balign 4
callee:
	bx lr
	.balign 4
@ endless loop
f_spin:
	b f_spin
	.balign 4
