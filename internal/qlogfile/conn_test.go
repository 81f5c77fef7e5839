package qlogfile

import (
	"context"
	"crypto/tls"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/qlogcheck"
	"github.com/mpq/mpq/mpquic"
)

// TestLiveConnectionTrace: while a connection is open, its trace is on
// disk once the flush timer fired, whole and readable the way qvis reads
// it (issue 14: traces stayed empty until the connection closed).
func TestLiveConnectionTrace(t *testing.T) {
	d, ft, errs := newTestDir(t)
	cert, err := certs.SelfSigned(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"t"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() {
		c, err := l.Accept(ctx)
		if err != nil {
			return
		}
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		io.Copy(s, s)
		s.Close()
	}()
	c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"t"}}, Qlog: d.Create})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 20000)
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if n, err := io.Copy(io.Discard, s); err != nil || n != int64(len(msg)) {
		t.Fatalf("echo: %d bytes, %v", n, err)
	}
	// The connection stays open. Fire the flush timer the trace armed.
	ft.fire()
	files, _ := filepath.Glob(filepath.Join(d.path, "*_client.sqlog"))
	if len(files) != 1 {
		t.Fatalf("traces %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := qlogcheck.Check(data)
	if err != nil {
		t.Fatalf("live trace (%d bytes): %v", len(data), err)
	}
	if tr.Counts["quic:packet_sent"] == 0 || tr.Counts["quic:packet_received"] == 0 || tr.Counts["quic:connection_closed"] != 0 {
		t.Fatalf("live trace events %v", tr.Counts)
	}
	if len(*errs) > 0 {
		t.Fatal(*errs)
	}
}
