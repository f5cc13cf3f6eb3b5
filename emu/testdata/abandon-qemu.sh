#!/bin/sh
# The QEMU + GDB oracle for abandon.c (abandon_test.go): runs abandon-m0.elf
# and abandon-m3.elf unchanged on qemu-system-arm's mps2-an385 (Cortex-M3,
# flash at 0, RAM at 0x20000000; the ARMv6-M build runs there as well),
# sets crash_scenario at main, stops at HardFault_Handler and prints GDB's
# backtrace. Checked with Debian's QEMU 7.2 and gdb-multiarch 13.1. Not run
# by `go test` (slow, needs QEMU).
#
# usage: ./abandon-qemu.sh [SCENARIO...]   (default: 1 to 6)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
port=$((20000 + $$ % 20000))
for elf in abandon-m0.elf abandon-m3.elf; do
	for sc in ${*:-1 2 3 4 5 6}; do
		echo "=== $elf scenario $sc"
		qemu-system-arm -M mps2-an385 -cpu cortex-m3 -kernel "$here/$elf" -nographic \
			-monitor none -serial none -gdb tcp:127.0.0.1:$port -S 2>/dev/null &
		q=$!
		sleep 1
		timeout 60 gdb-multiarch -q -batch -nx -ex 'set osabi none' -ex 'set pagination off' \
			-ex "file $here/$elf" -ex "target remote 127.0.0.1:$port" \
			-ex 'break main' -ex 'continue' -ex "set var crash_scenario=$sc" \
			-ex 'break HardFault_Handler' -ex 'continue' -ex 'bt' 2>&1 |
			grep -E '^#' || true
		kill $q 2>/dev/null || true
		wait $q 2>/dev/null || true
		port=$((port + 1))
	done
done
