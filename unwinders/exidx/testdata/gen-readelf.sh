#!/bin/sh
# Writes NAME.readelf.txt next to each ELF given: GNU readelf's decoding of
# the EHABI tables, the independent oracle of exidx's acceptance test.
#   ./gen-readelf.sh gcc-m4f-O2.elf ...   listings of ELFs in this directory
#   ./gen-readelf.sh --samples            listings of the sample firmware
#                                         (../../../firmware-samples/build/*.elf)
#                                         into firmware-samples/
#   ./gen-readelf.sh                      both
set -eu
cd "$(dirname "$0")"
READELF=${READELF:-arm-none-eabi-readelf}
list() { # elf out
	"$READELF" -u "$1" > "$2"
	echo "$2: $(grep -c '^0x' "$2" || true) entries"
}
samples() {
	mkdir -p firmware-samples
	for elf in ../../../firmware-samples/build/*.elf; do
		[ -e "$elf" ] || continue
		b=$(basename "$elf" .elf)
		list "$elf" "firmware-samples/$b.readelf.txt"
	done
}
if [ $# -eq 0 ]; then
	set -- *.elf
	samples
elif [ "$1" = --samples ]; then
	samples
	exit 0
fi
for elf in "$@"; do
	list "$elf" "${elf%.elf}.readelf.txt"
done
