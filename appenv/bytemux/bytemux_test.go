package bytemux

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func pair(t *testing.T) (client, server *Conn) {
	t.Helper()
	a, b := net.Pipe()
	client, server = New(a, true, Options{}), New(b, false, Options{})
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	return client, server
}

// Streams carry their data, end and resets through one byte stream, with
// QUIC's stream numbering.
func TestStreams(t *testing.T) {
	client, server := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	msg := bytes.Repeat([]byte("x"), 3*MaxFrame+5)
	s1, _ := client.OpenStream()
	s2, _ := client.OpenStream()
	u, _ := client.OpenUniStream()
	if s1.StreamID() != 0 || s2.StreamID() != 4 || u.StreamID() != 2 {
		t.Fatalf("IDs %d %d %d", s1.StreamID(), s2.StreamID(), u.StreamID())
	}
	go func() {
		s1.Write(msg)
		s1.Close()
		s2.Write([]byte("abc"))
		s2.CancelWrite(7)
		u.Write([]byte("uni"))
		u.Close()
	}()
	r1, err := server.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r1)
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("stream 0: %d bytes, %v", len(got), err)
	}
	r2, _ := server.AcceptStream(ctx)
	var se *StreamError
	if _, err := io.ReadAll(r2); !errors.As(err, &se) || se.Code != 7 {
		t.Fatalf("stream 4: %v, want a reset with code 7", err)
	}
	ru, _ := server.AcceptUniStream(ctx)
	if got, err := io.ReadAll(ru); err != nil || string(got) != "uni" || ru.StreamID() != 2 {
		t.Fatalf("uni stream %d: %q, %v", ru.StreamID(), got, err)
	}
	// A reply on the bidirectional stream; the server's own stream is 1.
	if _, err := r1.Write([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	r1.Close()
	if got, err := io.ReadAll(s1); err != nil || string(got) != "reply" {
		t.Fatalf("reply %q, %v", got, err)
	}
	if s, _ := server.OpenStream(); s.StreamID() != 1 {
		t.Fatalf("server's first stream %d", s.StreamID())
	}
	// STOP makes the sender's writes fail.
	s3, _ := client.OpenStream()
	s3.Write([]byte("a"))
	r3, _ := server.AcceptStream(ctx)
	r3.CancelRead(9)
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s3.Write([]byte("b"))
		if errors.As(err, &se) && se.Stopped && se.Code == 9 {
			break
		}
		// The STOP wakes the stream (its only frame from the peer).
		select {
		case <-s3.sig:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("writes after STOP: %v", err)
		}
	}
	// Closing the connection ends the peer's with the application error.
	go client.CloseWithError(3, "bye")
	<-server.Context().Done()
	var ae *ApplicationError
	if err := server.Err(); !errors.As(err, &ae) || ae.Code != 3 || ae.Reason != "bye" || !ae.Remote {
		t.Fatalf("server's end: %v", err)
	}
	if _, err := r1.Read(make([]byte, 1)); err == nil {
		t.Error("read after the connection ended succeeded")
	}
}

// A frame waits behind every byte written before it: a small message
// written after a large one arrives after it (head-of-line blocking).
func TestHeadOfLine(t *testing.T) {
	client, server := pair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	big, _ := client.OpenStream()
	small, _ := client.OpenStream()
	go func() {
		big.Write(make([]byte, 8*MaxFrame))
		big.Close()
		small.Write([]byte("urgent"))
		small.Close()
	}()
	rbig, err := server.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rsmall, err := server.AcceptStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(rsmall); err != nil || string(got) != "urgent" {
		t.Fatalf("small message %q, %v", got, err)
	}
	// By the time the small message is there, the whole large one is.
	rbig.mu.Lock()
	n, fin := 0, rbig.fin
	for _, c := range rbig.chunks {
		n += len(c)
	}
	rbig.mu.Unlock()
	if !fin || n != 8*MaxFrame {
		t.Errorf("when the small message arrived the large one had %d of %d bytes (end: %v)", n, 8*MaxFrame, fin)
	}
}

// Frames round-trip, and malformed ones fail.
func TestReadFrame(t *testing.T) {
	var b bytes.Buffer
	a, _ := net.Pipe()
	c := &Conn{bw: bufio.NewWriter(&b), nc: a}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.writeFrame(frameData, 1<<20, []byte("hello"), false); err != nil {
		t.Fatal(err)
	}
	typ, id, p, err := ReadFrame(bufio.NewReader(bytes.NewReader(b.Bytes())))
	if err != nil || typ != frameData || id != 1<<20 || string(p) != "hello" {
		t.Fatalf("%d %d %q %v", typ, id, p, err)
	}
	for _, bad := range [][]byte{{9, 0, 0}, {0, 0}, {0, 0, 5, 'a'}, {0, 0, 0xff, 0xff, 0xff, 0x7f}} {
		if _, _, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(bad))); err == nil {
			t.Errorf("% x accepted", bad)
		}
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 4, 3, 'a', 'b', 'c'})
	f.Add([]byte{4, 0, 2, 3, 'x'})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		for {
			_, _, p, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(p) > maxPayload {
				t.Fatalf("payload of %d bytes", len(p))
			}
		}
	})
}

// The connection's end wakes its streams while streams whose two
// directions ended are forgotten on other goroutines: under the race
// detector, waking them from the connection's own map (not a copy taken
// under its lock) is a data race.
func TestFailWhileStreamsForgotten(t *testing.T) {
	client, _ := pair(t)
	var ids []uint64
	for range 64 {
		s, err := client.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.StreamID())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, id := range ids {
			client.forget(id)
		}
	}()
	client.fail(errors.New("test: ended"))
	<-done
	if client.Err() == nil {
		t.Fatal("connection not ended")
	}
}
