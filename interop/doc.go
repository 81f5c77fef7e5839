// Package interop holds interoperability tests of mpquic against QUIC
// stacks written by others, in other languages: noq-peer (a Rust Cargo
// project in this directory, on the `noq` crate) speaks hq-interop with
// the multipath extension, and noq_test.go runs it against our client and
// server over loopback. The tests build the peer with cargo and skip when
// cargo is not installed; build output goes to interop/target.
package interop
