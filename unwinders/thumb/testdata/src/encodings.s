	.syntax unified
	.thumb
	.text
	.global _start
	.thumb_func
_start:
	push {r4, r5, r6, r7, lr}
	push.w {r4, r5, r6, r7, r8, r9, r10, r11, lr}
	stmdb sp!, {r4}
	str.w r4, [sp, #-4]!
	str r4, [sp, #-4]!
	strd r4, r5, [sp, #-8]!
	ldrd r4, r5, [sp], #8
	pop.w {r4, r5, r6, r7, r8, r9, r10, r11, pc}
	ldmia.w sp!, {r4}
	ldr.w r4, [sp], #4
	ldr pc, [sp], #4
	pop {r4, pc}
	vpush {d8-d15}
	vpush {s16-s31}
	vpop {d8}
	vpop {s16, s17}
	vstmdb sp!, {d8-d9}
	vldmia sp!, {d8-d9}
	sub sp, #508
	add sp, #12
	sub.w sp, sp, #4096
	add.w sp, sp, #0x10000
	subw sp, sp, #4095
	addw sp, sp, #4001
	sub sp, r3
	add sp, r3
	sub.w sp, sp, r3
	add.w sp, sp, r3
	sub sp, sp, r3, lsl #2
	add r7, sp, #8
	add.w r7, sp, #1024
	addw r7, sp, #1023
	mov r7, sp
	mov sp, r7
	mov.w r7, sp
	.inst.w 0xf1a70d08
	.inst.w 0xf2a70de8
	adds r7, #8
	add r7, sp
	add r3, sp, r3
	movw r3, #4000
	movt r3, #0x1234
	movs r3, #255
	mov.w r3, #0x10000
	mvn r3, #7
	mvns r3, r2
	ldr r3, =0x1000
	ldr.w r3, [pc, #-12]
	ldr.w r2, lit
	bx lr
	blx r3
	bx r3
	it eq
	popeq {r4, pc}
	itt ne
	addne r0, #1
	blne _start
	itttt gt
	movgt r0, #1
	movgt r1, r2
	addgt r1, r1, r2
	bgt _start
	cbz r3, 1f
	cbnz r3, 1f
	tbb [pc, r3]
1:	tbh [pc, r3, lsl #1]
	b.n _start
	b.w _start
	beq.n _start
	beq.w _start
	bl far
	bl far2
	bl near
	.inst.w 0xf7ffeffe
	b.w far
	beq.w far3
	mov pc, lr
	add pc, r3
	ldr pc, [r3]
	ldm r3, {r0, pc}
	adr r0, lit
	adr.w r0, lit
	add.w r7, sp, #8
	subs r7, #8
	sub.w r7, r7, #8
	sub sp, #0
	nop
	nop.w
	udf #0
	svc 3
	bkpt 1
	ldr r0, [sp, #8]
	str r0, [sp, #1020]
	ldr.w lr, [sp, #8]
	ldr lr, [sp], #4
	mov lr, r0
	mrs r0, msp
	msr psp, r0
	vmov r0, s1

	@ ---- edge encodings (hand-assembled where GNU as would pick another) ----
	.thumb_func
edges:
	.inst.w 0xf8df0000	@ ldr.w r0, [pc, #0] (U=1)
	.inst.w 0xe92d0010	@ stmdb sp!, {r4}: PUSH T2 with one register
	.inst.w 0xe8bd0010	@ ldmia.w sp!, {r4}: POP T2 with one register
	.inst.w 0xe8bd8000	@ ldmia.w sp!, {pc}
	str.w r4, [sp, #-8]!
	ldr.w r4, [sp], #8
	ldr.w r0, [r1, #-8]
	str r0, [r1, #-8]!
	ldr r0, [r1], #-4
	ldr.w r0, [r1, #-255]!
	ldr.w r0, [r1, #4095]
	ldr r0, [r1, #124]
	str r0, [r1]
	str r0, [sp]
	ldr.w r0, [r1, r2, lsl #2]
	ldrb.w r0, [r1, #1]!
	ldrh r0, [r1], #2
	pld [r0, #4]
	strd r0, r1, [sp, #-16]
	ldrd r0, r1, [sp, #8]!
	ldrd r0, r1, [sp]
	ldrd r0, r1, [r2], #-8
	.inst.w 0xe9df0102	@ ldrd r0, r1, [pc, #8]
	vpush {s16}
	vpop {d8-d15}
	vstmia r0!, {d0-d1}
	vldmia r0, {s0-s3}
	vldmdb r0!, {d0}
	vstmdb r0!, {s0}
	vldr d0, [sp, #8]
	vstr s0, [sp]
	mov.w r0, #0xff000000
	mvn.w r0, #0
	mov.w r0, #0x00ff00ff
	mov.w r0, #0xff00ff00
	mov.w r0, #0xffffffff
	movs.w r0, #0x80000000
	add.w sp, sp, #0x3fc00
	adds.w r0, r0, #1
	subs.w r0, r1, #0x104
	add.w r0, r1, r2, lsl #3
	.inst.w 0xeb010012	@ add.w r0, r1, r2, lsr #32
	add.w r0, r1, r2, ror #7
	add.w r0, r1, r2, rrx
	sub.w r0, r1, r2, asr #1
	mov.w r0, r1
	movs.w r0, r1
	mvn.w r0, r1, lsl #2
	mvns.w r0, r1
	movs r0, r1
	lsls r0, r1, #2
	adds r0, r1, r2
	subs r0, r1, #7
	mov r8, r8
	add r0, r0, r8
	mov r0, pc
	ldmia r3!, {r0, r1}
	ldmia r3, {r3, r4}
	stmia r3!, {r0}
	ldmdb r0!, {r4, r5}
	ldmdb r0, {r4, r5}
	stmia.w r0!, {r4, r5, r6}
	stmia.w r0, {r4, r5, r6}
	ldmia.w r0, {r4, pc}
	stmdb r0, {r4, r5}
	tbb [r0, r1]
	tbh [r2, r3, lsl #1]
	msr msp, r0
	msr control, r0
	mrs r0, psp
	vmov r0, r1, d0
	vmrs APSR_nzcv, fpscr
	vmrs r0, fpscr
	umull r0, r1, r2, r3
	sdiv r0, r1, r2
	strex r0, r1, [r2]
	ldrex r0, [r2]
	itete eq
	moveq r0, #1
	movne r0, #2
	addeq r0, r1
	popne {r4, pc}
	ittee ne
	addne.w r0, r1, #0x1000
	subne sp, #8
	moveq r7, sp
	bxeq lr
	it cc
	blxcc r3
	ite hi
	pushhi {r4, lr}
	ldrls pc, [sp], #4
	ittt lt
	vpushlt {d8}
	addlt r0, sp, #4
	ldmialt.w sp!, {r4, r5, pc}
	it ge
	bge.n edges
	itt mi
	movmi r0, r0
	bmi.w edges
	bl far4
	b.w far5
	beq.w edges
	bne.n . - 252
	b.n . - 2044
	cbz r0, . + 130
	cbnz r7, . + 4
	adr.w r0, _start
	adr r0, lit2
	ldr r0, =0x12345
	sub.w sp, sp, #1
	add sp, sp, #0
	add r7, sp, #1020
	addw r7, r7, #4095
	subw sp, sp, #4095
	.inst.w 0xf1070d08	@ add.w sp, r7, #8 (UNPREDICTABLE)
	add sp, r7
	mov sp, r4
	add r7, sp, r7
	ldr.w sp, [r0]
	pop.w {r4-r11, lr}
	.inst.w 0xf1a70d08	@ sub.w sp, r7, #8 (UNPREDICTABLE: Rd = SP needs Rn = SP)
	udf.w #0
	.inst.n 0xba80
	wfi
	cpsid i
	bx lr
	.align 2
lit2:	.word 0
	.ltorg
	.align 2
lit:	.word 0x12345678
	.thumb_func
near:	bx lr
