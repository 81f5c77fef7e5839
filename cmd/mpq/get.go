package main

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

func runGet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4433", "server `HOST:PORT`")
	p := fs.String("path", "", "file to fetch, e.g. /index.html (required)")
	out := fs.String("out", "", "write the body to `FILE` (default: discard)")
	ca := fs.String("ca", "", "verify the server with the PEM certificates in `FILE` (default: accept any certificate, as for self-signed servers)")
	sni := fs.String("sni", "", "TLS server name (default: the host of --addr)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after this long")
	var locals localAddrs
	fs.Var(&locals, "local", "local `ADDR` (host or host:port) to send from; repeat it to use one path per address (multipath)")
	var tf transportFlags
	tf.register(fs)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *p == "" {
		fmt.Fprintln(stderr, "mpq get: --path is required")
		return exitUsage
	}
	tc := &tls.Config{InsecureSkipVerify: true}
	if *ca != "" {
		pem, err := os.ReadFile(*ca)
		if err != nil {
			fmt.Fprintf(stderr, "mpq get: %v\n", err)
			return exitUsage
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			fmt.Fprintf(stderr, "mpq get: no certificate in %s\n", *ca)
			return exitUsage
		}
		tc = &tls.Config{RootCAs: pool}
	}
	cfg, cleanup, err := tf.config(tc)
	defer cleanup()
	if err != nil {
		fmt.Fprintf(stderr, "mpq get: %v\n", err)
		return exitUsage
	}
	for i, l := range locals {
		if _, _, err := net.SplitHostPort(l); err != nil {
			locals[i] = net.JoinHostPort(l, "0")
		}
	}
	res, err := get(*addr, *p, *out, *sni, *timeout, cfg, locals)
	if err != nil {
		fmt.Fprintf(stderr, "mpq get: %v\n", err)
		return 1
	}
	b, _ := json.Marshal(res)
	fmt.Fprintln(stdout, string(b))
	return 0
}

func get(addr, p, out, sni string, timeout time.Duration, cfg *mpquic.Config, locals []string) (*getResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	opts := mpquic.DialOptions{ServerName: sni}
	if len(locals) > 0 {
		opts.LocalAddr = locals[0]
	}
	c, err := mpquic.DialWithOptions(ctx, addr, cfg, opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	hs := time.Since(start)
	for _, l := range locals[min(1, len(locals)):] {
		if _, err := c.AddPath(ctx, l); err != nil {
			return nil, fmt.Errorf("path from %s: %w", l, err)
		}
	}
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	var w io.Writer = h
	var f *os.File
	var tmp string
	if out != "" {
		// Write under a temporary name and rename once complete.
		f, err = os.CreateTemp(filepath.Dir(out), ".mpq-get-*")
		if err != nil {
			return nil, err
		}
		tmp = f.Name()
		defer os.Remove(tmp)
		w = io.MultiWriter(h, f)
	}
	go func() {
		<-ctx.Done()
		s.SetReadDeadline(time.Now())
	}()
	n, err := hq.Get(ctx, s, p, w)
	if err != nil {
		var ae *qerr.ApplicationError
		if errors.As(err, &ae) && ae.Code == hq.ErrorNotFound {
			return nil, fmt.Errorf("%s: not found on the server", p)
		}
		return nil, err
	}
	total := time.Since(start)
	if f != nil {
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, out); err != nil {
			return nil, err
		}
	}
	res := &getResult{OK: true, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil)),
		HandshakeMS: ms(hs), TotalMS: ms(total)}
	if len(locals) > 1 {
		res.Multipath = true
		for _, ps := range c.Paths() {
			res.Paths = append(res.Paths, pathResult{ID: ps.ID, Local: ps.Local.String(), Remote: ps.Remote.String(),
				BytesSent: ps.BytesSent, BytesReceived: ps.BytesReceived, SRTTMS: ms(ps.SmoothedRTT), State: ps.State})
		}
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
