#!/bin/sh
# The QEMU + GDB oracle for pmsav8.c (pmsav8_test.go): relinks the source for
# QEMU's mps2-an505 (Cortex-M33 in Secure state: code at 0x10000000, RAM at
# 0x38000000, the Secure aliases), runs each scenario under qemu-system-arm
# with GDB attached, and prints the state at the first instruction of the
# handler that is entered: pc, lr, xpsr, the stacked frame, CFSR, HFSR,
# MMFAR, SHCSR and the register read-backs. Checked with Debian's QEMU 7.2
# and gdb-multiarch 13.1. Not run by `go test` (slow, needs QEMU).
#
# usage: ./pmsav8-qemu.sh [SCENARIO...]   (default: 1 to 8)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/ORIGIN = 0x00000000/ORIGIN = 0x10000000/; s/ORIGIN = 0x20000000/ORIGIN = 0x38000000/' \
	"$here/link.ld" >"$tmp/link.ld"
arm-none-eabi-gcc -mcpu=cortex-m33 -mthumb -mfloat-abi=soft -O1 -g -ffreestanding -nostdlib \
	-fno-common -Wall -Wextra -fno-inline-small-functions -T "$tmp/link.ld" -Wl,--gc-sections \
	-nostartfiles -o "$tmp/v8.elf" "$here/pmsav8.c"
port=$((20000 + $$ % 20000))
for sc in ${*:-1 2 3 4 5 6 7 8}; do
	echo "=== scenario $sc"
	qemu-system-arm -M mps2-an505 -cpu cortex-m33 -kernel "$tmp/v8.elf" -nographic \
		-monitor none -serial none -gdb tcp:127.0.0.1:$port -S &
	q=$!
	sleep 1
	timeout 60 gdb-multiarch -q -batch -nx -ex 'set osabi none' -ex 'set pagination off' \
		-ex "file $tmp/v8.elf" -ex "target remote 127.0.0.1:$port" \
		-ex 'break main' -ex 'continue' -ex "set var crash_scenario=$sc" \
		-ex 'break HardFault_Handler' -ex 'break MemManage_Handler' -ex 'continue' \
		-ex 'info registers pc lr xpsr' -ex 'x/8wx $sp' \
		-ex 'printf "CFSR %08x HFSR %08x MMFAR %08x SHCSR %08x\n", *(unsigned*)0xE000ED28, *(unsigned*)0xE000ED2C, *(unsigned*)0xE000ED34, *(unsigned*)0xE000ED24' \
		-ex 'x/8wx &readback' -ex 'print progress' 2>&1 |
		grep -E '^(pc|lr|xpsr|CFSR|0x|\$)|^Breakpoint [0-9]+, [A-Z]' || true
	kill $q 2>/dev/null || true
	wait $q 2>/dev/null || true
	port=$((port + 1))
done
