#!/bin/sh
# build.sh PICOQUIC_SRC PICOTLS_SRC OUT_DIR
#
# Builds pq_bulk (pq_bulk.c beside this file) twice, against picoquic as
# shipped (OUT_DIR/pq_bulk) and against picoquic acknowledging every second
# ack-eliciting packet, as RFC 9000 recommends and mpq does
# (OUT_DIR/pq_bulk_ack2). The libraries come from the interoperability
# build, interop/picoquic/build.sh, with the same source trees (picoquic
# d199d45 and picotls f07f1c8 are the ones it was verified with). The
# second build changes one function of a copy of picoquic's tree:
# picoquic_ack_gap_override_if_needed returns 2 (picoquic otherwise
# widens its ACK gap with the congestion window, to about one ACK for 90
# data packets here). A build already in OUT_DIR is reused. Runs under
# nice; JOBS sets make's parallelism (default 2).
set -eu
if [ $# -ne 3 ]; then
	echo "usage: $0 PICOQUIC_SRC PICOTLS_SRC OUT_DIR" >&2
	exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
interop=$here/../../../interop/picoquic/build.sh
pq=$(cd "$1" && pwd)
tls=$(cd "$2" && pwd)
mkdir -p "$3"
out=$(cd "$3" && pwd)

# lib DIR SRC: the interoperability build of SRC in DIR, once.
lib() {
	if [ ! -f "$1/picoquic/libpicoquic-core.a" ]; then
		nice -n 10 sh "$interop" "$2" "$tls" "$1" >/dev/null
	fi
}

# link BIN DIR: pq_bulk against the libraries in DIR.
link() {
	nice -n 10 cc -O2 -o "$1" "$here/pq_bulk.c" -I"$pq/picoquic" -I"$2/picotls-src/include" -I"$tls/include" \
		"$2/picoquic/libpicoquic-core.a" "$2/picotls/libpicotls-openssl.a" \
		"$2/picotls/libpicotls-minicrypto.a" "$2/picotls/libpicotls-core.a" -lssl -lcrypto -lpthread -lm
}

lib "$out/shipped" "$pq"
link "$out/pq_bulk" "$out/shipped"

ack2=$out/picoquic-ack2-src
if [ ! -f "$ack2/picoquic/frames.c" ]; then
	rm -rf "$ack2"
	cp -R "$pq" "$ack2"
	# The line after the function's opening brace returns 2.
	awk '{ print } /^uint64_t picoquic_ack_gap_override_if_needed\(/ { f = 1; next } f && /^\{/ { print "    return 2;"; f = 0 }' \
		"$pq/picoquic/frames.c" >"$ack2/picoquic/frames.c"
	if ! grep -q '^    return 2;$' "$ack2/picoquic/frames.c"; then
		echo "$0: picoquic_ack_gap_override_if_needed not found in $pq/picoquic/frames.c" >&2
		exit 1
	fi
fi
lib "$out/ack2" "$ack2"
link "$out/pq_bulk_ack2" "$out/ack2"
echo "$out/pq_bulk"
echo "$out/pq_bulk_ack2"
