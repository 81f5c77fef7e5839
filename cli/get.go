package cli

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/qerr"
)

// getResult is the JSON line mpq get prints.
type getResult struct {
	OK          bool    `json:"ok"`
	Bytes       int64   `json:"bytes"`
	SHA256      string  `json:"sha256"`
	HandshakeMS float64 `json:"handshake_ms"`
	TotalMS     float64 `json:"total_ms"`
	// With --session-cache: whether the connection resumed a stored
	// session, and with --0rtt what became of the request sent in 0-RTT
	// ("accepted", "rejected": sent again after the handshake; absent
	// without a ticket allowing it).
	Resumed bool   `json:"resumed,omitempty"`
	ZeroRTT string `json:"zero_rtt,omitempty"`
	// With several --local addresses:
	Multipath bool         `json:"multipath,omitempty"`
	Paths     []pathResult `json:"paths,omitempty"`
}

// pathResult is one path of a multipath download.
type pathResult struct {
	ID            uint64  `json:"id"`
	Local         string  `json:"local"`
	Remote        string  `json:"remote"`
	BytesSent     uint64  `json:"bytes_sent"`
	BytesReceived uint64  `json:"bytes_received"`
	SRTTMS        float64 `json:"srtt_ms"`
	State         string  `json:"state"`
}

// localAddrs is the repeatable --local flag.
type localAddrs []string

func (l *localAddrs) String() string { return strings.Join(*l, ",") }
func (l *localAddrs) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// setupGet registers get's flags; the command downloads one file and
// prints its JSON summary; cancelling ctx aborts the download.
func setupGet(fs *flag.FlagSet) runFunc {
	var o getOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:4433", "server `HOST:PORT`")
	fs.StringVar(&o.path, "path", "", "file to fetch, e.g. /index.html (required)")
	fs.StringVar(&o.out, "out", "", "write the body to `FILE` (default: discard)")
	fs.StringVar(&o.ca, "ca", "", "verify the server with the PEM certificates in `FILE` (default: accept any certificate, as for self-signed servers)")
	fs.StringVar(&o.sni, "sni", "", "TLS server name (default: the host of --addr)")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up after this long")
	fs.StringVar(&o.sessionCache, "session-cache", "", "keep the server's session tickets in `FILE` (mpq's own format) and resume the session the next time")
	fs.BoolVar(&o.zeroRTT, "0rtt", false, "send the request in 0-RTT when --session-cache holds a ticket of the server that allows it (the server needs --0rtt); a request in 0-RTT can be replayed by an attacker")
	fs.Var(&o.locals, "local", "local `ADDR` (host or host:port) to send from; repeat it to use one path per address (multipath)")
	o.tf.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if !noArgs("get", args, stderr) {
			return exitUsage
		}
		return runGet(ctx, &o, stdout, stderr)
	}
}

// getOptions are get's flags.
type getOptions struct {
	addr, path, out, ca, sni string
	sessionCache             string
	zeroRTT                  bool
	timeout                  time.Duration
	locals                   localAddrs
	tf                       transportFlags
}

// runGet downloads one file and prints its JSON summary.
func runGet(ctx context.Context, o *getOptions, stdout, stderr io.Writer) int {
	if o.path == "" {
		fmt.Fprintln(stderr, "mpq get: --path is required")
		return exitUsage
	}
	if o.tf.noMultipath && len(o.locals) > 1 {
		fmt.Fprintln(stderr, "mpq get: --no-multipath allows one path: give at most one --local")
		return exitUsage
	}
	if o.timeout <= 0 {
		fmt.Fprintf(stderr, "mpq get: --timeout %v must be positive\n", o.timeout)
		return exitUsage
	}
	if o.zeroRTT && len(o.locals) > 1 {
		fmt.Fprintln(stderr, "mpq get: --0rtt allows one path: give at most one --local")
		return exitUsage
	}
	if o.zeroRTT && o.sessionCache == "" {
		fmt.Fprintln(stderr, "mpq get: --0rtt needs --session-cache FILE (where the ticket of an earlier connection is kept)")
		return exitUsage
	}
	var cache *fileSessionCache
	if o.sessionCache != "" {
		var err error
		if cache, err = loadSessionCache(o.sessionCache); err != nil {
			fmt.Fprintf(stderr, "mpq get: --session-cache: %v\n", err)
			return exitUsage
		}
	}
	var dst *outFile
	if o.out != "" {
		// Fail before connecting when the output cannot be written.
		var err error
		if dst, err = createOut(o.out); err != nil {
			fmt.Fprintf(stderr, "mpq get: --out: %v\n", err)
			return exitUsage
		}
		defer dst.abort()
	}
	tc := &tls.Config{InsecureSkipVerify: true}
	if o.ca != "" {
		pem, err := os.ReadFile(o.ca)
		if err != nil {
			fmt.Fprintf(stderr, "mpq get: %v\n", err)
			return exitUsage
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "mpq get: no certificate in %s\n", o.ca)
			return exitUsage
		}
		tc = &tls.Config{RootCAs: pool}
	}
	if cache != nil {
		tc.ClientSessionCache = cache
	}
	cfg, cleanup, err := o.tf.config(tc, stderr)
	defer cleanup()
	if err != nil {
		printErr(stderr, "get", err)
		return exitUsage
	}
	cfg.Allow0RTT = o.zeroRTT
	locals := o.locals
	for i, l := range locals {
		if _, _, err := net.SplitHostPort(l); err != nil {
			locals[i] = net.JoinHostPort(l, "0")
		}
	}
	res, err := get(ctx, o.addr, o.path, dst, o.sni, o.timeout, cfg, locals, cache)
	if cache != nil {
		if serr := cache.save(); serr != nil {
			fmt.Fprintf(stderr, "mpq get: %v\n", serr)
			if err == nil {
				return exitFailure
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpq get: %v\n", err)
		return exitFailure
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	return 0
}

// ticketWait bounds how long get waits, after the download, for the
// server's session ticket that --session-cache keeps.
const ticketWait = 2 * time.Second

// get downloads p from the server at addr into dst, if not nil, which it
// commits once the whole body arrived. With several local addresses it
// opens one path from each. With a session cache it keeps the server's
// ticket there, and with cfg.Allow0RTT it dials early: the request goes
// in 0-RTT when the cache holds a ticket that allows it.
func get(ctx context.Context, addr, p string, dst *outFile, sni string, timeout time.Duration, cfg *mpquic.Config, locals []string, cache *fileSessionCache) (*getResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	opts := mpquic.DialOptions{ServerName: sni}
	if len(locals) > 0 {
		opts.LocalAddr = locals[0]
	}
	dial := mpquic.DialWithOptions
	if cfg.Allow0RTT {
		dial = mpquic.DialEarly
	}
	c, err := dial(ctx, addr, cfg, opts)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: no QUIC handshake within %v (is a server running there?)", addr, timeout)
		}
		return nil, err
	}
	defer c.Close()
	var s *mpquic.Stream
	hsDone := make(chan time.Duration, 1)
	if cfg.Allow0RTT {
		// The request's stream, in 0-RTT if the connection resumed
		// with a ticket that allows it (the handshake is then still
		// under way), else after the handshake. (One path: --0rtt
		// allows one --local.)
		if s, err = c.OpenEarlyStream(true); err != nil {
			return nil, err
		}
		go func() {
			select {
			case <-c.HandshakeComplete():
				hsDone <- time.Since(start)
			case <-ctx.Done():
			}
		}()
	} else {
		hsDone <- time.Since(start)
	}
	for _, l := range locals[min(1, len(locals)):] {
		if _, err := c.AddPath(ctx, l); err != nil {
			return nil, fmt.Errorf("path from %s: %w", l, err)
		}
	}
	if s == nil {
		if s, err = c.OpenStreamSync(ctx); err != nil {
			return nil, err
		}
	}
	h := sha256.New()
	var w io.Writer = h
	if dst != nil {
		w = io.MultiWriter(h, dst.f)
	}
	stop := context.AfterFunc(ctx, func() { s.SetReadDeadline(time.Now()) })
	defer stop()
	n, err := hq.Get(ctx, s, p, w)
	if err != nil {
		// hq-interop servers reset the stream of a missing file.
		var se *qerr.StreamError
		if errors.As(err, &se) && se.Remote && se.Code == hq.ErrorNotFound {
			return nil, fmt.Errorf("%s: not found on the server", p)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w after %d bytes", p, context.Cause(ctx), n)
		}
		return nil, err
	}
	total := time.Since(start)
	var hs time.Duration
	select {
	case hs = <-hsDone:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no QUIC handshake within %v", addr, timeout)
	}
	if dst != nil {
		if err := dst.commit(); err != nil {
			return nil, err
		}
	}
	res := &getResult{OK: true, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		HandshakeMS: ms(hs), TotalMS: ms(total)}
	if cache != nil {
		ed := c.EarlyData()
		res.Resumed = ed.Resumed
		switch {
		case ed.Accepted && ed.PacketsSent > 0:
			res.ZeroRTT = "accepted"
		case ed.Offered:
			res.ZeroRTT = "rejected"
		}
		// Wait a little for the server's new ticket if it has not come
		// with the download (Put signals stored).
		select {
		case <-cache.stored:
		case <-time.After(ticketWait):
		case <-ctx.Done():
		}
	}
	if len(locals) > 1 {
		res.Multipath = true
		for _, ps := range c.Paths() {
			res.Paths = append(res.Paths, pathResult{ID: ps.ID, Local: ps.Local.String(), Remote: ps.Remote.String(),
				BytesSent: ps.BytesSent, BytesReceived: ps.BytesReceived, SRTTMS: ms(ps.SmoothedRTT), State: ps.State})
		}
	}
	return res, nil
}

// outFile writes a download atomically: to a temporary file in the
// destination's directory, renamed to the destination once complete, so
// that the destination never holds a partial body.
type outFile struct {
	f    *os.File
	name string
	done bool
}

func createOut(name string) (*outFile, error) {
	dir := filepath.Dir(name)
	if st, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("directory %s does not exist", dir)
		}
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory", name)
	}
	removeStale(name, ".mpq-get-")
	f, err := os.CreateTemp(dir, "."+filepath.Base(name)+".mpq-get-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	// CreateTemp makes the file private; a download is an ordinary file.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &outFile{f: f, name: name}, nil
}

// commit flushes the file to disk and renames it to its destination.
func (o *outFile) commit() error {
	err := o.f.Sync()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(o.f.Name(), o.name)
	}
	if err != nil {
		os.Remove(o.f.Name())
		return fmt.Errorf("write %s: %w", o.name, err)
	}
	o.done = true
	return nil
}

// abort removes the temporary file unless the download was committed.
func (o *outFile) abort() {
	if o.done {
		return
	}
	o.f.Close()
	os.Remove(o.f.Name())
	o.done = true
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
