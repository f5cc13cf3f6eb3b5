#!/bin/sh
# Writes NAME.frames.txt next to each ELF given: GNU readelf's interpreted
# call frame tables (--debug-dump=frames-interp), the independent oracle of
# the cfi package's table test (TestReadelf).
#   ./gen-readelf.sh allcfi-debug.elf ...   listings of ELFs in this directory
#   ./gen-readelf.sh --samples              listings of the sample firmware
#                                           (../../../firmware-samples/build/*.elf,
#                                           and capture/build/*.elf) into
#                                           firmware-samples/
#   ./gen-readelf.sh                        both
set -eu
cd "$(dirname "$0")"
READELF=${READELF:-arm-none-eabi-readelf}
list() { # elf out
	"$READELF" --debug-dump=frames-interp "$1" > "$2"
	echo "$2: $(grep -c ' FDE ' "$2" || true) FDEs"
}
samples() {
	mkdir -p firmware-samples/capture
	for elf in ../../../firmware-samples/build/*.elf; do
		[ -e "$elf" ] || continue
		b=$(basename "$elf" .elf)
		list "$elf" "firmware-samples/$b.frames.txt"
	done
	for elf in ../../../firmware-samples/capture/build/*.elf; do
		[ -e "$elf" ] || continue
		b=$(basename "$elf" .elf)
		list "$elf" "firmware-samples/capture/$b.frames.txt"
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
	list "$elf" "${elf%.elf}.frames.txt"
done
