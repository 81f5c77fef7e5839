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
# The module proxy: $GOPROXY, else a GOPROXY= line of /etc/environment
# (where a site behind a mirror sets it; sudo does not pass it on), else
# Go's default.
if [ -z "${GOPROXY:-}" ] && [ -r /etc/environment ]; then
  GOPROXY=$(sed -n 's/^GOPROXY=["'"'"']\{0,1\}\([^"'"'"']*\).*/\1/p' /etc/environment | tail -n 1)
fi
export GOPROXY="${GOPROXY:-https://proxy.golang.org,direct}"
if ! /usr/local/go/bin/go version 2>/dev/null | grep -q "go$GO_VERSION "; then
  rm -rf /tmp/go.tgz /tmp/go.zip /tmp/go-unzip
  if curl -fsSL --connect-timeout 20 "https://go.dev/dl/go$GO_VERSION.linux-$GOARCH.tar.gz" -o /tmp/go.tgz; then
    rm -rf /usr/local/go
    tar -C /usr/local -xzf /tmp/go.tgz
  else
    # go.dev is out of reach: the same toolchain from the module proxy
    # (the module the go command's GOTOOLCHAIN switching downloads).
    proxy=${GOPROXY%%,*}
    proxy=${proxy%%|*}
    case $proxy in http://*|https://*) ;; *) echo "setup.sh: go.dev unreachable and GOPROXY=$GOPROXY names no proxy" >&2; exit 1 ;; esac
    mod="golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-$GOARCH"
    echo "go.dev unreachable: $mod from $proxy"
    curl -fsSL --connect-timeout 20 "$proxy/golang.org/toolchain/@v/v0.0.1-go$GO_VERSION.linux-$GOARCH.zip" -o /tmp/go.zip
    command -v unzip >/dev/null 2>&1 || { apt-get update -qq; apt-get install -y -qq unzip; }
    mkdir /tmp/go-unzip
    unzip -q /tmp/go.zip -d /tmp/go-unzip
    rm -rf /usr/local/go
    mv "/tmp/go-unzip/$mod" /usr/local/go
  fi
  rm -rf /tmp/go.tgz /tmp/go.zip /tmp/go-unzip
fi
/usr/local/go/bin/go version

echo "== mpq from $REPO"
cd "$REPO"
GOFLAGS=-buildvcs=false HOME="${HOME:-/root}" /usr/local/go/bin/go build -o /usr/local/bin/mpq ./cmd/mpq
/usr/local/bin/mpq --version
echo "== ready"
