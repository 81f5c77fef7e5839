// Package internal holds the small utilities the rest of mpq shares, one
// package each, none of them part of the public API: atomicfile (result
// files written under a temporary name and renamed), buildinfo (which mpq
// and which machine produced a result), certs (TLS certificates for
// experiments and tests), hq (the hq-interop protocol of mpq serve and
// mpq get), names (name checks with did-you-mean), qlogfile and qlogcheck
// (writing and checking qlog traces), and schedlag (whether the machine
// can keep time now, for real-time tests).
//
// This package itself holds no code.
package internal
