#!/bin/bash
# Startup script of the mpq CloudLab profile (profile.py) and the Emulab NS
# file (mpq.ns): installs Go (version $1, default 1.26.0), builds mpq from
# the repository this script is in into /usr/local/bin/mpq, and makes sure
# chrony keeps the clock synchronised (completion times span both hosts'
# clocks). It logs what it does and may run again.
set -euo pipefail
GO_VERSION="${1:-1.26.0}"
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
ARCH="$(uname -m)"
case "$ARCH" in
  x86_64) GOARCH=amd64 ;;
  aarch64) GOARCH=arm64 ;;
  *) echo "setup.sh: unsupported architecture $ARCH" >&2; exit 1 ;;
esac
export DEBIAN_FRONTEND=noninteractive

echo "== chrony"
if ! command -v chronyc >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq chrony
fi
systemctl enable --now chrony 2>/dev/null || systemctl enable --now chronyd 2>/dev/null || true
chronyc -a makestep || true
chronyc tracking || true

echo "== Go $GO_VERSION"
if ! /usr/local/go/bin/go version 2>/dev/null | grep -q "go$GO_VERSION "; then
  curl -fsSL "https://go.dev/dl/go$GO_VERSION.linux-$GOARCH.tar.gz" -o /tmp/go.tgz
  rm -rf /usr/local/go
  tar -C /usr/local -xzf /tmp/go.tgz
  rm /tmp/go.tgz
fi
/usr/local/go/bin/go version

echo "== mpq from $REPO"
cd "$REPO"
GOFLAGS=-buildvcs=false HOME="${HOME:-/root}" /usr/local/go/bin/go build -o /usr/local/bin/mpq ./cmd/mpq
/usr/local/bin/mpq --version
echo "== ready"
