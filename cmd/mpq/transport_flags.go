package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
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
}

func (t *transportFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.qlogDir, "qlog", "", "write a qlog trace (.sqlog) per connection into `DIR`")
	fs.StringVar(&t.keylog, "keylog", "", "append TLS secrets to `FILE` (NSS key log format, for Wireshark); SSLKEYLOGFILE works too")
	fs.IntVar(&t.maxPacketSize, "max-packet-size", 1350, "largest UDP payload to send, in `bytes`")
	fs.StringVar(&t.congestion, "congestion", "newreno", "congestion controller `name`")
	fs.BoolVar(&t.pacing, "pacing", true, "pace packets (RFC 9002 Section 7.7)")
	fs.StringVar(&t.pathSched, "path-scheduler", "lowrtt", "path scheduler `name`")
	fs.StringVar(&t.streamSched, "stream-scheduler", "round-robin", "stream scheduler `name`")
	fs.DurationVar(&t.idle, "idle-timeout", 30*time.Second, "idle timeout")
}

// config builds the connection configuration.
func (t *transportFlags) config(tc *tls.Config) (*mpquic.Config, func(), error) {
	cleanup := func() {}
	tc.NextProtos = []string{hq.ALPN}
	if t.keylog != "" {
		f, err := os.OpenFile(t.keylog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, cleanup, fmt.Errorf("key log: %w", err)
		}
		tc.KeyLogWriter = f
		cleanup = func() { f.Close() }
	}
	cfg := &mpquic.Config{
		TLS:             tc,
		MaxPacketSize:   t.maxPacketSize,
		Congestion:      t.congestion,
		Pacing:          t.pacing,
		PathScheduler:   t.pathSched,
		StreamScheduler: t.streamSched,
		MaxIdleTimeout:  t.idle,
	}
	if t.qlogDir != "" {
		if err := os.MkdirAll(t.qlogDir, 0o755); err != nil {
			return nil, cleanup, fmt.Errorf("qlog directory: %w", err)
		}
		dir := t.qlogDir
		cfg.Qlog = func(vantage string, odcid []byte) io.WriteCloser {
			name := filepath.Join(dir, fmt.Sprintf("%x_%s.sqlog", odcid, vantage))
			f, err := os.Create(name)
			if err != nil {
				fmt.Fprintf(os.Stderr, "mpq: qlog: %v\n", err)
				return nil
			}
			return f
		}
	}
	if _, err := cfg.Validate(); err != nil {
		return nil, cleanup, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "mpquic: "))
	}
	return cfg, cleanup, nil
}
