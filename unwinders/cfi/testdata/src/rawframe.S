@ A .debug_frame written byte by byte, for what GNU as never emits:
@ the 64-bit DWARF format (initial length 0xffffffff, 8-byte CIE id and
@ CIE pointer) with a version 4 CIE, a version 3 CIE in the 32-bit
@ format, DW_CFA_set_loc and DW_CFA_advance_loc4.
	.syntax unified
	.cpu cortex-m3
	.thumb

	.section .vectors, "a"
	.word 0x20010000
	.word reset + 1

	.text
	.global f64
	.type f64, %function
	.thumb_func
f64:
f64_lo:					@ a plain label: no Thumb bit in data
	push	{r4, lr}
	nop
	nop
	pop	{r4, pc}
f64_end:
	.size f64, .-f64

	.global f32
	.type f32, %function
	.thumb_func
f32:
f32_lo:
	push	{r7, lr}
	nop
	pop	{r7, pc}
f32_end:
	.size f32, .-f32

	.global reset
	.type reset, %function
	.thumb_func
reset:
	bl	f64
	bl	f32
1:	b	1b
	.size reset, .-reset

	.section .debug_frame, "", %progbits
cie64:					@ section offset 0
	.4byte	0xffffffff
	.4byte	cie64_end - cie64_id, 0	@ 64-bit length, little-endian
cie64_id:
	.8byte	0xffffffffffffffff	@ CIE id (64-bit)
	.byte	4			@ version
	.asciz	""			@ augmentation
	.byte	4			@ address size
	.byte	0			@ segment selector size
	.uleb128 2			@ code alignment factor
	.sleb128 -4			@ data alignment factor
	.uleb128 14			@ return address column
	.byte	0x0c, 13, 0		@ DW_CFA_def_cfa r13, 0
	.byte	0, 0, 0			@ DW_CFA_nop
cie64_end:

fde64:
	.4byte	0xffffffff
	.4byte	fde64_end - fde64_ptr, 0
fde64_ptr:
	.8byte	0			@ CIE pointer: cie64
	.4byte	f64_lo
	.4byte	f64_end - f64_lo
	.byte	0x01			@ DW_CFA_set_loc f64+2
	.4byte	f64_lo + 2
	.byte	0x0e, 8			@ DW_CFA_def_cfa_offset 8
	.byte	0x84, 2			@ DW_CFA_offset r4, 2 x -4
	.byte	0x8e, 1			@ DW_CFA_offset lr, 1 x -4
	.byte	0x04			@ DW_CFA_advance_loc4 2 x 2 bytes
	.4byte	2
	.byte	0x0e, 0			@ DW_CFA_def_cfa_offset 0
	.byte	0xc4, 0xce		@ DW_CFA_restore r4, DW_CFA_restore lr
	.byte	0, 0
fde64_end:

cie32:
	.4byte	cie32_end - cie32_id
cie32_id:
	.4byte	0xffffffff		@ CIE id (32-bit)
	.byte	3			@ version
	.asciz	""			@ augmentation
	.uleb128 2
	.sleb128 -4
	.uleb128 14			@ version 3: a ULEB128
	.byte	0x0c, 13, 0
	.byte	0
cie32_end:

fde32:
	.4byte	fde32_end - fde32_ptr
fde32_ptr:
	.4byte	cie32 - cie64		@ CIE pointer
	.4byte	f32_lo
	.4byte	f32_end - f32_lo
	.byte	0x41			@ DW_CFA_advance_loc 1 x 2
	.byte	0x0e, 8
	.byte	0x87, 2			@ DW_CFA_offset r7, 2 x -4
	.byte	0x8e, 1
	.byte	0x02, 2			@ DW_CFA_advance_loc1 2 x 2
	.byte	0x0e, 0
	.byte	0xc7, 0xce
fde32_end:
