#!/bin/sh
# The QEMU + GDB oracle for an exact --max-insns stop (maxinsns_test.go):
# each ELF runs on qemu-system-arm from reset under GDB, which single-steps
# N instructions (`stepi N`) and prints the PC it stopped at: the address
# of the first instruction that did not run. The emulator stopped by
# Config.MaxInsns = N must stop at the same PC. The counts include stops
# in the middle of translated blocks and inside the startup copy loops.
# Checked with Debian's QEMU 7.2 and gdb-multiarch 13.1. Not run by
# `go test` (needs QEMU); its output is maxinsns-qemu.txt.
#
# usage: ./maxinsns-qemu.sh > maxinsns-qemu.txt
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port=$((20000 + $$ % 20000))
counts="1 2 3 5 7 10 13 17 25 40 64 100 150 257 400 777 1000 1601 2500 4099"
echo "# elf count pc (GDB's \$pc after stepi count from reset on QEMU 7.2)"
for spec in \
	emu/testdata/fw-m3.elf:mps2-an385:cortex-m3 \
	emu/testdata/fw-m4.elf:mps2-an386:cortex-m4 \
	emu/testdata/fw-m0.elf:mps2-an385:cortex-m3 \
	firmware-samples/build/gcc-m3-O2.elf:mps2-an385:cortex-m3 \
	firmware-samples/build/clang-m4f-O2.elf:mps2-an386:cortex-m4 \
	firmware-samples/build/gcc-m3-O0.elf:mps2-an385:cortex-m3 \
	firmware-samples/build/clang-m3-Os.elf:mps2-an385:cortex-m3; do
	elf=${spec%%:*}
	rest=${spec#*:}
	board=${rest%%:*}
	cpu=${rest#*:}
	qemu-system-arm -M "$board" -cpu "$cpu" -kernel "$root/$elf" -nographic \
		-monitor none -serial none -gdb tcp:127.0.0.1:$port -S 2>/dev/null &
	q=$!
	sleep 1
	prev=0
	cmds=""
	for n in $counts; do
		cmds="$cmds -ex 'stepi $((n - prev))' -ex 'printf \"$elf $n 0x%08x\\n\", \$pc'"
		prev=$n
	done
	eval timeout 300 gdb-multiarch -q -batch -nx -ex "'set osabi none'" -ex "'set pagination off'" \
		-ex "'file $root/$elf'" -ex "'target remote 127.0.0.1:$port'" $cmds 2>&1 |
		grep -E "^$elf " || true
	kill $q 2>/dev/null || true
	wait $q 2>/dev/null || true
	port=$((port + 1))
done
