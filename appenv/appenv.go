// Package appenv is the environment applications of the testbed (the traffic
// generator, test applications) program against: time, timers, and QUIC
// connections and streams with notifications. The same application code
// runs in the simulator (package appenv/simenv, on the virtual clock
// of network/netsim) and over real sockets (package appenv/udpenv, on
// package mpquic, or on a baseline transport: quic-go in appenv/quicgo,
// kernel TCP, TLS and MPTCP in appenv/kernelnet over appenv/bytemux, a
// connection per request in appenv/perconn). The implementations live
// beneath this package; this one holds the interfaces.
//
// # One event loop
//
// Every callback of an environment (timers, Dial completions, accepted
// connections and streams, readable and writable notifications, closes)
// runs on the environment's single event loop, one at a time: the
// simulator's loop in the simulation, one goroutine in the real-socket
// implementation. Applications therefore need no locks, and must call the
// methods of an environment and of its connections and streams only from
// that loop. Nothing blocks: Read and Write take or give what they can now
// and the notifications say when to try again.
//
// This package holds only the interfaces and has no dependencies, so that
// application code does not pull in a simulator or sockets.
package appenv

import (
	"errors"
	"time"
)

// Env is an application's view of time, scheduling and the network.
type Env interface {
	// Now is the current time: virtual in the simulator, the wall clock
	// over sockets. Measure durations as differences of Now.
	Now() time.Time
	// AfterFunc runs f on the event loop after d. The returned function
	// cancels it and reports whether it did (false: f already ran or was
	// cancelled before).
	AfterFunc(d time.Duration, f func()) (cancel func() bool)
	// Dial connects to the server at addr ("host:port") and calls done on
	// the loop with the connection once its handshake completed, or with
	// the error that ended the attempt.
	Dial(addr string, done func(Conn, error))
	// Listen accepts connections on addr ("host:port"; port 0 picks one
	// where the environment allows it) and calls accept on the loop with
	// each connection whose handshake completed, or, for a server that
	// accepts 0-RTT, that accepted it (its handshake completes later).
	Listen(addr string, accept func(Conn)) (Listener, error)
}

// EarlyDialer is implemented by environments whose connections can resume
// a session with 0-RTT (RFC 9001 Section 4.6).
type EarlyDialer interface {
	// DialEarly is Dial, except that done runs as soon as the connection
	// can carry 0-RTT data: at once when it resumes a session whose ticket
	// allows 0-RTT, after the handshake otherwise. Streams opened before
	// the handshake completes send their data in 0-RTT packets, which an
	// attacker can replay: dial early only for messages that are safe to
	// repeat. Data the server rejects in 0-RTT is sent again after the
	// handshake.
	DialEarly(addr string, done func(Conn, error))
}

// Listener is a listening address.
type Listener interface {
	// Addr is the address the listener accepts on ("host:port").
	Addr() string
	// Close stops accepting and closes the connections accepted through
	// the listener.
	Close() error
}

// Conn is an established QUIC connection.
type Conn interface {
	// OpenStream opens a bidirectional stream; it fails with an error
	// wrapping ErrStreamLimit while the peer's limit is reached.
	OpenStream() (Stream, error)
	// OpenUniStream opens a unidirectional (send-only) stream.
	OpenUniStream() (Stream, error)
	// OnStream sets the callback that receives the streams the peer opens;
	// streams that arrived before it was set are handed over on the loop
	// right after.
	OnStream(f func(Stream))
	// OnClosed sets the callback run once when the connection ends, with
	// the reason (nil is never passed: a local close reports its
	// application error). Streams fail from then on.
	OnClosed(f func(err error))
	// Close closes the connection with an application error code and
	// reason.
	Close(code uint64, reason string)
	// LocalAddr and RemoteAddr are the addresses of the connection's first
	// path ("host:port").
	LocalAddr() string
	RemoteAddr() string
}

// Stream is one QUIC stream. A stream the peer opened unidirectionally
// cannot be written, one we opened so cannot be read.
type Stream interface {
	// ID is the QUIC stream ID (RFC 9000 Section 2.1).
	ID() uint64
	// Read copies received data into p. It returns (0, nil) when nothing
	// is there yet, io.EOF once the peer's data ended, and another error
	// when the peer reset the stream or the connection ended.
	Read(p []byte) (int, error)
	// OnReadable sets the callback run on the loop when Read has something
	// new to return (data, the end or an error) after it returned (0,
	// nil), or, right after OnReadable, if it has something already. It
	// may run when Read still returns (0, nil); read until then.
	OnReadable(f func())
	// Write buffers (copies) as much of p as the stream admits now and
	// returns how much; after a short write the OnWritable callback says
	// when to write the rest. It fails once the peer stopped the stream or
	// the connection ended.
	Write(p []byte) (int, error)
	// OnWritable sets the callback run on the loop when a Write that took
	// less than offered can take more (or would fail). It may run
	// spuriously.
	OnWritable(f func())
	// Close ends the sending direction: a FIN follows the written data.
	Close() error
	// CancelWrite abandons sending with RESET_STREAM and an application
	// error code; CancelRead asks the peer to stop with STOP_SENDING.
	CancelWrite(code uint64)
	CancelRead(code uint64)
	// SetPriority sets the stream's priority flag, which priority stream
	// schedulers read.
	SetPriority(priority bool)
}

// Discarder is a Stream that can drop received data without copying it
// out (the simulator's, where copying what a bulk receiver only counts
// was a few percent of a saturated run). Discard(max) is Read of a
// buffer of max bytes in every respect but the copy. Sink tells the
// stream that the rest of it will be consumed with Discard only, so that
// it need not even keep what arrives (a Read that would return data
// fails from then on); it reports whether it took effect, and Discard
// returns the same either way.
type Discarder interface {
	Discard(max int) (int, error)
	Sink() bool
}

// ZeroWriter is a Stream that can send zero bytes without a buffer to
// copy them from (the simulator's, where a bulk sender's copies of its
// zeros into the send buffer and out of it were a tenth of a saturated
// run's critical path). WriteZeros(n) is Write of n zero bytes in every
// respect but the copies.
type ZeroWriter interface {
	WriteZeros(n int) (int, error)
}

// ErrStreamLimit is wrapped by OpenStream and OpenUniStream errors while
// the peer's stream limit is reached.
var ErrStreamLimit = errors.New("env: peer's stream limit reached")
