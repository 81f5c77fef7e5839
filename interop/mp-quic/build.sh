#!/bin/sh
# build.sh MPQUIC_SRC MINT_SRC AES12_SRC FNV128A_SRC CERTS_SRC [OUT_DIR]
#
# Builds MPQUIC (qdeconinck/mp-quic, branch conext17: the multipath QUIC of
# the CoNEXT'17 paper and De Coninck's thesis, a 2017 fork of quic-go) with
# the Go at hand: its example server (example/main.go) and client
# (example/client_benchmarker), from local source trees (checkouts or `git
# archive` exports) of it and of the four modules it needs that the Go
# module proxy no longer serves:
#
#   MPQUIC_SRC   github.com/qdeconinck/mp-quic, branch conext17 (582326c)
#   MINT_SRC     github.com/bifurcation/mint at 5fe9fca (4 October 2017)
#   AES12_SRC    github.com/lucas-clemente/aes12 at cd47fb3
#   FNV128A_SRC  github.com/lucas-clemente/fnv128a at 393af48
#   CERTS_SRC    github.com/lucas-clemente/quic-go-certificates at d2f8652
#
# MPQUIC predates Go modules; the script copies the trees to OUT_DIR/src,
# gives each a go.mod (MPQUIC's names itself github.com/lucas-clemente/
# quic-go, as its imports do, and points at the others), takes
# golang.org/x/crypto, x/net, x/text, x/sys, hashicorp/golang-lru and
# aead/chacha20 at the versions below from the module proxy, and builds.
# The binaries and the example's certificate (fullchain.pem, privkey.pem:
# the client does not verify it) end up in OUT_DIR (default
# ./mp-quic-build), which conext17.py's --bin names; the script prints
# OUT_DIR last.
set -eu

if [ $# -lt 5 ] || [ $# -gt 6 ]; then
	echo "usage: $0 MPQUIC_SRC MINT_SRC AES12_SRC FNV128A_SRC CERTS_SRC [OUT_DIR]" >&2
	exit 2
fi
abs() { (cd "$1" && pwd); }
for d in "$1" "$2" "$3" "$4" "$5"; do
	[ -d "$d" ] || { echo "$0: $d: no such directory" >&2; exit 2; }
done
[ -f "$1/path_manager.go" ] && [ -f "$1/example/client_benchmarker/main.go" ] ||
	{ echo "$0: $1 is not an mp-quic source tree (no path_manager.go, example/client_benchmarker)" >&2; exit 2; }
[ -f "$2/conn.go" ] && [ -d "$2/syntax" ] || { echo "$0: $2 is not a mint source tree" >&2; exit 2; }
[ -f "$3/aes_gcm.go" ] || { echo "$0: $3 is not an aes12 source tree" >&2; exit 2; }
[ -f "$4/fnv128a.go" ] || { echo "$0: $4 is not an fnv128a source tree" >&2; exit 2; }
[ -f "$5/cert_set_2.go" ] || { echo "$0: $5 is not a quic-go-certificates source tree" >&2; exit 2; }
command -v go >/dev/null || { echo "$0: go not found" >&2; exit 2; }

out=${6:-mp-quic-build}
mkdir -p "$out"
out=$(abs "$out")
src=$out/src
rm -rf "$src"
mkdir -p "$src"

# copy DIR NAME MODULE: DIR's tree as $src/NAME, with a go.mod naming
# MODULE when it has none.
copy() {
	cp -R "$1" "$src/$2"
	rm -rf "$src/$2/.git"
	[ -f "$src/$2/go.mod" ] || printf 'module %s\n\ngo 1.12\n' "$3" >"$src/$2/go.mod"
}
copy "$1" mp-quic github.com/lucas-clemente/quic-go
copy "$2" mint github.com/bifurcation/mint
copy "$3" aes12 github.com/lucas-clemente/aes12
copy "$4" fnv128a github.com/lucas-clemente/fnv128a
copy "$5" certificates github.com/lucas-clemente/quic-go-certificates

cat >"$src/mp-quic/go.mod" <<'EOF'
module github.com/lucas-clemente/quic-go

go 1.21

require (
	github.com/aead/chacha20 v0.0.0-20180709150244-8b13a72661da
	github.com/bifurcation/mint v0.0.0
	github.com/hashicorp/golang-lru v1.0.2
	github.com/lucas-clemente/aes12 v0.0.0
	github.com/lucas-clemente/fnv128a v0.0.0
	github.com/lucas-clemente/quic-go-certificates v0.0.0
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

replace (
	github.com/bifurcation/mint => ../mint
	github.com/lucas-clemente/aes12 => ../aes12
	github.com/lucas-clemente/fnv128a => ../fnv128a
	github.com/lucas-clemente/quic-go-certificates => ../certificates
)
EOF

cd "$src/mp-quic"
log=$out/build.log
if ! GOFLAGS=-mod=mod go build -o "$out/" ./example/ ./example/client_benchmarker >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "$0: go build failed (log: $log)" >&2
	exit 1
fi
cp example/fullchain.pem example/privkey.pem "$out/"
echo "$out"
