package mpquic_test

import (
	"context"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic"
)

// A goroutine waiting in AcceptUniStream must not swallow the wake-up of
// one waiting in AcceptStream (and vice versa): every stream is accepted
// even when no later stream comes to wake its waiter again.
func TestAcceptBothKindsConcurrently(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type accepted struct {
		id   uint64
		bidi bool
	}
	got := make(chan accepted, 100)
	go func() {
		sc, err := l.Accept(ctx)
		if err != nil {
			return
		}
		for _, bidi := range []bool{true, false} {
			go func() {
				for {
					acc := sc.AcceptUniStream
					if bidi {
						acc = sc.AcceptStream
					}
					s, err := acc(ctx)
					if err != nil {
						return
					}
					got <- accepted{s.StreamID(), bidi}
				}
			}()
		}
	}()
	c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 40 {
		bidi := i%3 != 2
		open := c.OpenUniStream
		if bidi {
			open = c.OpenStream
		}
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-got:
			if a.id != s.StreamID() || a.bidi != bidi {
				t.Fatalf("accepted %+v, opened %d", a, s.StreamID())
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("stream %d (bidi %v) not accepted", s.StreamID(), bidi)
		}
	}
}
