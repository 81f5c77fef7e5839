package perconn_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/appenv/kernelnet"
	"github.com/mpq/mpq/appenv/perconn"
	"github.com/mpq/mpq/appenv/udpenv"
)

// connections is what the logical connections report.
type connections interface {
	Connections() int
	Sample() udpenv.TransportConn
}

// TestOneConnectionPerStream: over kernel TCP on loopback, each stream
// the client opens runs on a connection of its own (the server accepts
// one per stream, from as many client ports), the server sees them all
// on its one logical connection, every request gets its reply, and a
// stream's Close closes its connection.
func TestOneConnectionPerStream(t *testing.T) {
	inner, err := kernelnet.New(kernelnet.Config{Kind: kernelnet.TCP})
	if err != nil {
		t.Fatal(err)
	}
	tr := perconn.New(inner)
	l, err := tr.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const n, reqLen, replyLen = 5, 100, 3000
	served := make(chan error, 1)
	var server udpenv.TransportConn
	go func() {
		sc, err := l.Accept(ctx)
		if err != nil {
			served <- err
			return
		}
		server = sc
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for range n {
			s, err := sc.AcceptStream(ctx)
			if err != nil {
				served <- err
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := make([]byte, reqLen)
				if _, err := io.ReadFull(s, req); err != nil {
					errs <- err
					return
				}
				if _, err := s.Write(make([]byte, replyLen)); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		served <- <-errs
	}()

	cc, err := tr.Dial(ctx, l.Addr().String(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer cc.CloseWithError(0, "done")
	var wg sync.WaitGroup
	ids := make([]uint64, n)
	errs := make([]error, n)
	for i := range n {
		s, err := cc.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.StreamID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Write(make([]byte, reqLen)); err != nil {
				errs[i] = err
				return
			}
			if _, err := io.ReadFull(s, make([]byte, replyLen)); err != nil {
				errs[i] = err
				return
			}
			errs[i] = s.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("stream %d: %v", i, err)
		}
		if ids[i] != uint64(4*i) {
			t.Errorf("stream %d has ID %d, want %d", i, ids[i], 4*i)
		}
	}
	if err := <-served; err != nil {
		t.Fatalf("server: %v", err)
	}
	if got := cc.(connections).Connections(); got != n {
		t.Errorf("the client opened %d connections for %d streams", got, n)
	}
	if got := server.(connections).Connections(); got != n {
		t.Errorf("the server accepted %d connections for %d streams", got, n)
	}
	if k := cc.(connections).Sample().(*kernelnet.Conn).Kind(); k != kernelnet.TCP {
		t.Errorf("sample connection of kind %q", k)
	}
	// A stream's Close closed its connection: the first is over.
	select {
	case <-cc.(connections).Sample().Context().Done():
	case <-time.After(5 * time.Second):
		t.Error("the first stream's connection is still open after its Close")
	}
	if _, err := cc.OpenUniStream(); err == nil {
		t.Error("a unidirectional stream opened")
	}
	cc.CloseWithError(0, "done")
	if _, err := cc.OpenStream(); err == nil {
		t.Error("a stream opened after the close")
	}
}
