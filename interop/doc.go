// Package interop holds interoperability tests of mpquic against QUIC
// stacks written by others, in other languages: noq-peer (a Rust Cargo
// project in this directory, on the `noq` crate) speaks hq-interop with
// the multipath extension, and noq_test.go runs it against our client and
// server over loopback. The tests build the peer with cargo and skip when
// cargo is not installed; build output goes to interop/target.
// picoquic_test.go runs picoquic's picoquicdemo (C) against our client and
// server, single path, multipath and with the client changing address; it
// is opt-in (MPQ_PICOQUIC names the binary, which picoquic/build.sh builds
// from local source trees) and skips otherwise. mp-quic/ builds and runs
// MPQUIC, the multipath QUIC of the CoNEXT'17 paper (Google QUIC of 2017,
// no peer of ours), on the CoNEXT'17 design in the namespace testbed, to
// set its results beside mpq's.
package interop
