#!/bin/sh
# build.sh PICOQUIC_SRC PICOTLS_SRC [OUT_DIR]
#
# Builds picoquicdemo from local source trees of picoquic and picotls
# (checkouts or `git archive` exports; nothing is downloaded) against the
# system's OpenSSL (Debian: apt-get install cmake gcc g++ make libssl-dev).
# picotls is built without its tests and without the fusion AES engine, so
# its picotest submodule need not be present. The binary ends up in
# OUT_DIR/picoquic/picoquicdemo (OUT_DIR defaults to ./picoquic-build);
# the script prints that path last. Set JOBS to change make's parallelism
# (default 2).
set -eu

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
	echo "usage: $0 PICOQUIC_SRC PICOTLS_SRC [OUT_DIR]" >&2
	exit 2
fi
abs() { (cd "$1" && pwd); }
for d in "$1" "$2"; do
	[ -d "$d" ] || { echo "$0: $d: no such directory" >&2; exit 2; }
done
pq=$(abs "$1")
tls=$(abs "$2")
out=${3:-picoquic-build}
mkdir -p "$out"
out=$(abs "$out")
jobs=${JOBS:-2}

# logged LOG CMD...: runs CMD with its output in OUT_DIR/LOG; on failure
# it shows the log's tail.
logged() {
	log=$out/$1
	shift
	if ! "$@" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "$0: failed: $* (log: $log)" >&2
		exit 1
	fi
}

[ -f "$pq/picoquic/quicctx.c" ] || { echo "$0: $pq is not a picoquic source tree" >&2; exit 2; }
[ -f "$tls/lib/picotls.c" ] || { echo "$0: $tls is not a picotls source tree" >&2; exit 2; }
for dep in cifra/src/aes.c micro-ecc/uECC.c; do
	[ -f "$tls/deps/$dep" ] || { echo "$0: $tls/deps/$dep missing (picotls submodules not checked out)" >&2; exit 2; }
done

# picotls's CMakeLists names deps/picotest/picotest.c in its test
# executables, and CMake refuses to configure when a named source is
# missing. Those tests are never built here; a copy of the tree with empty
# stand-ins lets the configuration pass without touching the caller's tree.
tlssrc=$tls
if [ ! -f "$tls/deps/picotest/picotest.c" ]; then
	tlssrc=$out/picotls-src
	rm -rf "$tlssrc"
	cp -R "$tls" "$tlssrc"
	mkdir -p "$tlssrc/deps/picotest"
	: >"$tlssrc/deps/picotest/picotest.c"
	: >"$tlssrc/deps/picotest/picotest.h"
fi

logged picotls-cmake.log cmake -S "$tlssrc" -B "$out/picotls" -DCMAKE_BUILD_TYPE=Release -DWITH_FUSION=OFF
logged picotls-make.log make -C "$out/picotls" -j"$jobs" picotls-core picotls-openssl picotls-minicrypto

# picoquic finds picotls through PTLS_INCLUDE_DIR and the library hints.
logged picoquic-cmake.log cmake -S "$pq" -B "$out/picoquic" -DCMAKE_BUILD_TYPE=Release \
	-Dpicoquic_BUILD_TESTS=OFF -DBUILD_PICO_SIM=OFF -DBUILD_HTTP=OFF -DBUILD_PQBENCH=OFF \
	-DBUILD_LOGREADER=OFF \
	-DPTLS_INCLUDE_DIR="$tlssrc/include" -DPTLS_PREFIX="$out/picotls" \
	-DPTLS_CORE_LIBRARY="$out/picotls/libpicotls-core.a" \
	-DPTLS_OPENSSL_LIBRARY="$out/picotls/libpicotls-openssl.a" \
	-DPTLS_MINICRYPTO_LIBRARY="$out/picotls/libpicotls-minicrypto.a"
logged picoquic-make.log make -C "$out/picoquic" -j"$jobs" picoquicdemo
echo "$out/picoquic/picoquicdemo"
