#!/bin/sh
# pgo.sh writes cmd/mpq/default.pgo, the CPU profile that go build and
# go install use for profile-guided optimisation of mpq (-pgo=auto; build
# with -pgo=off to leave it out). The profile is of the simulator's hot
# path: a saturated two-path bulk transfer (experiments/speed-2x100.toml,
# four runs) and the quickstart's messages beside bulk data
# (experiments/quickstart.toml), each run with a binary built without PGO,
# merged into one profile. Run from anywhere in the checkout:
#
#	sh cmd/mpq/pgo.sh
set -eu
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
go build -pgo=off -o "$tmp/mpq" ./cmd/mpq
MPQ_CPUPROFILE="$tmp/speed.pprof" "$tmp/mpq" run experiments/speed-2x100.toml --repeat 4 --parallel 1 --out "$tmp/speed" >/dev/null
MPQ_CPUPROFILE="$tmp/quick.pprof" "$tmp/mpq" run experiments/quickstart.toml --out "$tmp/quick" >/dev/null
go tool pprof -proto "$tmp/speed.pprof" "$tmp/quick.pprof" >"$tmp/default.pgo"
mv "$tmp/default.pgo" cmd/mpq/default.pgo
echo "wrote cmd/mpq/default.pgo"
