package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/internal/qlogfile"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/qerr"
)

// fileSize is the size of the file both directions transfer.
const fileSize = 10 << 20

// minPathShare is the least part of the file each path must carry for the
// test to count it as used ("substantial data"): one twentieth.
const minPathShare = fileSize / 20

// noqServerRate is the pacing limit of each of the noq server's paths, in
// bytes per second (320 Mbit/s): the file takes about 130 ms over two paths.
const noqServerRate = 40_000_000

// The two client addresses of the multipath tests.
const (
	clientAddr1 = "127.0.0.1"
	clientAddr2 = "127.0.0.2"
)

// Environment variables that help diagnosis:
//
//	MPQ_INTEROP_LOGDIR=DIR  our qlog traces and noq-peer's stderr go to DIR
//	RUST_LOG=noq=debug      noq's tracing output (in noq-peer's stderr)
const logDirEnv = "MPQ_INTEROP_LOGDIR"

var (
	peerOnce sync.Once
	peerBin  string
	peerErr  error
	peerSkip string
)

// noqPeer builds interop/noq-peer with cargo (once per test binary) and
// returns the binary's path; it skips the test when cargo is missing,
// except in CI (CI set), where that fails it.
func noqPeer(t *testing.T) string {
	t.Helper()
	peerOnce.Do(func() {
		cargo, err := exec.LookPath("cargo")
		if err != nil {
			// CI (.ci/run) installs Rust: a skip there would hide the test.
			if os.Getenv("CI") != "" {
				peerErr = errors.New("cargo not on PATH in CI (.ci/run should have installed Rust)")
			} else {
				peerSkip = "cargo not on PATH: noq interop needs a Rust toolchain"
			}
			return
		}
		// A cold build takes one to five minutes on two cores (longer
		// when the machine is busy); interop/target keeps it for later
		// runs. The limit stays below go test's default timeout of 10m.
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		// interop/ is the Cargo workspace; --target-dir overrides any
		// CARGO_TARGET_DIR so that the binary is where we look.
		cmd := exec.CommandContext(ctx, cargo, "build", "--release", "--locked", "--quiet", "--target-dir", "target")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			peerErr = fmt.Errorf("cargo build: %v (ctx: %v)\n%s", err, ctx.Err(), out.String())
			return
		}
		if d := time.Since(start); d > 10*time.Second {
			fmt.Fprintf(os.Stderr, "interop: built noq-peer in %v\n", d.Round(time.Second))
		}
		peerBin, peerErr = filepath.Abs(filepath.Join("target", "release", "noq-peer"))
	})
	if peerSkip != "" {
		t.Skip(peerSkip)
	}
	if peerErr != nil {
		t.Fatal(peerErr)
	}
	return peerBin
}

// fixture is what both directions share: the served directory with the
// file, its hash, and a certificate with its PEM files.
type fixture struct {
	root     string
	sum      [32]byte
	cert     tls.Certificate
	certFile string
	keyFile  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{root: filepath.Join(dir, "www")}
	if err := os.Mkdir(f.root, 0o755); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, fileSize)
	_, _ = rand.NewChaCha8([32]byte{'m', 'p', 'q'}).Read(body) // never fails
	f.sum = sha256.Sum256(body)
	if err := os.WriteFile(filepath.Join(f.root, "big"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	f.cert, err = certs.SelfSigned(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, err := x509.MarshalPKCS8PrivateKey(f.cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	f.certFile = filepath.Join(dir, "cert.pem")
	f.keyFile = filepath.Join(dir, "key.pem")
	if err := os.WriteFile(f.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: f.cert.Certificate[0]}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// config is our side's configuration, with qlog traces when
// MPQ_INTEROP_LOGDIR is set.
func (f *fixture) config(t *testing.T, server bool) *mpquic.Config {
	tc := &tls.Config{NextProtos: []string{hq.ALPN}}
	if server {
		tc.Certificates = []tls.Certificate{f.cert}
	} else {
		tc.RootCAs = certs.Pool(f.cert)
		tc.ServerName = "localhost"
	}
	cfg := &mpquic.Config{TLS: tc}
	if dir := os.Getenv(logDirEnv); dir != "" {
		// One directory per test, traces named as mpq's commands name them.
		traces := qlogfile.NewDir(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")), func(err error) { fmt.Fprintln(os.Stderr, err) })
		cfg.Qlog = traces.Create
	}
	return cfg
}

// peerPath is one path in noq-peer's JSON output.
type peerPath struct {
	ID        uint64  `json:"id"`
	LocalIP   string  `json:"local_ip"`
	Remote    string  `json:"remote"`
	TxBytes   uint64  `json:"tx_bytes"`
	RxBytes   uint64  `json:"rx_bytes"`
	Lost      uint64  `json:"lost_packets"`
	RTTMillis float64 `json:"rtt_ms"`
}

// peerLine is one JSON line of noq-peer: "listening" and "served" events of
// serve, the result of get.
type peerLine struct {
	Event     string     `json:"event"`
	Addr      string     `json:"addr"`
	OK        bool       `json:"ok"`
	Error     string     `json:"error"`
	Bytes     int64      `json:"bytes"`
	SHA256    string     `json:"sha256"`
	Multipath bool       `json:"multipath"`
	TotalMs   float64    `json:"total_ms"`
	Ms        float64    `json:"ms"`
	Paths     []peerPath `json:"paths"`
}

// peerProc is a running noq-peer.
type peerProc struct {
	cmd   *exec.Cmd
	lines chan peerLine
}

// startPeer runs noq-peer with args; it is killed when the test ends. Its
// JSON lines arrive on lines; its stderr is logged if the test fails (or
// written to MPQ_INTEROP_LOGDIR).
func startPeer(t *testing.T, ctx context.Context, args ...string) *peerProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, noqPeer(t), args...)
	cmd.WaitDelay = 2 * time.Second
	var stderr io.Writer
	tail := &tailBuffer{max: 32 << 10}
	stderr = tail
	if dir := os.Getenv(logDirEnv); dir != "" {
		f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+"_noq-peer.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		stderr = io.MultiWriter(tail, f)
	}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &peerProc{cmd: cmd, lines: make(chan peerLine, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var l peerLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Logf("noq-peer: unexpected output %q", sc.Text())
				continue
			}
			p.lines <- l
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("noq-peer %s stderr (tail):\n%s", strings.Join(args, " "), tail.String())
		}
	})
	return p
}

// next waits for the next JSON line of the peer.
func (p *peerProc) next(t *testing.T, ctx context.Context, what string) peerLine {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("noq-peer exited before %s", what)
		}
		return l
	case <-ctx.Done():
		t.Fatalf("waiting for noq-peer's %s: %v", what, ctx.Err())
	}
	panic("unreachable")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *tailBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = append(w.b[:0], w.b[len(w.b)-w.max:]...)
	}
	return len(p), nil
}

func (w *tailBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// checkPeerPaths checks noq-peer's per-path counters: two paths, one with
// each client address at the client's end, each carrying at least
// minPathShare bytes in the direction of the file (tx on the server, rx on
// the client).
func checkPeerPaths(t *testing.T, side string, paths []peerPath, server bool) {
	t.Helper()
	if len(paths) != 2 {
		t.Fatalf("noq %s reports %d paths, want 2: %+v", side, len(paths), paths)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		n, dir, client := p.RxBytes, "received", p.LocalIP
		if server {
			n, dir = p.TxBytes, "sent"
			if ap, err := netip.ParseAddrPort(p.Remote); err == nil {
				client = ap.Addr().String()
			}
		}
		seen[client] = true
		t.Logf("noq %s path %d (local %s, remote %s): %s %d bytes, %d packets lost, rtt %.3f ms", side, p.ID, p.LocalIP, p.Remote, dir, n, p.Lost, p.RTTMillis)
		if n < minPathShare {
			t.Errorf("noq %s path %d %s only %d bytes, want at least %d", side, p.ID, dir, n, minPathShare)
		}
	}
	for _, a := range []string{clientAddr1, clientAddr2} {
		if !seen[a] {
			t.Errorf("noq %s has no path with the client address %s: %+v", side, a, paths)
		}
	}
}

// checkOurPaths checks our per-path counters likewise, and that the
// client's two addresses are the paths' ends.
func checkOurPaths(t *testing.T, side string, paths []mpquic.PathStats, server bool) {
	t.Helper()
	if len(paths) != 2 {
		t.Fatalf("our %s has %d paths, want 2: %+v", side, len(paths), paths)
	}
	seen := map[netip.Addr]bool{}
	for _, p := range paths {
		n, dir, client := p.BytesReceived, "received", p.Local
		if server {
			n, dir, client = p.BytesSent, "sent", p.Remote
		}
		seen[client.Addr()] = true
		t.Logf("our %s path %d %v->%v: %s %d bytes, %d packets lost, srtt %v, state %s, events %v", side, p.ID, p.Local, p.Remote, dir, n, p.PacketsLost, p.SmoothedRTT, p.State, p.Events)
		if n < minPathShare {
			t.Errorf("our %s path %d %s only %d bytes, want at least %d", side, p.ID, dir, n, minPathShare)
		}
	}
	for _, a := range []string{clientAddr1, clientAddr2} {
		if !seen[netip.MustParseAddr(a)] {
			t.Errorf("our %s has no path with the client address %s: %+v", side, a, paths)
		}
	}
}

// startNoqServer runs noq-peer serve on the fixture and dials it from
// clientAddr1 with our client, then adds a path from clientAddr2.
func startNoqServer(t *testing.T, ctx context.Context, f *fixture) (*peerProc, *mpquic.Conn, uint64) {
	t.Helper()
	// noq sends on the lowest path ID until that path is blocked by its
	// congestion window or pacer; unthrottled on loopback, the second path
	// gets anywhere from 0.5 % to 30 % of the file. A per-path rate limit
	// makes noq spread the file over both paths.
	srv := startPeer(t, ctx, "serve", "--addr", "127.0.0.1:0", "--root", f.root, "--cert", f.certFile, "--key", f.keyFile,
		"--max-rate", fmt.Sprint(noqServerRate))
	l := srv.next(t, ctx, "listening line")
	if l.Event != "listening" {
		t.Fatalf("noq-peer serve said %+v", l)
	}
	c, err := mpquic.DialWithOptions(ctx, l.Addr, f.config(t, false), mpquic.DialOptions{LocalAddr: clientAddr1 + ":0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if !c.MultipathEnabled() {
		t.Fatal("multipath not negotiated with noq")
	}
	id, err := c.AddPath(ctx, clientAddr2+":0")
	if err != nil {
		t.Fatalf("add path from %s: %v", clientAddr2, err)
	}
	return srv, c, id
}

// download fetches /big over c, calling at(n) after each write of the
// response with the bytes received so far, and checks the content.
func download(t *testing.T, ctx context.Context, c *mpquic.Conn, f *fixture, at func(n int64)) time.Duration {
	t.Helper()
	start := time.Now()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h := &progressHash{Hash: sha256.New(), at: at}
	n, err := hq.Get(ctx, s, "/big", h)
	if err != nil {
		t.Fatalf("after %d bytes: %v", n, err)
	}
	if n != fileSize || [32]byte(h.Sum(nil)) != f.sum {
		t.Fatalf("got %d bytes (sha256 %x), want %d (sha256 %x)", n, h.Sum(nil), fileSize, f.sum)
	}
	return time.Since(start)
}

// progressHash hashes what it is written and reports the running count.
type progressHash struct {
	hash.Hash
	n  int64
	at func(n int64)
}

func (p *progressHash) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.at != nil {
		p.at(p.n)
	}
	return p.Hash.Write(b)
}

// TestNoqServer: our client downloads the file from noq-peer serve, over a
// first path from 127.0.0.1 and a second one it adds from 127.0.0.2.
func TestNoqServer(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, c, _ := startNoqServer(t, ctx, f)
	d := download(t, ctx, c, f, nil)
	t.Logf("downloaded %d bytes from noq in %v (%.0f Mbit/s)", fileSize, d.Round(time.Millisecond), fileSize*8/d.Seconds()/1e6)
	checkOurPaths(t, "client", c.Paths(), false)

	served := srv.next(t, ctx, "served line")
	if served.Event != "served" || served.Bytes != fileSize {
		t.Fatalf("noq-peer serve said %+v", served)
	}
	if !served.Multipath {
		t.Error("noq server: multipath not negotiated")
	}
	checkPeerPaths(t, "server", served.Paths, true)
}

// TestNoqServerAbandon: our client abandons its second path (PATH_ABANDON)
// while noq sends the file over both; noq must resend what was in flight
// there on the first path, and a second download uses that path alone.
func TestNoqServerAbandon(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, c, id := startNoqServer(t, ctx, f)
	downloadAbandoning(t, ctx, c, f, id)
	served := srv.next(t, ctx, "served line")
	t.Logf("noq served the file in %.1f ms, path 1 abandoned after a quarter", served.Ms)
	for _, p := range c.Paths() {
		if p.ID == id && p.State != "closing" {
			t.Errorf("path %d is %s after PATH_ABANDON", id, p.State)
		}
	}

	d := download(t, ctx, c, f, nil)
	t.Logf("downloaded the file again in %v over path 0 alone", d.Round(time.Millisecond))
	for _, p := range c.Paths() {
		t.Logf("our client path %d %v->%v: received %d bytes, state %s", p.ID, p.Local, p.Remote, p.BytesReceived, p.State)
		if p.ID == 0 && p.BytesReceived < fileSize+fileSize/2 {
			t.Errorf("path 0 received only %d bytes over two downloads", p.BytesReceived)
		}
	}
	srv.next(t, ctx, "second served line")
}

// noqClientRun is the outcome of one noq-peer get against our server.
type noqClientRun struct {
	res         peerLine           // noq-peer's result line
	serverPaths []mpquic.PathStats // our server's paths when the connection ended
	serverErr   error              // why our server's connection ended
}

// runNoqClient serves the fixture with our stack and downloads /big with
// noq-peer get from clientAddr1 and clientAddr2 (plus extra flags); it
// checks the content and that both ends negotiated multipath.
func runNoqClient(t *testing.T, extra ...string) noqClientRun {
	t.Helper()
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr, end := serveOnce(t, ctx, f, f.config(t, true))

	out := filepath.Join(t.TempDir(), "big")
	start := time.Now()
	args := append([]string{"get", "--addr", addr.String(), "--path", "/big",
		"--local", clientAddr1 + ":0", "--local", clientAddr2 + ":0",
		"--ca", f.certFile, "--out", out}, extra...)
	res := startPeer(t, ctx, args...).next(t, ctx, "result")
	elapsed := time.Since(start)
	if !res.OK {
		t.Fatalf("noq-peer get failed: %s", res.Error)
	}
	if !res.Multipath {
		t.Error("noq client: multipath not negotiated")
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(got); len(got) != fileSize || sum != f.sum || res.SHA256 != hex.EncodeToString(f.sum[:]) {
		t.Fatalf("noq got %d bytes (sha256 %x, it says %s), want %d (sha256 %x)", len(got), sum, res.SHA256, fileSize, f.sum)
	}
	t.Logf("noq downloaded %d bytes in %.1f ms (process %v, %.0f Mbit/s)", res.Bytes, res.TotalMs, elapsed.Round(time.Millisecond), float64(res.Bytes)*8/res.TotalMs/1e3)

	e := waitServed(t, ctx, end, true)
	// noq-peer closes with application error 0 once it has the file.
	var app *qerr.ApplicationError
	if !errors.As(e.err, &app) || !app.Remote || app.Code != 0 {
		t.Errorf("our server's connection ended with %v, want the client's application close 0", e.err)
	}
	return noqClientRun{res: res, serverPaths: e.paths, serverErr: e.err}
}

// TestNoqClient: noq-peer get downloads the file from our server over two
// paths, from 127.0.0.1 and 127.0.0.2.
func TestNoqClient(t *testing.T) {
	r := runNoqClient(t)
	checkPeerPaths(t, "client", r.res.Paths, false)
	checkOurPaths(t, "server", r.serverPaths, true)
}

// TestNoqClientAbandon: noq closes its second path (PATH_ABANDON) after a
// quarter of the file; our server must resend what it had in flight there
// on the first path and finish the file on it.
func TestNoqClientAbandon(t *testing.T) {
	r := runNoqClient(t, "--close-path-after", fmt.Sprint(fileSize/4))
	for _, p := range r.res.Paths {
		t.Logf("noq client path %d (local %s): received %d bytes", p.ID, p.LocalIP, p.RxBytes)
	}
	for _, p := range r.serverPaths {
		t.Logf("our server path %d %v->%v: sent %d bytes, state %s", p.ID, p.Local, p.Remote, p.BytesSent, p.State)
		if p.ID != 0 && p.State == "active" {
			t.Errorf("our server's path %d is still active after noq abandoned it", p.ID)
		}
	}
}
