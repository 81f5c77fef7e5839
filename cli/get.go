package cli

import (
	"bytes"
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
	"strconv"
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
	fs.StringVar(&o.path, "path", "", "the file to fetch, by `PATH`, e.g. /index.html (required)")
	fs.StringVar(&o.out, "out", "", "write the body to `FILE` (default: discard)")
	fs.StringVar(&o.ca, "ca", "", "verify the server with the PEM certificates in `FILE` (default: accept any certificate, as for self-signed servers)")
	fs.StringVar(&o.sni, "sni", "", "the TLS server `NAME` (default: the host of --addr)")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up after this long")
	fs.StringVar(&o.sessionCache, "session-cache", "", "keep the server's session tickets in `FILE` (mpq's own format) and resume the session the next time")
	fs.BoolVar(&o.zeroRTT, "0rtt", false, "send the request in 0-RTT when --session-cache holds a ticket of the server that allows it (the server needs --0rtt); a request in 0-RTT can be replayed by an attacker")
	fs.Var(&o.locals, "local", "local `ADDR` (host or host:port) to send from; repeat it to use one path per address (multipath)")
	fs.StringVar(&o.expectSHA, "expect-sha256", "", "fail (exit 1, no --out file) unless the body's SHA-256 is `HEX` (64 hexadecimal digits)")
	o.expectSize = -1 // none
	fs.Func("expect-size", "fail (exit 1, no --out file) unless the body is `N` bytes long", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a byte count, 0 or more")
		}
		o.expectSize = n
		return nil
	})
	fs.BoolVar(&o.verify, "verify", false, "first fetch the server's checksum of the file (GET /FILE.sha256, which mpq serve publishes) and fail (exit 1, no --out file) unless the body matches it")
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
	// The checks of the body: expectSHA as given, expectSize -1 for
	// none; verify fetches the server's checksum.
	expectSHA  string
	expectSize int64
	verify     bool
}

// expectation is what a download must match: a SHA-256 and a size, each
// optional. Several (the command line's and the server's checksum) must
// all hold.
type expectation struct {
	sha     *[32]byte
	size    int64 // -1: any
	shaFrom string
	sizeOf  string
}

// addSum adds the server's checksum to e: it must agree with what e
// already expects.
func (e *expectation) addSum(s hq.Sum, from string) error {
	if e.sha != nil && *e.sha != s.SHA256 {
		return fmt.Errorf("%s gives SHA-256 %x, %s %x", from, s.SHA256, e.shaFrom, *e.sha)
	}
	if s.Size >= 0 && e.size >= 0 && s.Size != e.size {
		return fmt.Errorf("%s gives %d bytes, %s %d", from, s.Size, e.sizeOf, e.size)
	}
	if e.sha == nil {
		h := s.SHA256
		e.sha, e.shaFrom = &h, from
	}
	if e.size < 0 && s.Size >= 0 {
		e.size, e.sizeOf = s.Size, from
	}
	return nil
}

// check compares a body of n bytes and SHA-256 sum with e.
func (e *expectation) check(p string, n int64, sum []byte) error {
	if e.size >= 0 && n != e.size {
		return fmt.Errorf("%s: %d bytes, %s %d: nothing written", p, n, e.sizeOf, e.size)
	}
	if e.sha != nil && !bytes.Equal(sum, e.sha[:]) {
		return fmt.Errorf("%s: SHA-256 %x, %s %x: nothing written", p, sum, e.shaFrom, *e.sha)
	}
	return nil
}

// sizeGuard fails a write that takes the body beyond max bytes (-1: no
// limit), so that a body longer than expected stops early.
type sizeGuard struct {
	w    io.Writer
	n    int64
	max  int64
	from string // what expects max
}

func (g *sizeGuard) Write(b []byte) (int, error) {
	if g.max >= 0 && g.n+int64(len(b)) > g.max {
		return 0, fmt.Errorf("more than the %d bytes of %s: nothing written", g.max, g.from)
	}
	g.n += int64(len(b))
	return g.w.Write(b)
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
	exp := &expectation{size: o.expectSize}
	if o.expectSize >= 0 {
		exp.sizeOf = "--expect-size"
	}
	if o.expectSHA != "" {
		h, err := hq.ParseSHA256(o.expectSHA)
		if err != nil {
			fmt.Fprintf(stderr, "mpq get: --expect-sha256: %v\n", err)
			return exitUsage
		}
		exp.sha, exp.shaFrom = &h, "--expect-sha256"
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
	res, err := get(ctx, o.addr, o.path, dst, o.sni, o.timeout, cfg, locals, cache, exp, o.verify)
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
// commits once the whole body arrived and matched exp. With verify it
// first fetches the server's checksum of p (p.sha256) and adds it to exp.
// With several local addresses it opens one path from each. With a
// session cache it keeps the server's ticket there, and with
// cfg.Allow0RTT it dials early: the request goes in 0-RTT when the cache
// holds a ticket that allows it.
func get(ctx context.Context, addr, p string, dst *outFile, sni string, timeout time.Duration, cfg *mpquic.Config, locals []string, cache *fileSessionCache, exp *expectation, verify bool) (*getResult, error) {
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
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if verify {
		if err := fetchSum(ctx, c, p, exp, cfg.Allow0RTT); err != nil {
			return nil, err
		}
	}
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
	w = &sizeGuard{w: w, max: exp.size, from: exp.sizeOf}
	stop := context.AfterFunc(ctx, func() { s.SetReadDeadline(time.Now()) })
	defer stop()
	n, err := hq.Get(ctx, s, p, w)
	if err != nil {
		s.CancelRead(0)
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
	sum := h.Sum(nil)
	if err := exp.check(p, n, sum); err != nil {
		return nil, err
	}
	if dst != nil {
		if err := dst.commit(); err != nil {
			return nil, err
		}
	}
	res := &getResult{OK: true, Bytes: n, SHA256: hex.EncodeToString(sum),
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

// fetchSum fetches the server's checksum of p on its own stream of c and
// adds it to exp.
func fetchSum(ctx context.Context, c *mpquic.Conn, p string, exp *expectation, early bool) error {
	var s *mpquic.Stream
	var err error
	if early {
		s, err = c.OpenEarlyStream(true)
	} else {
		s, err = c.OpenStreamSync(ctx)
	}
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { s.SetReadDeadline(time.Now()) })
	defer stop()
	sum, err := hq.GetSum(ctx, s, p)
	if err != nil {
		var se *qerr.StreamError
		if errors.As(err, &se) && se.Remote && se.Code == hq.ErrorNotFound {
			return fmt.Errorf("--verify: the server publishes no checksum of %s (%s%s not found)", p, p, hq.SumSuffix)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return fmt.Errorf("--verify: %s%s: %w", p, hq.SumSuffix, err)
	}
	return exp.addSum(sum, p+hq.SumSuffix)
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
