#!/bin/sh
# Regenerate the objdump oracle listings used by TestObjdump.
#
# For every ELF of the repository's sample firmware, the elfsym test ELFs and
# this directory, write objdump/<dir>__<name>.txt: a header naming the ELF,
# its SHA-256 and the objdump version, then the output of
#   arm-none-eabi-objdump -d ELF
# The raw instruction bytes are part of the listing, so the test decodes
# exactly the bytes objdump decoded, even after the ELF has been rebuilt.
#
# Run from this directory (or via `make objdump`). Needs binutils-arm-none-eabi
# (2.40 was used for the committed files).
set -eu
cd "$(dirname "$0")"
OBJDUMP=${OBJDUMP:-arm-none-eabi-objdump}
mkdir -p objdump
rm -f objdump/*.txt
for elf in ../../../firmware-samples/build/*.elf ../../../elfsym/testdata/*.elf ./*.elf; do
	[ -f "$elf" ] || continue
	rel=$(echo "$elf" | sed 's|^\(\.\./\)*||; s|^\./|unwinders/thumb/testdata/|')
	out=objdump/$(echo "$rel" | sed 's|/|__|g; s|\.elf$||').txt
	{
		echo "# elf: $rel"
		echo "# sha256: $(sha256sum "$elf" | cut -d' ' -f1)"
		echo "# objdump: $($OBJDUMP --version | head -1)"
		echo "# command: $OBJDUMP -d $rel"
		# Strip the "file format" line: it names the path objdump was given.
		$OBJDUMP -d "$elf" | sed '1,/file format/d'
	} >"$out"
	echo "$out"
	# Without symbols there are no mapping symbols and objdump decodes the
	# code as ARM. Force Thumb: every halfword, literal pools included, is
	# then decoded as Thumb code, which stresses the decoder on arbitrary
	# bits.
	if ! ${NM:-arm-none-eabi-nm} "$elf" >/dev/null 2>&1 || [ -z "$(${NM:-arm-none-eabi-nm} "$elf" 2>/dev/null)" ]; then
		out=${out%.txt}-force-thumb.txt
		{
			echo "# elf: $rel"
			echo "# sha256: $(sha256sum "$elf" | cut -d' ' -f1)"
			echo "# objdump: $($OBJDUMP --version | head -1)"
			echo "# command: $OBJDUMP -d -M force-thumb $rel"
			$OBJDUMP -d -M force-thumb "$elf" | sed '1,/file format/d'
		} >"$out"
		echo "$out"
	fi
done

# Random instruction stream (see gen-random.py): every encoding group, with
# objdump's own view of what is UNDEFINED or UNPREDICTABLE.
./gen-random.py random.bin
out=objdump/random.txt
{
	echo "# elf: (none: raw bytes of gen-random.py, loaded at 0x08000000)"
	echo "# objdump: $($OBJDUMP --version | head -1)"
	echo "# command: $OBJDUMP -D -b binary -m arm -M force-thumb --adjust-vma=0x08000000 random.bin"
	$OBJDUMP -D -b binary -m arm -M force-thumb --adjust-vma=0x08000000 random.bin | sed '1,/file format/d'
} >"$out"
rm -f random.bin
echo "$out"

