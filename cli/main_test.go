package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
)

// fileSize is the size of the file the interop tests transfer.
const fileSize = 5 << 20

// testRoot writes a directory with a seeded random file "data" of
// fileSize bytes and returns the directory and the file's content.
func testRoot(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, fileSize)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, b
}

// output collects what a command writes; serve writes from several
// goroutines. It announces the address of the "serving … on ADDR" line.
type output struct {
	mu   sync.Mutex
	b    bytes.Buffer
	addr chan string
	seen bool
}

var servingLine = regexp.MustCompile(`serving .* on (\S+) \(hq-interop\)\n`)

func newOutput() *output { return &output{addr: make(chan string, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Write(p)
	if !o.seen {
		if m := servingLine.FindSubmatch(o.b.Bytes()); m != nil {
			o.seen = true
			o.addr <- string(m[1])
		}
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// checkNoPanic fails if a command's output shows a panic.
func checkNoPanic(t *testing.T, outputs ...string) {
	t.Helper()
	for _, s := range outputs {
		if strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
			t.Fatalf("output shows a panic:\n%s", s)
		}
	}
}

// startServe runs "mpq serve" in-process on a free loopback port and
// returns its address and stderr. The server is stopped (and must exit 0)
// at the end of the test; stop stops it earlier and returns its status.
func startServe(t *testing.T, root string, extra ...string) (addr string, stderr *output, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = newOutput()
	var stdout output
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--root", root}, extra...)
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &stdout, stderr) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("mpq serve did not stop within 20 s of cancellation; stderr:\n%s", stderr)
			}
			checkNoPanic(t, stderr.String())
		})
		return code
	}
	t.Cleanup(func() {
		if c := stop(); c != 0 {
			t.Errorf("mpq serve exited with %d; stderr:\n%s", c, stderr)
		}
	})
	select {
	case addr = <-stderr.addr:
	case c := <-done:
		cancel()
		once.Do(func() { code = c })
		t.Fatalf("mpq serve exited with %d before serving; stderr:\n%s", c, stderr)
	case <-time.After(10 * time.Second):
		t.Fatalf("mpq serve announced no address within 10 s; stderr:\n%s", stderr)
	}
	return addr, stderr, stop
}

// runCmd runs a command line in-process with a bound on its duration.
// cmdHangGuard bounds one command of runCmd: a guard against a hang, not
// a measure of speed (TestPaper's 47 runs take about 60 s under the race
// detector on 2 busy cores).
const cmdHangGuard = 5 * time.Minute

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut output
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &out, &errOut) }()
	select {
	case code = <-done:
	case <-time.After(cmdHangGuard):
		cancel()
		t.Fatalf("mpq %s did not finish within %v; stderr:\n%s", strings.Join(args, " "), cmdHangGuard, errOut.String())
	}
	checkNoPanic(t, out.String(), errOut.String())
	return code, out.String(), errOut.String()
}

// quicgoGet fetches p from an hq-interop server with a quic-go client.
func quicgoGet(ctx context.Context, addr, p string) ([]byte, error) {
	tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{hq.ALPN}}
	c, err := quicgo.DialAddr(ctx, addr, tc, &quicgo.Config{})
	if err != nil {
		return nil, err
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintf(s, "GET %s\r\n", p); err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		s.SetReadDeadline(dl)
	}
	return io.ReadAll(s)
}

// truncatedPath is a file the test server starts sending and then resets.
const truncatedPath = "/truncated"

// shortPath is a file truncated on the server: the test server publishes
// the checksum of the whole of root's "data" (shortPath.sha256) and sends
// its first half, ending the stream normally.
const shortPath = "/short"

// quicgoServer serves root over hq-interop with quic-go and a request
// handler of its own, so that mpq get is checked against code that is not
// ours. truncatedPath sends 1 MB and then resets the stream.
func quicgoServer(t *testing.T, root string) string {
	t.Helper()
	cert, err := certs.SelfSigned(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{hq.ALPN}}
	ln, err := quicgo.ListenAddr("127.0.0.1:0", tc, &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.CloseWithError(0, "")
				for {
					s, err := c.AcceptStream(c.Context())
					if err != nil {
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						serveQuicgoStream(s, root)
					}()
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func serveQuicgoStream(s *quicgo.Stream, root string) {
	req, err := io.ReadAll(io.LimitReader(s, 4096))
	if err != nil {
		s.CancelWrite(hq.ErrorNotFound)
		return
	}
	p, ok := strings.CutPrefix(strings.TrimSuffix(string(req), "\r\n"), "GET ")
	if !ok {
		s.CancelWrite(hq.ErrorNotFound)
		return
	}
	if p == truncatedPath {
		s.Write(make([]byte, 1<<20))
		s.CancelWrite(0x11)
		return
	}
	if p == shortPath || p == shortPath+hq.SumSuffix {
		b, err := os.ReadFile(filepath.Join(root, "data"))
		if err != nil {
			s.CancelWrite(hq.ErrorNotFound)
			return
		}
		if p == shortPath {
			s.Write(b[:len(b)/2])
		} else {
			s.Write([]byte(hq.Sum{SHA256: sha256.Sum256(b), Size: int64(len(b))}.String()))
		}
		s.Close()
		return
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.Base(p)))
	if err != nil {
		s.CancelWrite(hq.ErrorNotFound)
		return
	}
	s.Write(b)
	s.Close()
}

// silentAddr is a UDP address where nothing answers.
func silentAddr(t *testing.T) string {
	t.Helper()
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uc.Close() })
	return uc.LocalAddr().String()
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestServeToQuicgoClient(t *testing.T) {
	root, data := testRoot(t)
	addr, stderr, stop := startServe(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got, err := quicgoGet(ctx, addr, "/data")
	if err != nil {
		t.Fatalf("quic-go client: %v; server stderr:\n%s", err, stderr)
	}
	if len(got) != len(data) || hashOf(got) != hashOf(data) {
		t.Fatalf("got %d bytes (sha256 %s), want %d (sha256 %s)", len(got), hashOf(got), len(data), hashOf(data))
	}
	// A missing file resets the stream with the hq-interop error code.
	_, err = quicgoGet(ctx, addr, "/missing")
	var se *quicgo.StreamError
	if !errors.As(err, &se) || se.ErrorCode != hq.ErrorNotFound {
		t.Fatalf("missing file: %v, want a stream reset with 0x%x", err, hq.ErrorNotFound)
	}
	if code := stop(); code != 0 {
		t.Fatalf("mpq serve exited with %d after cancellation; stderr:\n%s", code, stderr)
	}
}

// TestServeStopsDuringTransfer cancels mpq serve while a client is in the
// middle of a download that it does not read: serve must still close the
// connection, wait for its handler and exit 0.
func TestServeStopsDuringTransfer(t *testing.T) {
	root, _ := testRoot(t)
	addr, stderr, stop := startServe(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tc := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{hq.ALPN}}
	c, err := quicgo.DialAddr(ctx, addr, tc, &quicgo.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseWithError(0, "")
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprint(s, "GET /data\r\n")
	s.Close()
	if _, err := io.ReadFull(s, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	// The server is now blocked on flow control with most of the file
	// unsent.
	if code := stop(); code != 0 {
		t.Fatalf("mpq serve exited with %d; stderr:\n%s", code, stderr)
	}
	select {
	case <-c.Context().Done():
	case <-ctx.Done():
		t.Fatal("the client's connection outlived the server")
	}
}

// getResultFields are the keys of mpq get's JSON line, exactly.
var getResultFields = []string{"bytes", "handshake_ms", "ok", "sha256", "total_ms"}

// checkGetOutput parses the JSON line of mpq get and checks it describes
// data.
func checkGetOutput(t *testing.T, stdout string, data []byte) {
	t.Helper()
	if strings.Count(stdout, "\n") != 1 || !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout is not one line: %q", stdout)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &fields); err != nil {
		t.Fatalf("stdout %q: %v", stdout, err)
	}
	keys := slices.Sorted(maps.Keys(fields))
	if !slices.Equal(keys, getResultFields) {
		t.Fatalf("JSON keys %v, want %v", keys, getResultFields)
	}
	var res getResult
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Bytes != int64(len(data)) || res.SHA256 != hashOf(data) {
		t.Fatalf("result %+v, want ok, %d bytes, sha256 %s", res, len(data), hashOf(data))
	}
	if res.HandshakeMS <= 0 || res.TotalMS < res.HandshakeMS {
		t.Fatalf("times: handshake %v ms, total %v ms", res.HandshakeMS, res.TotalMS)
	}
}

func TestGetFromQuicgoServer(t *testing.T) {
	root, data := testRoot(t)
	addr := quicgoServer(t, root)
	outDir, qlogDir := t.TempDir(), filepath.Join(t.TempDir(), "qlog")
	keylog := filepath.Join(t.TempDir(), "keys.log")
	out := filepath.Join(outDir, "data.out")
	code, stdout, stderr := runCmd(t, "get", "--addr", addr, "--path", "/data", "--out", out,
		"--qlog", qlogDir, "--keylog", keylog, "--timeout", "50s")
	if code != 0 {
		t.Fatalf("mpq get exited with %d; stderr:\n%s", code, stderr)
	}
	checkGetOutput(t, stdout, data)
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if hashOf(got) != hashOf(data) {
		t.Fatalf("--out file: %d bytes, sha256 %s, want %s", len(got), hashOf(got), hashOf(data))
	}
	if names := dirNames(t, outDir); len(names) != 1 {
		t.Fatalf("output directory holds %v, want only data.out", names)
	}

	// One complete client trace: every record is JSON, and the closing of
	// the connection is in it (the trace was flushed before get returned).
	traces, _ := filepath.Glob(filepath.Join(qlogDir, "*.sqlog"))
	if len(traces) != 1 || !strings.HasSuffix(traces[0], "_client.sqlog") {
		t.Fatalf("qlog traces %v, want one client trace", traces)
	}
	tr, err := os.ReadFile(traces[0])
	if err != nil {
		t.Fatal(err)
	}
	records := bytes.Split(bytes.TrimPrefix(tr, []byte{0x1e}), []byte{0x1e})
	if len(records) < 10 {
		t.Fatalf("trace has %d records", len(records))
	}
	closed := false
	for i, r := range records {
		var ev struct{ Name string }
		if err := json.Unmarshal(r, &ev); err != nil {
			t.Fatalf("trace record %d %q: %v", i, r, err)
		}
		closed = closed || ev.Name == "quic:connection_closed"
	}
	if !closed {
		t.Fatal("trace has no quic:connection_closed event")
	}

	// The key log has the client's 1-RTT secret in NSS format.
	kl, err := os.ReadFile(keylog)
	if err != nil {
		t.Fatal(err)
	}
	nss := regexp.MustCompile(`(?m)^CLIENT_TRAFFIC_SECRET_0 [0-9a-f]{64} [0-9a-f]{64,96}$`)
	if !nss.Match(kl) {
		t.Fatalf("key log has no CLIENT_TRAFFIC_SECRET_0 line:\n%s", kl)
	}
}

// TestServeLogsCounters checks that mpq serve logs the listener's
// counters when it stops, and takes the limit and reset key flags.
func TestServeLogsCounters(t *testing.T) {
	root, data := testRoot(t)
	key := filepath.Join(t.TempDir(), "reset.key")
	if err := os.WriteFile(key, []byte("a secret of more than sixteen bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, stderr, stop := startServe(t, root, "--max-conns", "10", "--max-handshakes", "5", "--retry-threshold", "2",
		"--reset-key-file", key, "--handshake-timeout", "3s")
	code, stdout, errOut := runCmd(t, "get", "--addr", addr, "--path", "/data", "--timeout", "50s")
	if code != 0 {
		t.Fatalf("mpq get exited with %d; stderr:\n%s", code, errOut)
	}
	checkGetOutput(t, stdout, data)
	if c := stop(); c != 0 {
		t.Fatalf("mpq serve exited with %d", c)
	}
	if !regexp.MustCompile(`mpq serve: connections accepted 1, retried 0, refused 0 \(0 for their prefix's share, 0 for the memory budget\), rejected 0, in handshake 0, open 0; handshakes evicted 0, quiet 0; closed for the memory budget 0; datagrams dropped \d+ \(\+0 at full connection queues\); stateless resets \d+`).MatchString(stderr.String()) {
		t.Fatalf("no counters in the log:\n%s", stderr)
	}
}

func TestGetFromServe(t *testing.T) {
	root, data := testRoot(t)
	for _, retry := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry=%v", retry), func(t *testing.T) {
			var extra []string
			if retry {
				extra = []string{"--retry"}
			}
			addr, _, _ := startServe(t, root, extra...)
			code, stdout, stderr := runCmd(t, "get", "--addr", addr, "--path", "/data", "--timeout", "50s")
			if code != 0 {
				t.Fatalf("mpq get exited with %d; stderr:\n%s", code, stderr)
			}
			checkGetOutput(t, stdout, data)
		})
	}
}

// TestGetVerifies: a download that matches --expect-size, --expect-sha256
// and the checksum mpq serve publishes (--verify) succeeds and writes the
// file; the server answers /data.sha256 with the file's checksum.
// (TestBadInput checks the mismatches.)
func TestGetVerifies(t *testing.T) {
	root, data := testRoot(t)
	addr, _, _ := startServe(t, root)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runCmd(t, "get", "--addr", addr, "--path", "/data", "--out", out, "--timeout", "50s",
		"--verify", "--expect-size", fmt.Sprint(len(data)), "--expect-sha256", hashOf(data))
	if code != 0 {
		t.Fatalf("mpq get exited with %d; stderr:\n%s", code, stderr)
	}
	checkGetOutput(t, stdout, data)
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("--out holds %d bytes (%v), want the file's %d", len(b), err, len(data))
	}
	sumOut := filepath.Join(t.TempDir(), "sum")
	code, _, stderr = runCmd(t, "get", "--addr", addr, "--path", "/data.sha256", "--out", sumOut, "--timeout", "50s")
	if code != 0 {
		t.Fatalf("mpq get /data.sha256 exited with %d; stderr:\n%s", code, stderr)
	}
	want := fmt.Sprintf("sha256 %s\nsize %d\n", hashOf(data), len(data))
	if b, err := os.ReadFile(sumOut); err != nil || string(b) != want {
		t.Fatalf("/data.sha256 is %q (%v), want %q", b, err, want)
	}
}

func TestBadInput(t *testing.T) {
	root, data := testRoot(t)
	server := quicgoServer(t, root)
	silent := silentAddr(t)
	shortKey := filepath.Join(t.TempDir(), "short.key")
	if err := os.WriteFile(shortKey, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"no command", nil, 2, "usage: mpq COMMAND"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"get: unknown flag", []string{"get", "--bogus", "--path", "/data"}, 2, "flag provided but not defined: -bogus"},
		{"serve: unknown flag", []string{"serve", "--bogus", "--root", root}, 2, "flag provided but not defined: -bogus"},
		{"get: missing --path", []string{"get", "--addr", server}, 2, "--path is required"},
		{"get: stray argument", []string{"get", "--path", "/data", "extra"}, 2, `unexpected argument "extra"`},
		{"get: bad timeout", []string{"get", "--path", "/data", "--timeout", "0s"}, 2, "--timeout 0s must be positive"},
		{"get: unknown congestion controller", []string{"get", "--path", "/data", "--congestion", "nope"}, 2, "nope"},
		{"get: --out in a missing directory", []string{"get", "--addr", server, "--path", "/data", "--out", "{tmp}/no/such/dir/file"}, 2, "no/such/dir does not exist"},
		{"get: --out is a directory", []string{"get", "--addr", server, "--path", "/data", "--out", "{tmp}"}, 2, "is a directory"},
		{"serve: missing --root", []string{"serve", "--addr", "127.0.0.1:0"}, 2, "--root is required"},
		{"serve: --root not a directory", []string{"serve", "--addr", "127.0.0.1:0", "--root", "{tmp}/none"}, 2, "is not a directory"},
		{"serve: bad address", []string{"serve", "--addr", "127.0.0.1:99999", "--root", root}, 1, "listen"},
		{"get: missing file", []string{"get", "--addr", server, "--path", "/missing", "--out", "{tmp}/out"}, 1, "/missing: not found on the server"},
		{"get: reset mid-transfer", []string{"get", "--addr", server, "--path", truncatedPath, "--out", "{tmp}/out"}, 1, "aborted by remote with error 0x11"},
		{"get: unreachable server", []string{"get", "--addr", silent, "--path", "/data", "--timeout", "1s", "--out", "{tmp}/out"}, 1, "no QUIC handshake within 1s"},
		{"serve: packet size above the UDP limit", []string{"serve", "--root", root, "--max-packet-size", "65528"}, 2, "--max-packet-size 65528: must be between 1200 and 65527"},
		{"get: packet size below QUIC's minimum", []string{"get", "--path", "/data", "--max-packet-size", "1199"}, 2, "--max-packet-size 1199: must be between 1200 and 65527"},
		{"serve: no handshake timeout", []string{"serve", "--root", root, "--handshake-timeout", "0s"}, 2, "--handshake-timeout 0s must be positive"},
		{"serve: bad --send-budget", []string{"serve", "--root", root, "--send-budget", "lots"}, 2, "invalid value \"lots\" for flag -send-budget"},
		{"serve: tiny --send-budget", []string{"serve", "--root", root, "--send-budget", "1kB"}, 2, "--memory-budget 1000: want at least 42041344 bytes"},
		{"serve: tiny --memory-budget", []string{"serve", "--root", root, "--memory-budget", "40MiB"}, 2, "--memory-budget 41943040: want at least 42041344 bytes"},
		{"serve: negative --send-stall-timeout", []string{"serve", "--root", root, "--send-stall-timeout", "-1s"}, 2, "--send-stall-timeout -1s must not be negative"},
		{"serve: negative share per prefix", []string{"serve", "--root", root, "--max-handshakes-per-prefix", "-1"}, 2, "--max-handshakes-per-prefix -1 must not be negative"},
		{"serve: no handshakes allowed", []string{"serve", "--root", root, "--max-handshakes", "0"}, 2, "--max-handshakes 0 must be at least 1"},
		{"serve: missing reset key file", []string{"serve", "--root", root, "--reset-key-file", "{tmp}/none"}, 2, "--reset-key-file: open"},
		{"serve: reset key too short", []string{"serve", "--root", root, "--reset-key-file", shortKey}, 2, "want at least 16"},
		{"get: bad --expect-sha256", []string{"get", "--path", "/data", "--expect-sha256", "abc"}, 2, "--expect-sha256: bad SHA-256"},
		{"get: negative --expect-size", []string{"get", "--path", "/data", "--expect-size", "-2"}, 2, "invalid value \"-2\" for flag -expect-size: want a byte count, 0 or more"},
		{"get: truncated, --expect-size", []string{"get", "--addr", server, "--path", shortPath, "--out", "{tmp}/out", "--expect-size", fmt.Sprint(fileSize)},
			1, fmt.Sprintf("/short: %d bytes, --expect-size %d: nothing written", fileSize/2, fileSize)},
		{"get: truncated, --expect-sha256", []string{"get", "--addr", server, "--path", shortPath, "--out", "{tmp}/out", "--expect-sha256", hashOf(data)},
			1, "/short: SHA-256 " + hashOf(data[:fileSize/2]) + ", --expect-sha256 " + hashOf(data) + ": nothing written"},
		{"get: truncated, --verify", []string{"get", "--addr", server, "--path", shortPath, "--out", "{tmp}/out", "--verify"},
			1, fmt.Sprintf("/short: %d bytes, /short.sha256 %d: nothing written", fileSize/2, fileSize)},
		{"get: longer than --expect-size", []string{"get", "--addr", server, "--path", "/data", "--out", "{tmp}/out", "--expect-size", "1000"},
			1, "more than the 1000 bytes of --expect-size: nothing written"},
		{"get: --verify without a published checksum", []string{"get", "--addr", server, "--path", "/data", "--out", "{tmp}/out", "--verify"},
			1, "--verify: the server publishes no checksum of /data (/data.sha256 not found)"},
		{"get: --verify disagrees with --expect-sha256", []string{"get", "--addr", server, "--path", shortPath, "--out", "{tmp}/out", "--verify", "--expect-sha256", hashOf(nil)},
			1, "/short.sha256 gives SHA-256 " + hashOf(data) + ", --expect-sha256 " + hashOf(nil)},
		{"get: unresolvable address", []string{"get", "--addr", "no-such-host.invalid:1", "--path", "/data", "--timeout", "5s"}, 1, "no-such-host.invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			args := make([]string, len(tt.args))
			for i, a := range tt.args {
				args[i] = strings.ReplaceAll(a, "{tmp}", tmp)
			}
			code, stdout, stderr := runCmd(t, args...)
			if code != tt.code {
				t.Fatalf("exit status %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if stdout != "" {
				t.Fatalf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("stderr %q does not mention %q", stderr, tt.stderr)
			}
			// A failed download leaves no file behind, partial or
			// temporary.
			if names := dirNames(t, tmp); len(names) != 0 {
				t.Fatalf("files left behind: %v", names)
			}
		})
	}
}

// TestGetKeepsOldOutputOnFailure checks that a failed download does not
// touch an existing --out file.
func TestGetKeepsOldOutputOnFailure(t *testing.T) {
	root, _ := testRoot(t)
	server := quicgoServer(t, root)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd(t, "get", "--addr", server, "--path", truncatedPath, "--out", out)
	if code != 1 {
		t.Fatalf("exit status %d, want 1; stderr:\n%s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "old" {
		t.Fatalf("--out after a failed download: %q, %v", b, err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only out", names)
	}
}

// TestGetClosedPortFailsFast: on Linux, mpq get to a port nobody listens
// on fails at once on the ICMP port unreachable error, not after --timeout.
func TestGetClosedPortFailsFast(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ICMP errors are read on Linux only")
	}
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := uc.LocalAddr().String()
	uc.Close()
	start := time.Now()
	code, _, stderr := runCmd(t, "get", "--addr", addr, "--path", "/data", "--timeout", "20s", "--out", filepath.Join(t.TempDir(), "out"))
	if code != 1 || !strings.Contains(stderr, "peer unreachable: port unreachable") || time.Since(start) > 5*time.Second {
		t.Fatalf("exit %d after %v; stderr:\n%s", code, time.Since(start), stderr)
	}
}
