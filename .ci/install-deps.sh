#!/usr/bin/env bash
# Installs the Debian packages faultline needs that this machine lacks.
#   .ci/install-deps.sh            runtime + test needs (libunicorn-dev)
#   .ci/install-deps.sh --toolchain  also the ARM cross toolchain and the
#                                  QEMU + GDB oracle (to rebuild the samples
#                                  and their fixtures), and the chromium
#                                  and PostgreSQL the fleet tests drive
set -euo pipefail

pkgs=(libunicorn-dev pkg-config gcc)
if [[ "${1:-}" == "--toolchain" ]]; then
	pkgs+=(gcc-arm-none-eabi libnewlib-arm-none-eabi libstdc++-arm-none-eabi-newlib
		binutils-arm-none-eabi clang lld llvm qemu-system-arm gdb-multiarch chromium postgresql)
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if ((${#missing[@]} == 0)); then
	exit 0
fi

echo "installing missing Debian packages: ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
	if command -v sudo >/dev/null; then
		SUDO="sudo"
	else
		echo "error: not root and no sudo; install these packages: ${missing[*]}" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >&2
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
