package mpquic_test

import (
	"bytes"
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
		c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)})
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
