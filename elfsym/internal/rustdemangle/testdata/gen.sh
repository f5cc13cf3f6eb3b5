#!/bin/sh
# gen.sh: regenerate the demangler oracle (needs rustc, nm, c++filt from
# binutils and llvm-cxxfilt).
#
# v0.txt: every v0 symbol of symbols.rs compiled by rustc with
# -C symbol-mangling-version=v0 (an object file: our functions, closures,
# trait impls, generics, and the core/alloc/std instances they use) plus
# the v0 symbols a cdylib of it links from std. rustc 1.95 accepts
# -C symbol-mangling-version=legacy only with -Z unstable-options, so
# legacy.txt is written by hand in rustc's legacy scheme (see README.md).
# For each list, <list>.cxxfilt is `c++filt -s rust` and <list>.llvm-cxxfilt
# is `llvm-cxxfilt`, one line per symbol.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rustc --crate-type=lib --emit=obj -C opt-level=1 -C symbol-mangling-version=v0 -o "$tmp/lib.o" symbols.rs
rustc --crate-type=cdylib -C opt-level=1 -C symbol-mangling-version=v0 -o "$tmp/lib.so" symbols.rs
{ nm "$tmp/lib.o"; nm "$tmp/lib.so"; } | awk '{print $NF}' | grep '^_R' | LC_ALL=C sort -u >v0.txt
for l in v0 legacy; do
	c++filt -s rust <$l.txt >$l.cxxfilt
	llvm-cxxfilt <$l.txt >$l.llvm-cxxfilt
done
echo "$(rustc --version); $(c++filt --version | head -1); $(llvm-cxxfilt --version | grep -i version | head -1)" >VERSIONS
