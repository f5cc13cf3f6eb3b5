@ Hand-made EHABI unwind tables exercising every opcode of EHABI section
@ 10.3 (plus the spare and reserved encodings, the three compact
@ personality routines, a generic personality routine, EXIDX_CANTUNWIND and
@ a function with no unwind information at all). GNU as builds the
@ .ARM.exidx/.ARM.extab entries from the directives; .unwind_raw supplies
@ the opcodes no directive produces. Most functions hold a real prologue
@ and epilogue matching their table so tests can step through them.
@ Note: GNU as emits the opcodes of successive directives in reverse order
@ (the unwinder undoes the prologue last step first).

	.syntax unified
	.cpu cortex-m4
	.fpu fpv4-sp-d16
	.thumb
	.text

	.macro func name
	.global \name
	.type \name, %function
	.thumb_func
\name:
	.endm

@ push {r4-r7, lr}: 0xab (pop r4-r7, r14), pr0 inline.
	func push_r4_r7_lr
	.fnstart
	push	{r4, r5, r6, r7, lr}
	.save	{r4, r5, r6, r7, lr}
	bl	leaf
	pop	{r4, r5, r6, r7, pc}
	.fnend
	.size push_r4_r7_lr, .-push_r4_r7_lr

@ push {r4, r8, r9, lr} + vpush {d8-d9} + sub sp, #16:
@ 0x03 (vsp += 16), 0xc9 0x81 (pop D8-D9 VPUSH), 0x84 0x31 (pop r4, r8, r9, r14).
	func push_vpush_pad
	.fnstart
	push	{r4, r8, r9, lr}
	.save	{r4, r8, r9, lr}
	vpush	{d8, d9}
	.vsave	{d8, d9}
	sub	sp, #16
	.pad	#16
	bl	leaf
	add	sp, #16
	vpop	{d8, d9}
	pop	{r4, r8, r9, pc}
	.fnend
	.size push_vpush_pad, .-push_vpush_pad

@ A big frame: sub sp, #0x10000 -> 0xb2 uleb128 (vsp += 0x204 + (v << 2)).
	func big_pad
	.fnstart
	push	{r4, lr}
	.save	{r4, lr}
	sub	sp, sp, #0x10000
	.pad	#0x10000
	bl	leaf
	add	sp, sp, #0x10000
	pop	{r4, pc}
	.fnend
	.size big_pad, .-big_pad

@ A frame pointer: push {r7, lr}; sub sp, #8; add r7, sp, #0 (GCC's
@ layout): 0x97 (vsp = r7), 0x02 (vsp += 12)... as emitted by .setfp.
	func frame_pointer
	.fnstart
	push	{r7, lr}
	.save	{r7, lr}
	sub	sp, #8
	.pad	#8
	add	r7, sp, #0
	.setfp	r7, sp, #0
	bl	leaf
	mov	sp, r7
	add	sp, #8
	pop	{r7, pc}
	.fnend
	.size frame_pointer, .-frame_pointer

@ clang's frame pointer layout: push {r4-r7, lr}; add r7, sp, #12.
	func frame_pointer_clang
	.fnstart
	push	{r4, r5, r6, r7, lr}
	.save	{r4, r5, r6, r7, lr}
	add	r7, sp, #12
	.setfp	r7, sp, #12
	sub	sp, #8
	bl	leaf
	sub	r4, r7, #12
	mov	sp, r4
	pop	{r4, r5, r6, r7, pc}
	.fnend
	.size frame_pointer_clang, .-frame_pointer_clang

@ Varargs: push {r0-r3} then push {r4, lr}: 0xa8, 0xb1 0x0f.
	func push_r0_r3
	.fnstart
	push	{r0, r1, r2, r3}
	.save	{r0, r1, r2, r3}
	push	{r4, lr}
	.save	{r4, lr}
	bl	leaf
	pop	{r4, lr}
	add	sp, #16
	bx	lr
	.fnend
	.size push_r0_r3, .-push_r0_r3

@ A leaf: no opcodes but finish.
	func leaf
	.fnstart
	bx	lr
	.cantunwind
	.fnend
	.size leaf, .-leaf

@ Personality routine 1 (long form, 16-bit scope): .personalityindex 1.
	func pr1_func
	.fnstart
	.personalityindex 1
	push	{r4, r5, lr}
	.save	{r4, r5, lr}
	sub	sp, #4
	.pad	#4
	bl	leaf
	add	sp, #4
	pop	{r4, r5, pc}
	.handlerdata
	.word	0
	.text
	.fnend
	.size pr1_func, .-pr1_func

@ Personality routine 2 (long form, 32-bit scope) with many opcodes, so
@ the entry needs several extra words.
	func pr2_func
	.fnstart
	.personalityindex 2
	push	{r4, r5, r6, r7, r8, r9, r10, r11, lr}
	.save	{r4, r5, r6, r7, r8, r9, r10, r11, lr}
	vpush	{d8, d9, d10, d11, d12, d13, d14, d15}
	.vsave	{d8, d9, d10, d11, d12, d13, d14, d15}
	sub	sp, #256
	.pad	#256
	sub	sp, #4
	.pad	#4
	bl	leaf
	add	sp, #260
	vpop	{d8, d9, d10, d11, d12, d13, d14, d15}
	pop	{r4, r5, r6, r7, r8, r9, r10, r11, pc}
	.handlerdata
	.word	0
	.text
	.fnend
	.size pr2_func, .-pr2_func

@ A generic-model entry with a personality routine of our own.
	func generic_personality
	.fnstart
	.personality my_personality
	push	{r4, lr}
	.save	{r4, lr}
	bl	leaf
	pop	{r4, pc}
	.handlerdata
	.word	0x12345678
	.text
	.fnend
	.size generic_personality, .-generic_personality

	func my_personality
	.fnstart
	.cantunwind
	bx	lr
	.fnend
	.size my_personality, .-my_personality

@ Raw opcodes the directives never produce. One function per group so that
@ a refuse or spare opcode does not hide the ones after it from readelf.

@ 0x80 0x00: refuse to unwind.
	func op_refuse
	.fnstart
	.unwind_raw 0, 0x80, 0x00
	bx	lr
	.fnend
	.size op_refuse, .-op_refuse

@ 0x8f 0xff: pop r4-r15 (SP and PC included); 0x88 0x00: pop {r15}.
	func op_pop_all
	.fnstart
	.unwind_raw 0, 0x8f, 0xff
	bx	lr
	.fnend
	.size op_pop_all, .-op_pop_all

	func op_pop_pc
	.fnstart
	.unwind_raw 0, 0x88, 0x00
	.unwind_raw 0, 0xa0
	bx	lr
	.fnend
	.size op_pop_pc, .-op_pop_pc

@ vsp = r[n] for every n (r13 and r15 are reserved).
	func op_vsp_reg
	.fnstart
	.unwind_raw 0, 0x90
	.unwind_raw 0, 0x91
	.unwind_raw 0, 0x92
	.unwind_raw 0, 0x93
	.unwind_raw 0, 0x94
	.unwind_raw 0, 0x95
	.unwind_raw 0, 0x96
	.unwind_raw 0, 0x97
	.unwind_raw 0, 0x98
	.unwind_raw 0, 0x99
	.unwind_raw 0, 0x9a
	.unwind_raw 0, 0x9b
	.unwind_raw 0, 0x9c
	.unwind_raw 0, 0x9e
	bx	lr
	.fnend
	.size op_vsp_reg, .-op_vsp_reg

	func op_vsp_r13
	.fnstart
	.unwind_raw 0, 0x9d
	bx	lr
	.fnend
	.size op_vsp_r13, .-op_vsp_r13

	func op_vsp_r15
	.fnstart
	.unwind_raw 0, 0x9f
	bx	lr
	.fnend
	.size op_vsp_r15, .-op_vsp_r15

@ vsp += / -= every size class, pop r4-r[4+n] and r4-r[4+n]+r14 for all n.
	func op_vsp_arith
	.fnstart
	.unwind_raw 0, 0x00
	.unwind_raw 0, 0x01
	.unwind_raw 0, 0x3f
	.unwind_raw 0, 0x40
	.unwind_raw 0, 0x41
	.unwind_raw 0, 0x7f
	.unwind_raw 0, 0xa0
	.unwind_raw 0, 0xa1
	.unwind_raw 0, 0xa2
	.unwind_raw 0, 0xa3
	.unwind_raw 0, 0xa4
	.unwind_raw 0, 0xa5
	.unwind_raw 0, 0xa6
	.unwind_raw 0, 0xa7
	.unwind_raw 0, 0xa8
	.unwind_raw 0, 0xa9
	.unwind_raw 0, 0xaa
	.unwind_raw 0, 0xab
	.unwind_raw 0, 0xac
	.unwind_raw 0, 0xad
	.unwind_raw 0, 0xae
	.unwind_raw 0, 0xaf
	bx	lr
	.fnend
	.size op_vsp_arith, .-op_vsp_arith

@ 0xb1: pop r0-r3 by mask; 0x00 and 0x1x are spare.
	func op_pop_low
	.fnstart
	.unwind_raw 0, 0xb1, 0x01
	.unwind_raw 0, 0xb1, 0x0a
	.unwind_raw 0, 0xb1, 0x0f
	bx	lr
	.fnend
	.size op_pop_low, .-op_pop_low

	func op_pop_low_spare0
	.fnstart
	.unwind_raw 0, 0xb1, 0x00
	bx	lr
	.fnend
	.size op_pop_low_spare0, .-op_pop_low_spare0

	func op_pop_low_spare1
	.fnstart
	.unwind_raw 0, 0xb1, 0x18
	bx	lr
	.fnend
	.size op_pop_low_spare1, .-op_pop_low_spare1

@ 0xb2 uleb128: one, two and five byte forms.
	func op_uleb
	.fnstart
	.unwind_raw 0, 0xb2, 0x00
	.unwind_raw 0, 0xb2, 0x7f
	.unwind_raw 0, 0xb2, 0x80, 0x01
	.unwind_raw 0, 0xb2, 0xff, 0x7f
	bx	lr
	.fnend
	.size op_uleb, .-op_uleb

@ FSTMFDX pops: 0xb3 sssscccc and 0xb8-0xbf.
	func op_fstmfdx
	.fnstart
	.unwind_raw 0, 0xb3, 0x00
	.unwind_raw 0, 0xb3, 0x12
	.unwind_raw 0, 0xb3, 0xf0
	.unwind_raw 0, 0xb8
	.unwind_raw 0, 0xbb
	.unwind_raw 0, 0xbf
	bx	lr
	.fnend
	.size op_fstmfdx, .-op_fstmfdx

@ VPUSH pops: 0xc8 (D16+), 0xc9 (D0+), 0xd0-0xd7 (D8+).
	func op_vpush
	.fnstart
	.unwind_raw 0, 0xc8, 0x00
	.unwind_raw 0, 0xc8, 0x2f
	.unwind_raw 0, 0xc9, 0x00
	.unwind_raw 0, 0xc9, 0x07
	.unwind_raw 0, 0xc9, 0xf0
	.unwind_raw 0, 0xd0
	.unwind_raw 0, 0xd3
	.unwind_raw 0, 0xd7
	bx	lr
	.fnend
	.size op_vpush, .-op_vpush

@ 0xb4: pop the return address authentication code (v8.1-M PACBTI);
@ 0xb5: use vsp as the PAC modifier.
	func op_pac
	.fnstart
	.unwind_raw 0, 0xb4
	.unwind_raw 0, 0xb5
	bx	lr
	.fnend
	.size op_pac, .-op_pac

@ Spare and iWMMXt encodings, one per function.
	.macro spare name, bytes:vararg
	func \name
	.fnstart
	.unwind_raw 0, \bytes
	bx	lr
	.fnend
	.size \name, .-\name
	.endm

	spare	spare_b6, 0xb6
	spare	spare_b7, 0xb7
	spare	wmmx_c0, 0xc0
	spare	wmmx_c5, 0xc5
	spare	wmmx_c6, 0xc6, 0x12
	spare	wmmx_c7, 0xc7, 0x01
	spare	spare_c7_00, 0xc7, 0x00
	spare	spare_c7_10, 0xc7, 0x10
	spare	spare_ca, 0xca
	spare	spare_cf, 0xcf
	spare	spare_d8, 0xd8
	spare	spare_df, 0xdf
	spare	spare_e0, 0xe0
	spare	spare_ff, 0xff

@ The compact-model personality routines the entries reference: this file
@ is linked alone, without libgcc.
	.macro prstub name
	func \name
	.fnstart
	.cantunwind
	bx	lr
	.fnend
	.size \name, .-\name
	.endm

	prstub	__aeabi_unwind_cpp_pr0
	prstub	__aeabi_unwind_cpp_pr1
	prstub	__aeabi_unwind_cpp_pr2

@ An explicit EXIDX_CANTUNWIND.
	func cant_unwind
	.fnstart
	.cantunwind
	bx	lr
	.fnend
	.size cant_unwind, .-cant_unwind

	func _start
	.fnstart
	.save	{r4, lr}
	push	{r4, lr}
	bl	push_r4_r7_lr
	bl	push_vpush_pad
	bl	big_pad
	bl	frame_pointer
	bl	frame_pointer_clang
	bl	push_r0_r3
	bl	pr1_func
	bl	pr2_func
	bl	generic_personality
	bl	no_unwind_info
	.fnend
	.size _start, .-_start

@ No .fnstart: no table entry. Linked last, so unless the linker adds a
@ terminator the entry of _start is the last one and has no upper bound.
	func no_unwind_info
	push	{r4, lr}
	bl	leaf
	pop	{r4, pc}
	.size no_unwind_info, .-no_unwind_info
