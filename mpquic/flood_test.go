package mpquic_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/floodgen"
)

// Flood sizes and bounds of TestFlood.
const (
	floodGarbage = 10_000 // Initials of random bytes
	floodHellos  = 2_000  // genuine ClientHellos (of two datagrams), each of a new connection
	floodPorts   = 64     // source ports they come from
	floodRate    = 4_000  // datagrams per second
	// floodHeapBound bounds the growth of the live heap during the flood,
	// the legitimate connection's buffers included. Without the limits on
	// connections in handshake, the ClientHellos alone would hold about
	// 2,000 × 28 KB = 56 MB.
	floodHeapBound = 32 << 20
)

// liveHeap is the heap occupied by live objects at the last GC.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestFlood floods an in-process server with Initials of random bytes and
// genuine ClientHellos from many source ports while a legitimate client
// downloads a file: the download completes intact, the server's live heap
// grows by less than floodHeapBound, the garbage costs no connection, and
// once the half-open connections time out their memory is back.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood")
	}
	// The legitimate client comes from another /24 than the flood: the
	// flood's prefix holds its share of the handshake slots (a client of
	// that prefix would be refused).
	local := "127.0.1.1:0"
	if probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 1, 1)}); err != nil {
		t.Skipf("needs 127.0.0.0/8 on loopback: %v", err)
	} else {
		probe.Close()
	}
	root := t.TempDir()
	file := make([]byte, 2<<20)
	rand.Read(file)
	if err := os.WriteFile(filepath.Join(root, "file"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), HandshakeTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, root)

	// The flood, made beforehand so that it is in the baseline.
	r := mrand.New(mrand.NewPCG(1, 2))
	tc := &core.Config{TLS: clientTLS(t)}
	flood := make([][]byte, 0, floodGarbage+floodHellos)
	for range floodGarbage {
		flood = append(flood, floodgen.GarbageInitial(r))
	}
	r.Shuffle(len(flood), func(i, j int) { flood[i], flood[j] = flood[j], flood[i] })
	// The datagrams of each ClientHello in order, at random places.
	helloDgrams := 0
	for range floodHellos {
		ch, err := floodgen.ClientHello(tc)
		if err != nil {
			t.Fatal(err)
		}
		helloDgrams += len(ch)
		flood = slices.Insert(flood, r.IntN(len(flood)+1), ch...)
	}
	// In one block, whose size is known when it is freed.
	var arena []byte
	for _, d := range flood {
		arena = append(arena, d...)
	}
	arena = append(make([]byte, 0, len(arena)), arena...)
	ends := make([]int, len(flood))
	for i, n := 0, 0; i < len(flood); i++ {
		n += len(flood[i])
		ends[i] = n
	}
	flood = nil
	var socks []*net.UDPConn
	for range floodPorts {
		uc, err := net.DialUDP("udp", nil, l.Addr().(*net.UDPAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer uc.Close()
		socks = append(socks, uc)
	}

	runtime.GC()
	base := liveHeap()
	var peak uint64 // read once the sampler is done
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tk := time.NewTicker(10 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tk.C:
				if h := liveHeap(); h > base {
					peak = max(peak, h-base)
				}
			}
		}
	}()

	// The legitimate download, started halfway through the flood.
	ctx := ctxT(t, 60*time.Second)
	type result struct {
		b   bytes.Buffer
		err error
	}
	legit := make(chan *result, 1)
	download := func() {
		res := &result{}
		start := time.Now()
		defer func() {
			t.Logf("legitimate download of %d bytes in %v", res.b.Len(), time.Since(start))
			legit <- res
		}()
		c, err := mpquic.DialWithOptions(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)}, mpquic.DialOptions{LocalAddr: local})
		if err != nil {
			res.err = err
			return
		}
		defer c.Close()
		s, err := c.OpenStreamSync(ctx)
		if err != nil {
			res.err = err
			return
		}
		s.SetReadDeadline(time.Now().Add(50 * time.Second))
		_, res.err = hq.Get(ctx, s, "/file", &res.b)
	}

	start := time.Now()
	from := 0
	for i, end := range ends {
		d := arena[from:end]
		from = end
		// Paced at floodRate datagrams per second.
		if ahead := time.Duration(float64(i)/floodRate*float64(time.Second)) - time.Since(start); ahead > 0 {
			time.Sleep(ahead)
		}
		socks[i%floodPorts].Write(d)
		if i == len(ends)/2 {
			go download()
		}
	}
	floodTook := time.Since(start)
	res := <-legit
	if res.err != nil {
		t.Fatalf("legitimate download during the flood: %v", res.err)
	}
	checkDownload(t, "file", &res.b, file)
	st := l.Stats()
	close(stopSampling)
	<-sampled
	t.Logf("flood of %d datagrams in %v; live heap %d MB at the start, peak growth %.1f MB; %+v",
		len(ends), floodTook, base>>20, float64(peak)/(1<<20), st)
	if peak > floodHeapBound {
		t.Errorf("live heap grew by %.1f MB during the flood, bound %d MB", float64(peak)/(1<<20), floodHeapBound>>20)
	}
	// The garbage was dropped without an answer or a connection: only the
	// datagrams of the ClientHellos and the legitimate client, which may
	// have been sent a Retry first, were answered. (The kernel loses some
	// datagrams at a full socket buffer when the machine is loaded, or
	// under the race detector: a few percent.)
	answered := st.Accepted + st.Retried + st.Refused + st.Rejected
	if answered > uint64(helloDgrams)+2 || st.Dropped < floodGarbage/2 || st.Retried == 0 {
		t.Errorf("%d answered for %d datagrams of ClientHellos; %d dropped of %d garbage", answered, helloDgrams, st.Dropped, floodGarbage)
	}

	// The half-open connections end HandshakeTimeout after their first
	// packet, and their memory is released.
	deadline := time.Now().Add(10 * time.Second)
	for l.Stats().Conns > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("connections left 10 s after the flood: %+v", l.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// What is left is the start without the flood's datagrams.
	floodBytes := int64(cap(arena) + 8*cap(ends))
	arena, ends = nil, nil
	runtime.GC()
	runtime.GC()
	after := int64(liveHeap()) - (int64(base) - floodBytes)
	t.Logf("live heap once the connections are gone: %+.1f MB from the start, the flood's datagrams deducted", float64(after)/(1<<20))
	if after > 4<<20 {
		t.Errorf("live heap %.1f MB above the start once every connection is gone", float64(after)/(1<<20))
	}
}

// Fifty clients connecting and downloading at once are all served, and
// the admission limits (64 handshakes before Retry by default) do not get
// in their way.
func TestFiftyConcurrentClients(t *testing.T) {
	f := getFiles(t)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, f.root)
	ctx := ctxT(t, 60*time.Second)
	const n = 50
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			b, err := mpquicClient{c}.get(ctx, fmt.Sprintf("/small/%d", i))
			if err == nil && !bytes.Equal(b.Bytes(), f.small[i]) {
				err = fmt.Errorf("client %d: content differs", i)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := l.Stats(); st.Accepted != n || st.Retried != 0 || st.Refused != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Bounds of TestRetryFlood: the Retry-answering ClientHellos of each
// case, their rate, and the server's handshake slots (64 by default per
// /24 of 512; here 16 of 128, so that 16 prefixes fill them).
const (
	retryFloodHellos = 1_000
	retryFloodRate   = 500
	retryFloodSlots  = 128
	retryFloodShare  = 16
	retryFloodGets   = 5
)

// TestRetryFlood: clients that follow the server's Retry and then go quiet
// (each holds a handshake slot until it times out), from one /24 and from
// sixteen, beside a legitimate client of another /24 that downloads a
// file five times during the flood. Every download succeeds: one prefix
// gets no more than its share of the slots, and with all slots taken the
// legitimate client takes the slot of the oldest handshake of the prefix
// holding the most. Once the flood stops, the handshakes left end within
// a few PTOs of the client's silence, not the 10 s HandshakeTimeout.
// Loopback only (127.0.x.1, Linux), bounded in count and time.
func TestRetryFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("flood")
	}
	if probe, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 9, 1)}); err != nil {
		t.Skipf("needs 127.0.0.0/8 on loopback: %v", err)
	} else {
		probe.Close()
	}
	f := getFiles(t)
	for _, prefixes := range []int{1, 16} {
		t.Run(fmt.Sprintf("%d prefixes", prefixes), func(t *testing.T) {
			l, err := mpquic.ListenWithOptions("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)}, mpquic.ListenOptions{
				RequireRetry: true, MaxHandshakes: retryFloodSlots, MaxHandshakesPerPrefix: retryFloodShare})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			serveFiles(l, f.root)
			server := l.Addr().(*net.UDPAddr).AddrPort()
			var socks []*net.UDPConn
			for i := range 64 {
				ip := net.IPv4(127, 0, byte(10+i%prefixes), 1)
				uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
				if err != nil {
					t.Fatal(err)
				}
				defer uc.Close()
				socks = append(socks, uc)
			}
			ctx := ctxT(t, 60*time.Second)
			flood := make(chan floodgen.RetryFloodStats, 1)
			floodErr := make(chan error, 1)
			go func() {
				st, err := floodgen.RetryFlood(ctx, &core.Config{TLS: clientTLS(t)}, socks, server, retryFloodRate, retryFloodHellos)
				flood <- st
				floodErr <- err
			}()
			// The legitimate client, from 127.0.1.1, once the flood has
			// had time to fill what it can.
			time.Sleep(500 * time.Millisecond)
			failed := 0
			for i := range retryFloodGets {
				start := time.Now()
				err := func() error {
					gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					c, err := mpquic.DialWithOptions(gctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)}, mpquic.DialOptions{LocalAddr: "127.0.1.1:0"})
					if err != nil {
						return err
					}
					defer c.Close()
					b, err := mpquicClient{c}.get(gctx, fmt.Sprintf("/small/%d", i))
					if err == nil && !bytes.Equal(b.Bytes(), f.small[i]) {
						err = fmt.Errorf("content differs")
					}
					return err
				}()
				t.Logf("legitimate get %d: %v after %v; server %+v", i, err, time.Since(start).Round(time.Millisecond), l.Stats().EndpointStats)
				if err != nil {
					failed++
				}
				time.Sleep(200 * time.Millisecond)
			}
			st := <-flood
			if err := <-floodErr; err != nil {
				t.Fatal(err)
			}
			end := time.Now()
			ls := l.Stats()
			t.Logf("flood: %+v; server: %+v", st, ls)
			if failed > 0 {
				t.Errorf("%d of %d legitimate gets failed during the flood", failed, retryFloodGets)
			}
			if st.Retries < retryFloodHellos/2 {
				t.Errorf("only %d Retries answered of %d ClientHellos: the flood did not test the slots", st.Retries, st.Hellos)
			}
			// The flood's last handshakes (its last packet retryWait ago)
			// end about three PTOs (3 s before an RTT sample) after
			// their client's last packet, well before HandshakeTimeout.
			for l.Stats().Handshakes > 0 {
				if time.Since(end) > 4*time.Second {
					t.Fatalf("%d handshakes left %v after the flood's end: %+v", l.Stats().Handshakes, time.Since(end).Round(time.Millisecond), l.Stats())
				}
				time.Sleep(50 * time.Millisecond)
			}
			if ls := l.Stats(); ls.QuietTimeouts == 0 {
				t.Errorf("no quiet timeout counted: %+v", ls)
			}
		})
	}
}
