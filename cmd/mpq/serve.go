package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// runServe serves files until ctx is cancelled, then closes every
// connection, waits for the request handlers and returns 0.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4433", "UDP `HOST:PORT` to listen on")
	root := fs.String("root", "", "serve files from `DIR` (required)")
	certFile := fs.String("cert", "", "PEM certificate `FILE` (default: self-signed)")
	keyFile := fs.String("key", "", "PEM private key `FILE`")
	retry := fs.Bool("retry", false, "validate every client address with Retry")
	retryAbove := fs.Int("retry-threshold", core.DefaultRetryThreshold, "validate new client addresses with Retry while `N` connections are in their handshake")
	maxHandshakes := fs.Int("max-handshakes", core.DefaultMaxHandshakes, "refuse new connections while `N` are in their handshake")
	maxConns := fs.Int("max-conns", core.DefaultMaxConns, "refuse new connections while `N` are open")
	resetKeyFile := fs.String("reset-key-file", "", "derive stateless reset tokens from the secret in `FILE` (at least 16 bytes), so that they survive restarts (default: from the certificate's key)")
	statsEvery := fs.Duration("stats-interval", 10*time.Second, "log the listener's counters every `DURATION` while they change (0: only at exit)")
	var tf transportFlags
	tf.register(fs)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *root == "" {
		fmt.Fprintln(stderr, "mpq serve: --root is required")
		return exitUsage
	}
	var err error
	if st, err := os.Stat(*root); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "mpq serve: --root %s is not a directory\n", *root)
		return exitUsage
	}
	for _, lim := range []struct {
		name string
		v    int
	}{{"--retry-threshold", *retryAbove}, {"--max-handshakes", *maxHandshakes}, {"--max-conns", *maxConns}} {
		if lim.v < 1 {
			fmt.Fprintf(stderr, "mpq serve: %s %d must be at least 1\n", lim.name, lim.v)
			return exitUsage
		}
	}
	if *statsEvery < 0 {
		fmt.Fprintf(stderr, "mpq serve: --stats-interval %v must not be negative\n", *statsEvery)
		return exitUsage
	}
	var resetKey []byte
	if *resetKeyFile != "" {
		resetKey, err = os.ReadFile(*resetKeyFile)
		if err != nil {
			fmt.Fprintf(stderr, "mpq serve: --reset-key-file: %v\n", err)
			return exitUsage
		}
		if len(resetKey) < 16 {
			fmt.Fprintf(stderr, "mpq serve: --reset-key-file %s: %d bytes, want at least 16\n", *resetKeyFile, len(resetKey))
			return exitUsage
		}
	}
	cert, err := certs.Load(*certFile, *keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitUsage
	}
	cfg, cleanup, err := tf.config(&tls.Config{Certificates: []tls.Certificate{cert}}, stderr)
	defer cleanup()
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitUsage
	}
	l, err := mpquic.ListenWithOptions(*addr, cfg, mpquic.ListenOptions{
		RequireRetry:   *retry,
		RetryThreshold: *retryAbove,
		MaxHandshakes:  *maxHandshakes,
		MaxConns:       *maxConns,
		ResetKey:       resetKey,
	})
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "mpq serve: serving %s on %s (hq-interop)\n", *root, l.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		logStats(ctx, l, *statsEvery, stderr)
		l.Close()
		fmt.Fprintf(stderr, "mpq serve: %s\n", formatStats(l.Stats()))
		close(stopped)
	}()
	var wg sync.WaitGroup
	code := 0
	for {
		c, err := l.Accept(ctx)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				fmt.Fprintf(stderr, "mpq serve: %v\n", err)
				code = 1
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(ctx, c, *root, stderr)
		}()
	}
	// Closing the listener closes every connection, which ends the
	// handlers' stream operations.
	cancel()
	<-stopped
	wg.Wait()
	return code
}

// serveConn answers the requests of one connection until it ends or ctx is
// cancelled; it returns when its request handlers have returned.
func serveConn(ctx context.Context, c *mpquic.Conn, root string, stderr io.Writer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hq.Serve(s, root); err != nil {
				fmt.Fprintf(stderr, "mpq serve: %s: %v\n", c.RemoteAddr(), err)
			}
		}()
	}
}

// logStats logs the listener's counters every interval while they change,
// until ctx is done.
func logStats(ctx context.Context, l *mpquic.Listener, interval time.Duration, w io.Writer) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var last mpquic.ListenerStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if st := l.Stats(); st != last {
				fmt.Fprintf(w, "mpq serve: %s\n", formatStats(st))
				last = st
			}
		}
	}
}

// formatStats is the log line of a listener's counters.
func formatStats(s mpquic.ListenerStats) string {
	return fmt.Sprintf("connections accepted %d, retried %d, refused %d, rejected %d, in handshake %d, open %d; "+
		"datagrams dropped %d (+%d at full connection queues); stateless resets %d",
		s.Accepted, s.Retried, s.Refused, s.Rejected, s.Handshakes, s.Conns, s.Dropped, s.QueueDropped, s.Resets)
}
