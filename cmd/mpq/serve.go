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

// setupServe registers serve's flags; the command serves files until ctx
// is cancelled, then closes every connection, waits for the request
// handlers and returns 0.
func setupServe(fs *flag.FlagSet) runFunc {
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:4433", "UDP `HOST:PORT` to listen on")
	fs.StringVar(&o.root, "root", "", "serve files from `DIR` (required)")
	fs.StringVar(&o.cert, "cert", "", "PEM certificate `FILE` (default: self-signed)")
	fs.StringVar(&o.key, "key", "", "PEM private key `FILE`")
	fs.BoolVar(&o.retry, "retry", false, "validate client addresses with Retry")
	o.tf.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if !noArgs("serve", args, stderr) {
			return exitUsage
		}
		return serve(ctx, &o, stderr)
	}
}

// serveOptions are serve's flags.
type serveOptions struct {
	addr, root, cert, key string
	retry                 bool
	tf                    transportFlags
}

// serve serves files until ctx is cancelled.
func serve(ctx context.Context, o *serveOptions, stderr io.Writer) int {
	if o.root == "" {
		fmt.Fprintln(stderr, "mpq serve: --root is required")
		return exitUsage
	}
	if st, err := os.Stat(o.root); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "mpq serve: --root %s is not a directory\n", o.root)
		return exitUsage
	}
	cert, err := certs.Load(o.cert, o.key)
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitUsage
	}
	cfg, cleanup, err := o.tf.config(&tls.Config{Certificates: []tls.Certificate{cert}}, stderr)
	defer cleanup()
	if err != nil {
		printErr(stderr, "serve", err)
		return exitUsage
	}
	l, err := mpquic.ListenWithOptions(o.addr, cfg, mpquic.ListenOptions{RequireRetry: o.retry})
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "mpq serve: serving %s on %s (hq-interop)\n", o.root, l.Addr())
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
				code = exitFailure
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(ctx, c, o.root, stderr)
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
