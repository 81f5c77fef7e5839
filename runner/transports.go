package runner

import (
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"time"

	quic "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/kernelnet"
	"github.com/mpq/mpq/appenv/perconn"
	"github.com/mpq/mpq/appenv/quicgo"
	"github.com/mpq/mpq/appenv/udpenv"
	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/trafficgen"
)

// ends are the configurations of the ends an environment runs: a
// client's (Dial), a server's (Listen), or both on loopback.
type ends struct {
	client, server       *core.Config
	clientTLS, serverTLS *tls.Config
}

// envConfig is the udpenv configuration of the ends of a run over real
// sockets for the experiment's transport kind: mpq with the ends' core
// configurations, or a baseline (quic-go, the kernel's TCP, TLS, MPTCP)
// with their TLS configurations. For the baselines the bytes each
// stream hands to the transport go to rec (path 0) as the sending end's
// sent bytes, except MPTCP's, whose split over subflows only the kernel
// knows.
func envConfig(e *experiment.Experiment, c ends, local string, rec func() *trafficgen.Recorder) (udpenv.Config, error) {
	uc := udpenv.Config{LocalAddr: local}
	kind := e.Transport.Kind
	switch kind {
	case "", experiment.KindMPQ:
		uc.Client, uc.Server = c.client, c.server
		return uc, nil
	case experiment.KindQuicGo:
		uc.Transport = quicgo.New(quicgo.Config{ClientTLS: c.clientTLS, ServerTLS: c.serverTLS, QUIC: &quic.Config{
			MaxIncomingStreams: 1000, MaxIncomingUniStreams: 1000, MaxIdleTimeout: max(30*time.Second, e.Duration)}})
	default:
		if c.clientTLS != nil && c.serverTLS != nil {
			return uc, fmt.Errorf("kind %q runs its two ends in two processes (netns or two hosts)", kind)
		}
		tlsConf := c.clientTLS
		if tlsConf == nil {
			tlsConf = c.serverTLS
		}
		tr, err := kernelnet.New(kernelnet.Config{Kind: kind, TLS: tlsConf, Congestion: e.Transport.TCPCongestion})
		if err != nil {
			return uc, err
		}
		uc.Transport = tr
	}
	switch e.Transport.Connection {
	case experiment.ConnectionPerRequest:
		uc.Transport = perconn.New(uc.Transport)
	case experiment.ConnectionPool:
		uc.Transport = perconn.NewPool(uc.Transport, perconn.PoolConfig{IdleTimeout: e.Transport.PoolIdleTimeout, MaxIdle: e.Transport.PoolMaxIdle})
	}
	if kind != experiment.KindMPTCP {
		uc.OnWritten = func(dialed bool, stream uint64, priority bool, n int) {
			side := "server"
			if dialed {
				side = "client"
			}
			if r := rec(); r != nil {
				r.Observer(side).StreamDataSent(time.Now(), 0, stream, priority, n)
			}
		}
	}
	return uc, nil
}

// transportOf returns the connection of the baseline transport under an
// environment's connection (nil for mpq's); with transport.connection =
// "per-request" the first of its connections.
func transportOf(c appenv.Conn) udpenv.TransportConn {
	t, ok := c.(interface{ Transport() udpenv.TransportConn })
	if !ok {
		return nil
	}
	tc := t.Transport()
	if s, ok := tc.(interface{ Sample() udpenv.TransportConn }); ok {
		return s.Sample()
	}
	return tc
}

// connectionsOf is the number of connections under an environment's
// connection: those a per-request connection opened or accepted, else 1
// (0 without a connection).
func connectionsOf(c appenv.Conn) int {
	if c == nil {
		return 0
	}
	if t, ok := c.(interface{ Transport() udpenv.TransportConn }); ok {
		if n, ok := t.Transport().(interface{ Connections() int }); ok {
			return n.Connections()
		}
	}
	return 1
}

// maxConnectionsOf is the largest number of connections a client's
// per-request or pooled connection had open at once (0 for the others).
func maxConnectionsOf(c appenv.Conn) int {
	if t, ok := c.(interface{ Transport() udpenv.TransportConn }); ok {
		if p, ok := t.Transport().(interface{ PoolStats() perconn.PoolStats }); ok {
			return p.PoolStats().MaxOpen
		}
	}
	return 0
}

// kernelInfo is the kernel release and the congestion controller the
// kernel runs on a connection of the kernel's transports ("", "" for
// others).
func kernelInfo(c appenv.Conn) (kernel, congestion string) {
	kc, ok := transportOf(c).(*kernelnet.Conn)
	if !ok {
		return "", ""
	}
	return KernelRelease(), kc.Congestion()
}

// kindOf names the transport a connection actually runs (not the one
// the configuration asked for): summary.json's transport.kind comes from
// it.
func kindOf(c appenv.Conn) string {
	switch tc := transportOf(c).(type) {
	case *kernelnet.Conn:
		return tc.Kind()
	case *quicgo.Conn:
		return experiment.KindQuicGo
	case nil:
		if c == nil {
			return ""
		}
		if t, ok := c.(interface{ Transport() udpenv.TransportConn }); ok {
			if _, ok := t.Transport().(interface{ Sample() udpenv.TransportConn }); ok {
				return "" // per-request, and no connection was made
			}
		}
	}
	return experiment.KindMPQ
}

// KernelRelease is the running kernel's release (uname -r).
func KernelRelease() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
