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

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
)

// runServe serves files until ctx is cancelled, then closes every
// connection, waits for the request handlers and returns 0.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4433", "UDP `HOST:PORT` to listen on")
	root := fs.String("root", "", "serve files from `DIR` (required)")
	certFile := fs.String("cert", "", "PEM certificate `FILE` (default: self-signed)")
	keyFile := fs.String("key", "", "PEM private key `FILE`")
	retry := fs.Bool("retry", false, "validate client addresses with Retry")
	var tf transportFlags
	tf.register(fs)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *root == "" {
		fmt.Fprintln(stderr, "mpq serve: --root is required")
		return exitUsage
	}
	if st, err := os.Stat(*root); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "mpq serve: --root %s is not a directory\n", *root)
		return exitUsage
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
	l, err := mpquic.ListenWithOptions(*addr, cfg, mpquic.ListenOptions{RequireRetry: *retry})
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "mpq serve: serving %s on %s (hq-interop)\n", *root, l.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		<-ctx.Done()
		l.Close()
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
