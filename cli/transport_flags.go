package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/internal/names"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/congestion"
	"github.com/mpq/mpq/scheduler"
)

// transportFlags are the connection options shared by serve and get.
type transportFlags struct {
	qlogDir       string
	keylog        string
	maxPacketSize int
	congestion    string
	pacing        bool
	pathSched     string
	streamSched   string
	idle          time.Duration
	handshake     time.Duration
	noMultipath   bool
	noGSO         bool
	abandonAfter  time.Duration
}

func (t *transportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.qlogDir, "qlog", "", "write a qlog trace (.sqlog) per connection into `DIR`")
	fs.StringVar(&t.keylog, "keylog", "", "append TLS secrets to `FILE` (NSS key log format, for Wireshark); SSLKEYLOGFILE works too")
	fs.IntVar(&t.maxPacketSize, "max-packet-size", 1350, "largest UDP payload to send, in `bytes` (1200 to 65527)")
	fs.StringVar(&t.congestion, "congestion", "newreno", "congestion controller `name` ("+strings.Join(congestion.Names(), ", ")+")")
	fs.BoolVar(&t.pacing, "pacing", true, "pace packets (RFC 9002 Section 7.7); experiment files default to no pacing")
	fs.StringVar(&t.pathSched, "path-scheduler", scheduler.DefaultPath, "path scheduler `name` ("+strings.Join(scheduler.PathSchedulers(), ", ")+")")
	fs.StringVar(&t.streamSched, "stream-scheduler", scheduler.DefaultStream, "stream scheduler `name` ("+strings.Join(scheduler.StreamSchedulers(), ", ")+")")
	fs.DurationVar(&t.idle, "idle-timeout", 30*time.Second, "idle timeout")
	fs.DurationVar(&t.handshake, "handshake-timeout", 10*time.Second, "give up a handshake not done within this `duration` (the server counts from the client's first packet, the client from the last packet it received)")
	fs.BoolVar(&t.noMultipath, "no-multipath", false, "do not offer the multipath extension: plain QUIC v1 on one path (for dissectors that do not know its frames)")
	fs.DurationVar(&t.abandonAfter, "path-abandon-after", 0, "abandon a path that stayed failed (broken while another path works) for this `duration`; 0 never does")
	fs.BoolVar(&t.noGSO, "no-gso", false, "send every datagram with its own write, not in UDP GSO batches (for packet captures on lo)")
}

// check returns every problem with the names given by flags.
func (t *transportFlags) check() []string {
	var probs []string
	for _, c := range []struct {
		flag, what, name string
		known            []string
	}{
		{"--congestion", "congestion controller", t.congestion, congestion.Names()},
		{"--path-scheduler", "path scheduler", t.pathSched, scheduler.PathSchedulers()},
		{"--stream-scheduler", "stream scheduler", t.streamSched, scheduler.StreamSchedulers()},
	} {
		if msg := names.Check(c.what, c.name, c.known); msg != "" {
			probs = append(probs, c.flag+": "+msg)
		}
	}
	if t.maxPacketSize < 1200 || t.maxPacketSize > 65527 {
		probs = append(probs, fmt.Sprintf("--max-packet-size %d: must be between 1200 and 65527 bytes (the UDP payload limits of QUIC and IPv6)", t.maxPacketSize))
	}
	if t.handshake <= 0 {
		probs = append(probs, fmt.Sprintf("--handshake-timeout %v must be positive", t.handshake))
	}
	if t.abandonAfter < 0 {
		probs = append(probs, fmt.Sprintf("--path-abandon-after %v must not be negative", t.abandonAfter))
	}
	if t.idle < 0 {
		probs = append(probs, fmt.Sprintf("--idle-timeout %v must not be negative", t.idle))
	}
	return probs
}

// traceFlushWait bounds how long the cleanup of config waits for qlog
// traces to be written: a connection closes its trace at the end of its
// closing period (three PTOs), after the command is otherwise done.
const traceFlushWait = 5 * time.Second

// config builds the connection configuration. The returned cleanup waits
// (boundedly) for the qlog traces of closed connections to be written and
// closes the key log; call it after closing the connections.
func (t *transportFlags) config(tc *tls.Config, stderr io.Writer) (*mpquic.Config, func(), error) {
	var keylog *os.File
	var traces *qlogfile.Dir
	cleanup := func() {
		if traces != nil && !traces.Wait(context.Background(), traceFlushWait) {
			fmt.Fprintln(stderr, "mpq: qlog: gave up waiting for traces to be written")
		}
		if keylog != nil {
			keylog.Close()
		}
	}
	if probs := t.check(); len(probs) > 0 {
		return nil, cleanup, errors.New(strings.Join(probs, "\n"))
	}
	tc.NextProtos = []string{hq.ALPN}
	if t.keylog != "" {
		f, err := os.OpenFile(t.keylog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, cleanup, fmt.Errorf("key log: %w", err)
		}
		tc.KeyLogWriter = f
		keylog = f
	}
	cfg := &mpquic.Config{
		TLS:              tc,
		MaxPacketSize:    t.maxPacketSize,
		Congestion:       t.congestion,
		Pacing:           t.pacing,
		PathScheduler:    t.pathSched,
		StreamScheduler:  t.streamSched,
		MaxIdleTimeout:   t.idle,
		HandshakeTimeout: t.handshake,
		DisableMultipath: t.noMultipath,
		PathAbandonAfter: t.abandonAfter,
		DisableGSO:       t.noGSO,
	}
	if t.qlogDir != "" {
		if err := os.MkdirAll(t.qlogDir, 0o755); err != nil {
			return nil, cleanup, fmt.Errorf("qlog directory: %w", err)
		}
		var mu sync.Mutex
		traces = qlogfile.NewDir(t.qlogDir, func(err error) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "mpq: %v\n", err)
		})
		cfg.Qlog = traces.Create
	}
	if _, err := cfg.Validate(); err != nil {
		return nil, cleanup, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "mpquic: "))
	}
	return cfg, cleanup, nil
}
