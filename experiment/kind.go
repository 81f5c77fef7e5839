package experiment

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Transport kinds (transport.kind).
const (
	// KindMPQ is this project's multipath QUIC (package mpquic).
	KindMPQ = "mpq"
	// KindQuicGo is quic-go, a second QUIC implementation, single path.
	KindQuicGo = "quic-go"
	// KindTCP, KindTLS and KindMPTCP are the kernel's TCP, TLS 1.3 over
	// it (crypto/tls) and the kernel's MPTCP, the streams framed on one
	// connection.
	KindTCP   = "tcp"
	KindTLS   = "tls"
	KindMPTCP = "mptcp"
)

// Connection modes (transport.connection).
const (
	// ConnectionShared carries every message on one connection.
	ConnectionShared = "shared"
	// ConnectionPerRequest opens a new connection for each message of
	// the client and closes it once the reply arrived, as HTTP/1.0
	// clients, reference 001's downloads and reference 003's MQTT
	// client closed after one publish.
	ConnectionPerRequest = "per-request"
	// ConnectionPool keeps the client's connections open in a pool, as
	// an HTTP/1.1 client without pipelining (reference 000's): a message
	// goes on an idle connection of the pool (the most recently used),
	// else on a new one; one message at a time per connection; a
	// connection idle longer than transport.pool_idle_timeout, or beyond
	// transport.pool_max_idle idle ones, is closed.
	ConnectionPool = "pool"
)

// Defaults of the pool's keys: those of Go's net/http DefaultTransport
// (IdleConnTimeout 90 s; DefaultMaxIdleConnsPerHost 2), the HTTP/1.1
// client of Go, in which reference 000 wrote its clients.
const (
	DefaultPoolIdleTimeout = 90 * time.Second
	DefaultPoolMaxIdle     = 2
)

// ConnectionModes lists the values of transport.connection.
func ConnectionModes() []string {
	return []string{ConnectionShared, ConnectionPerRequest, ConnectionPool}
}

// perRequestKinds are the source kinds whose messages can each take a
// connection of their own: a client's request and the reply to it.
var perRequestKinds = []string{KindRequestResponse, KindFile, KindStopAndWait}

// TransportKinds lists the transport kinds.
func TransportKinds() []string { return []string{KindMPQ, KindQuicGo, KindTCP, KindTLS, KindMPTCP} }

// Kernel reports whether a kind is a kernel transport (TCP, TLS, MPTCP).
func Kernel(kind string) bool { return kind == KindTCP || kind == KindTLS || kind == KindMPTCP }

// mpqOnlyKeys are the transport keys that configure mpq alone.
var mpqOnlyKeys = []string{"path_scheduler", "scheduler_options", "stream_scheduler", "congestion", "newreno_growth", "slow_start",
	"max_packet_size", "pacing", "initial_rtt", "path_failure", "path_abandon_after", "receive_window", "initial_receive_window", "conn_window_follows_stream", "zero_rtt", "repair",
	"sim_null_protection"}

var congestionName = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)

// checkKind refuses the combinations of a transport kind that mean
// nothing: keys of mpq's alone, a backend that cannot carry the kind,
// several paths for a single-path transport, announcements to a path
// scheduler the transport does not have. tt is the transport table (nil:
// none, kind mpq).
func checkKind(root, tt *table, e *Experiment) {
	k := e.Transport.Kind
	if tt == nil || tt.failed["kind"] {
		return
	}
	if _, given := tt.m["tcp_congestion"]; given {
		if !Kernel(k) {
			tt.fail("tcp_congestion", "the kernel's congestion controller applies to kind tcp, tls and mptcp, not %q", k)
		} else if !congestionName.MatchString(e.Transport.TCPCongestion) {
			tt.fail("tcp_congestion", "%q is not a kernel congestion controller's name (see /proc/sys/net/ipv4/tcp_available_congestion_control)", e.Transport.TCPCongestion)
		}
	}
	checkConnection(root, tt, e)
	if k == KindMPQ {
		return
	}
	for _, key := range mpqOnlyKeys {
		if _, given := tt.m[key]; given {
			tt.fail(key, "configures mpq; kind %q has no such setting (see docs/reference/transports.md, Baseline transports)", k)
		}
	}
	switch e.Backend {
	case BackendSim:
		tt.fail("kind", "%q does not run in the simulator (no user-space %s on its virtual clock): use backend = \"netns\" (as root)%s", k, k, loopbackHint(k))
	case BackendLoopback:
		if k != KindQuicGo {
			tt.fail("kind", "%q does not run on the loopback backend, whose emulator relays UDP datagrams: use backend = \"netns\" (as root)", k)
		}
	}
	if k != KindMPTCP && e.Transport.Multipath && len(e.Paths) > 1 {
		tt.fail("kind", "%q is a single-path transport: give one [[path]], or multipath = false (then path 0 alone carries it)", k)
	}
	// announce defaults to priority: refused only where the file says so.
	arr, _ := root.m["source"].([]any)
	for i := range e.Sources {
		if i < len(arr) {
			if m, ok := arr[i].(map[string]any); ok && m["announce"] == true {
				root.d.table("source."+strconv.Itoa(i), m, root.errs).fail("announce", "announcements go to mpq's path scheduler; kind %q has none", k)
			}
		}
		e.Sources[i].Announce = false
	}
	if len(e.Competitors) > 0 {
		root.fail("competitor", "competitors run beside kind mpq only, not %q", k)
	}
	if e.Output.Qlog {
		root.d.table("output", nil, root.errs).fail("qlog", "qlog traces come from mpq; kind %q writes none", k)
	}
}

func loopbackHint(k string) string {
	if k == KindQuicGo {
		return " or \"loopback\""
	}
	return ""
}

// checkConnection refuses transport.connection = "per-request" and
// "pool" where they mean nothing: over mpq (whose one connection resumes
// with 0-RTT instead, transport.zero_rtt) and with sources that are not a
// client's requests; and the pool's keys without the pool.
func checkConnection(root, tt *table, e *Experiment) {
	mode := e.Transport.Connection
	if mode != ConnectionPool {
		for _, key := range []string{"pool_idle_timeout", "pool_max_idle"} {
			if _, given := tt.m[key]; given {
				tt.fail(key, "configures transport.connection = %q, not %q", ConnectionPool, mode)
			}
		}
	}
	if mode == ConnectionShared || tt.failed["connection"] {
		return
	}
	if e.Transport.Kind == KindMPQ {
		tt.fail("connection", "%q is built for the baselines (quic-go, tcp, tls, mptcp), not kind mpq (whose connection resumes with transport.zero_rtt)", mode)
		return
	}
	for _, s := range e.Sources {
		if !slices.Contains(perRequestKinds, s.Kind) {
			tt.fail("connection", "%q needs sources of a client's requests (%s): source %q is %s", mode,
				strings.Join(perRequestKinds, ", "), s.Name, s.Kind)
			return
		}
	}
}
