#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Installs Debian unstable's CPython 3.X next to the system's, for the stack and GIL tests
# (docs/STACKS.md, "Versions and builds"): bookworm has no CPython newer than 3.11 and no
# source can be downloaded here, but Debian's archive serves sid's binary packages. Two
# interpreters, each a whole tree under DEST:
#   DEST/3.X/bin/python3.X    Debian's release build: libpython linked in, stripped (.dynsym
#                             only), no frame pointers, as users run it
#   DEST/3.Xd/bin/python3.X   Debian's debug build (python3.Xd): symbols, and frame pointers
#                             through the interpreter, as Fedora's and Ubuntu's builds have
#                             them: what mixed native + Python stacks need
# sid's packages need sid's glibc: it goes into DEST/3.X*/sysroot, and each interpreter's ELF
# interpreter and RPATH point there (patchelf), so it runs as a plain executable: its
# /proc/PID/exe is the python, as a tracer sees any python; glibc's symbols (libc6-dbg) go in
# sysroot/.debug, where its .gnu_debuglink leads. Nothing outside DEST is touched.
#
# Usage: install_sid_cpython.sh [3.X [DEST]]     (default 3.15 /opt/cpython; make deps: 3.14, 3.15)
set -euo pipefail

VER=${1:-3.15}
DEST=${2:-/opt/cpython}
MIRROR=${SID_MIRROR:-http://deb.debian.org/debian}
LIBS="libc6 libssl3t64 zlib1g libexpat1 libffi8 libzstd1 liblzma5 libbz2-1.0 libmpdec4 libuuid1"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/debs"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR sid main" \
	>"$work/sid.list"
apt_sid() {
	apt-get -q -o Dir::Etc::SourceList="$work/sid.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$work/lists" -o Debug::NoLocking=1 \
		-o APT::Sandbox::User=root "$@"
}
apt_sid update >/dev/null
(cd "$work/debs" && apt_sid download $LIBS libc6-dbg "python$VER-minimal" \
	"libpython$VER-minimal" "libpython$VER-stdlib" "python$VER-dbg" "libpython$VER-dbg" >/dev/null)

# One tree: ROOT gets bin/python3.X (from the extracted package path BIN), the standard
# library, the extension modules of the packages named, and the sysroot.
make_tree() {
	local root=$1 bin=$2 x=$work/x-$(basename "$1")
	shift 2
	rm -rf "$x" "$root.new"
	mkdir -p "$x" "$root.new/bin" "$root.new/lib" "$root.new/sysroot"
	for p in "$@" $LIBS; do
		dpkg -x "$work"/debs/"${p}"_*.deb "$x"
	done
	cp -a "$x/usr/lib/python$VER" "$root.new/lib/"
	cp "$x/$bin" "$root.new/bin/python$VER"
	# glibc's loader and every shared library of the packages, flat.
	find "$x/usr/lib/x86_64-linux-gnu" "$x/usr/lib64" -maxdepth 1 \( -type f -o -type l \) \
		-name '*.so*' -exec cp -L {} "$root.new/sysroot/" \;
	# glibc's symbols (the GIL's mutex waits are probed in its __lll_lock_wait), where its
	# .gnu_debuglink finds them: .debug/ next to the library.
	dpkg -x "$work"/debs/libc6-dbg_*.deb "$x/dbg"
	mkdir -p "$root.new/sysroot/.debug"
	find "$x/dbg/usr/lib/debug/.build-id" -name '*.debug' -exec cp {} "$root.new/sysroot/.debug/" \;
	patchelf --set-interpreter "$root/sysroot/ld-linux-x86-64.so.2" --force-rpath \
		--set-rpath "$root/sysroot" "$root.new/bin/python$VER"
	rm -rf "$root"
	mv "$root.new" "$root"
	"$root/bin/python$VER" -c 'import ctypes, threading, json, sys; print(sys.version)' \
		| sed "s|^|$root/bin/python$VER: |"
}

mkdir -p "$DEST"
make_tree "$DEST/$VER" "usr/bin/python$VER" "python$VER-minimal" "libpython$VER-minimal" \
	"libpython$VER-stdlib"
make_tree "$DEST/${VER}d" "usr/bin/python${VER}d" "python$VER-dbg" "libpython$VER-dbg" \
	"libpython$VER-minimal" "libpython$VER-stdlib"
