package interop_test

import (
	"context"
	"net"
	"testing"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
)

// served is how our server's one connection ended: its paths' statistics
// when the client closed it, whether multipath was negotiated, why the
// connection ended and what serving the request returned.
type served struct {
	paths    []mpquic.PathStats
	multi    bool
	err      error
	serveErr error
}

// serveOnce listens on 127.0.0.1 with cfg and serves the fixture's files
// over hq-interop to one connection; the channel yields how it ended once
// the client closed it (or ctx ended). The listener closes with the test.
func serveOnce(t *testing.T, ctx context.Context, f *fixture, cfg *mpquic.Config) (*net.UDPAddr, <-chan served) {
	t.Helper()
	ln, err := mpquic.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	end := make(chan served, 1)
	go func() {
		c, err := ln.Accept(ctx)
		if err != nil {
			end <- served{serveErr: err}
			return
		}
		e := served{multi: c.MultipathEnabled()}
		if s, err := c.AcceptStream(ctx); err != nil {
			e.serveErr = err
		} else {
			e.serveErr = hq.Serve(s, f.root)
		}
		select {
		case <-c.Done():
		case <-ctx.Done():
		}
		e.paths, e.err = c.Paths(), c.Err()
		end <- e
	}()
	return ln.Addr().(*net.UDPAddr), end
}

// waitServed waits for serveOnce's connection to end and checks that the
// request was served and that multipath was negotiated as expected.
func waitServed(t *testing.T, ctx context.Context, end <-chan served, multipath bool) served {
	t.Helper()
	var e served
	select {
	case e = <-end:
	case <-ctx.Done():
		t.Fatal("our server's connection did not end")
	}
	if e.serveErr != nil {
		t.Errorf("serve: %v", e.serveErr)
	}
	if e.multi != multipath {
		t.Errorf("our server: multipath negotiated %v, want %v", e.multi, multipath)
	}
	return e
}

// downloadAbandoning downloads the file over c and abandons path id
// (PATH_ABANDON) once a quarter of it arrived.
func downloadAbandoning(t *testing.T, ctx context.Context, c *mpquic.Conn, f *fixture, id uint64) {
	t.Helper()
	abandoned := false
	download(t, ctx, c, f, func(n int64) {
		if !abandoned && n >= fileSize/4 {
			abandoned = true
			if err := c.AbandonPath(id, 0); err != nil {
				t.Errorf("abandon path %d: %v", id, err)
			}
		}
	})
	if !abandoned {
		t.Fatal("the path was not abandoned")
	}
}
