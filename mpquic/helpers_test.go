package mpquic_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
)

// testFiles writes the files served in interop tests: "big" (20 MB) and
// "small/N" (N from 0 to 99, 10 kB each), with seeded content.
type testFiles struct {
	root  string
	big   []byte
	small [][]byte
}

var (
	filesOnce sync.Once
	files     *testFiles
)

func getFiles(t *testing.T) *testFiles {
	t.Helper()
	filesOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mpq-interop-")
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		f := &testFiles{root: dir, big: make([]byte, 20<<20)}
		for i := range f.big {
			f.big[i] = byte(r.Uint32())
		}
		if err := os.WriteFile(filepath.Join(dir, "big"), f.big, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "small"), 0o755); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			b := make([]byte, 10<<10)
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			f.small = append(f.small, b)
			if err := os.WriteFile(filepath.Join(dir, "small", fmt.Sprint(i)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files = f
	})
	if files == nil {
		t.Fatal("test files unavailable")
	}
	return files
}

func TestMain(m *testing.M) {
	code := m.Run()
	if files != nil {
		os.RemoveAll(files.root)
	}
	os.Exit(code)
}

var (
	certOnce sync.Once
	testCert tls.Certificate
)

func serverTLS(t testing.TB) *tls.Config {
	t.Helper()
	certOnce.Do(func() {
		var err error
		testCert, err = certs.SelfSigned(certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
	})
	return &tls.Config{Certificates: []tls.Certificate{testCert}, NextProtos: []string{hq.ALPN}}
}

func clientTLS(t testing.TB) *tls.Config {
	serverTLS(t)
	return &tls.Config{RootCAs: certs.Pool(testCert), ServerName: "localhost", NextProtos: []string{hq.ALPN}}
}

func sum(b []byte) [32]byte { return sha256.Sum256(b) }

// relay forwards UDP datagrams between one client and a server, dropping a
// fraction at random and holding some back so that they arrive after the
// next datagram (reordering). Randomness is seeded; it is bounded by its
// context.
type relay struct {
	conn            *net.UDPConn
	server          netip.AddrPort
	drop, reorder   float64
	mu              sync.Mutex
	client          netip.AddrPort
	r               *rand.Rand
	dropped, passed int
	held            map[bool][]byte
}

func newRelay(t *testing.T, server netip.AddrPort, drop, reorder float64, seed uint64) *relay {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	r := &relay{conn: uc, server: server, drop: drop, reorder: reorder, r: rand.New(rand.NewPCG(seed, 7)), held: map[bool][]byte{}}
	go r.loop()
	t.Cleanup(func() {
		uc.Close()
		passed, dropped := r.counts()
		t.Logf("relay: %d datagrams passed, %d dropped", passed, dropped)
	})
	return r
}

// counts returns how many datagrams the relay passed and dropped so far.
func (r *relay) counts() (passed, dropped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.passed, r.dropped
}

func (r *relay) addr() string { return r.conn.LocalAddr().String() }

func (r *relay) loop() {
	buf := make([]byte, 65536)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		r.mu.Lock()
		toServer := from != r.server
		if toServer {
			r.client = from
		}
		dst := r.server
		if !toServer {
			dst = r.client
		}
		x := r.r.Float64()
		switch {
		case x < r.drop:
			r.dropped++
		case x < r.drop+r.reorder && r.held[toServer] == nil:
			r.held[toServer] = append([]byte(nil), buf[:n]...)
		default:
			r.passed++
			r.conn.WriteToUDPAddrPort(buf[:n], dst)
			if h := r.held[toServer]; h != nil {
				r.held[toServer] = nil
				r.passed++
				r.conn.WriteToUDPAddrPort(h, dst)
			}
		}
		r.mu.Unlock()
	}
}

// checkDownload compares a download with the expected content.
func checkDownload(t *testing.T, what string, got *bytes.Buffer, want []byte) {
	t.Helper()
	if got.Len() != len(want) || sum(got.Bytes()) != sum(want) {
		t.Fatalf("%s: got %d bytes (sha256 %x), want %d bytes (sha256 %x)", what, got.Len(), sum(got.Bytes()), len(want), sum(want))
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

var _ = io.EOF
