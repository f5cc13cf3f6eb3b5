#!/bin/sh
# gen.sh: record what arm-none-eabi-addr2line prints for every instruction
# address of two sample firmware ELFs, C (firmware-samples/build) and C++
# with inlining (elfsym/testdata/cxx/build): the addresses of elfsym's
# addr2line oracle, plus two addresses outside any code, with each combination of flags that
# TestSymbolizeAddr2LineFlags checks. Run from this directory.
set -eu
ADDR2LINE=${ADDR2LINE:-arm-none-eabi-addr2line}
repo=../../../../..
for pair in firmware-samples/build/gcc-m3-O2.elf:elfsym/testdata/oracle/firmware-samples/gcc-m3-O2 \
	elfsym/testdata/cxx/build/gcc-cxx-O2.elf:elfsym/testdata/oracle/cxx/gcc-cxx-O2; do
	elf=$repo/${pair%%:*}
	oracle=$repo/${pair#*:}.addr2line.gz
	name=$(basename "$elf" .elf)
	addrs=$(mktemp)
	# The oracle's first addresses (at most 200, in its ascending order:
	# addr2line's answers depend on the queries before them), up to the
	# first one where faultline's default answer (addr2line -a -f -i form)
	# differs from the oracle's: elfsym's oracle test covers and explains
	# those; this test is about addr2line's flags.
	zcat "$oracle" | awk '/^#/{next} /^0x/{if(a!="")print a; a=$0; next} {a=a"|"$0} END{print a}' | head -200 >"$addrs.want"
	cut -d'|' -f1 "$addrs.want" | go run "$repo/cmd/faultline" symbolize -a -f -i -e "$elf" |
		awk '/^0x/{if(a!="")print a; a=$0; next} {a=a"|"$0} END{print a}' >"$addrs.got"
	paste -d'\n' "$addrs.want" "$addrs.got" | awk 'NR%2==1{w=$0; next} $0!=w{exit} {split($0, f, "|"); print f[1]}' >"$addrs"
	rm -f "$addrs.want" "$addrs.got"
	echo 0x10000 >>"$addrs"
	echo 0xfffffff0 >>"$addrs"
	for flags in "" "-f" "-i" "-a" "-p" "-f -i" "-p -i" "-p -f" "-p -f -i" "-a -p -f -i" "-a -f -i -C" "-a -p -f -i -C"; do
		out="$name$(echo "$flags" | tr -d ' ').txt"
		{
			echo "# $("$ADDR2LINE" --version | head -1) $flags -e $name.elf"
			"$ADDR2LINE" $flags -e "$elf" <"$addrs"
		} >"$out"
	done
	cp "$addrs" "$name.addresses"
	rm -f "$addrs"
done
# Lines of input: one answer per line whatever else is on it, an empty or
# blank line (address 0), CRLF, 0X (TestSymbolizeStdinLines).
elf=$repo/firmware-samples/build/gcc-m3-O2.elf
for flags in "" "-a -f"; do
	out="stdin-lines$(echo "$flags" | tr -d ' ').txt"
	{
		echo "# $("$ADDR2LINE" --version | head -1) $flags -e gcc-m3-O2.elf < stdin-lines.input"
		"$ADDR2LINE" $flags -e "$elf" <stdin-lines.input
	} >"$out"
done
