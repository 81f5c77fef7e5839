package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
)

// picoquicEnv names picoquicdemo, built from local sources by
// interop/picoquic/build.sh (there is no picoquic package to install and no
// network access to its repository on CI machines, so the tests are opt-in).
const picoquicEnv = "MPQ_PICOQUIC"

// picoquicDemo returns the picoquicdemo binary, or skips the test.
func picoquicDemo(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(picoquicEnv)
	if bin == "" {
		t.Skipf("%s not set: build picoquicdemo with interop/picoquic/build.sh PICOQUIC_SRC PICOTLS_SRC and set %s=/path/to/picoquicdemo (docs/guides/interoperability.md)", picoquicEnv, picoquicEnv)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		t.Fatalf("%s=%s is not an executable file (%v)", picoquicEnv, bin, err)
	}
	return bin
}

// runPicoquic starts picoquicdemo with args in dir; it is killed when the
// test ends, and its output is logged if the test fails (or written to
// MPQ_INTEROP_LOGDIR). The returned channel yields its exit error.
func runPicoquic(t *testing.T, ctx context.Context, dir string, args ...string) <-chan error {
	t.Helper()
	cmd := exec.CommandContext(ctx, picoquicDemo(t), args...)
	cmd.Dir = dir
	cmd.WaitDelay = 2 * time.Second
	out := &tailBuffer{max: 64 << 10}
	var w io.Writer = out
	if ld := os.Getenv(logDirEnv); ld != "" {
		f, err := os.Create(filepath.Join(ld, strings.ReplaceAll(t.Name(), "/", "_")+"_picoquicdemo.log"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		w = io.MultiWriter(out, f)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ctx.Done()
		if t.Failed() {
			t.Logf("picoquicdemo %s output (tail):\n%s", strings.Join(args, " "), out.String())
		}
	})
	return done
}

// freeUDPPort returns a UDP port of 127.0.0.1 that was free a moment ago
// (picoquicdemo takes a port number, not a socket).
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// loopbackIndex is the interface index of the loopback interface, which
// picoquicdemo's -A option needs for its second path.
func loopbackIndex(t *testing.T) int {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			return i.Index
		}
	}
	t.Skip("no loopback interface")
	return 0
}

// syncBuffer collects a qlog trace written by a connection's goroutine,
// and passes it on to also (the MPQ_INTEROP_LOGDIR file) if set.
type syncBuffer struct {
	mu   sync.Mutex
	b    bytes.Buffer
	also io.WriteCloser
}

// captureQlog makes cfg's connection write its qlog trace into the
// returned buffer as well as where cfg already sends it.
func captureQlog(cfg *mpquic.Config) *syncBuffer {
	s := &syncBuffer{}
	prev := cfg.Qlog
	cfg.Qlog = func(vantage string, odcid []byte) io.WriteCloser {
		if prev != nil {
			if w := prev(vantage, odcid); w != nil {
				s.also = w
			}
		}
		return s
	}
	return s
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.also != nil {
		_, _ = s.also.Write(p) // a diagnostic copy: its errors do not matter
	}
	return s.b.Write(p)
}

func (s *syncBuffer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.also != nil {
		return s.also.Close()
	}
	return nil
}

func (s *syncBuffer) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

// qlogEvent is the part of one of our JSON-SEQ qlog events the checks read.
type qlogEvent struct {
	Name string `json:"name"`
	Data struct {
		PathID      *uint64 `json:"path_id"`
		TupleID     string  `json:"tuple_id"`
		State       string  `json:"state"`
		TupleRemote *struct {
			IP   string `json:"ip_v4"`
			Port int    `json:"port_v4"`
		} `json:"tuple_remote"`
		Frames []struct {
			Type string `json:"frame_type"`
			Data string `json:"data"`
		} `json:"frames"`
	} `json:"data"`
}

// parseQlog splits one of our JSON-SEQ traces into events.
func parseQlog(t *testing.T, trace []byte) []qlogEvent {
	t.Helper()
	var out []qlogEvent
	sc := bufio.NewScanner(bytes.NewReader(trace))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimLeft(sc.Bytes(), "\x1e")
		if len(line) == 0 {
			continue
		}
		var e qlogEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("qlog line %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// checkPathResponses checks, in our end's trace, that every PATH_CHALLENGE
// received was answered by a PATH_RESPONSE with its data sent on the path
// ID it arrived on (RFC 9000 Section 8.2.2 with
// draft-ietf-quic-multipath-21 Section 3.1). It returns how many
// challenges there were. Our qlog names paths by path ID; that the answer
// also goes to the addresses the challenge came from, when they differ
// from the path's, is core.TestPathResponseOnArrivalTuple's subject (and
// docs/guides/captures.md's packet capture).
func checkPathResponses(t *testing.T, events []qlogEvent) int {
	t.Helper()
	type key struct {
		path uint64
		data string
	}
	pending := map[key]bool{}
	n := 0
	for _, e := range events {
		if e.Data.PathID == nil {
			continue
		}
		for _, f := range e.Data.Frames {
			k := key{*e.Data.PathID, f.Data}
			switch {
			case e.Name == "quic:packet_received" && f.Type == "path_challenge":
				pending[k] = true
				n++
			case e.Name == "quic:packet_sent" && f.Type == "path_response":
				if !pending[k] {
					t.Errorf("PATH_RESPONSE %s sent on path %d, where no PATH_CHALLENGE with that data arrived", f.Data, k.path)
				}
				delete(pending, k)
			}
		}
	}
	for k := range pending {
		t.Errorf("PATH_CHALLENGE %s on path %d never answered on that path", k.data, k.path)
	}
	return n
}

// dialStarting dials a picoquicdemo server that may not listen yet: it
// prints nothing when its socket is ready (its output is buffered in a
// pipe), and a dial before that fails on the ICMP port unreachable. It
// tries again every 50 ms for up to 10 s.
func dialStarting(t *testing.T, ctx context.Context, addr string, cfg *mpquic.Config) *mpquic.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := mpquic.DialWithOptions(ctx, addr, cfg, mpquic.DialOptions{LocalAddr: clientAddr1 + ":0"})
		if err == nil {
			return c
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("dial picoquicdemo at %s: %v (last error %v)", addr, ctx.Err(), err)
		}
	}
}

// picoquicServerArgs are picoquicdemo's server flags for the fixture.
func picoquicServerArgs(f *fixture, port int, multipath bool) []string {
	args := []string{"-c", f.certFile, "-k", f.keyFile, "-p", fmt.Sprint(port), "-w", f.root, "-1"}
	if multipath {
		args = append(args, "-M")
	}
	return args
}

// TestPicoquicServer: our client downloads the file from picoquicdemo's
// server (hq-interop), over one path with plain QUIC v1 and over two with
// the multipath extension (the second path from 127.0.0.2).
func TestPicoquicServer(t *testing.T) {
	picoquicDemo(t)
	for _, multipath := range []bool{false, true} {
		name := map[bool]string{false: "single path", true: "multipath"}[multipath]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			port := freeUDPPort(t)
			runPicoquic(t, ctx, t.TempDir(), picoquicServerArgs(f, port, multipath)...)
			cfg := f.config(t, false)
			cfg.DisableMultipath = !multipath
			trace := captureQlog(cfg)
			c := dialStarting(t, ctx, fmt.Sprintf("127.0.0.1:%d", port), cfg)
			defer c.Close()
			if c.MultipathEnabled() != multipath {
				t.Fatalf("multipath negotiated: %v, want %v", c.MultipathEnabled(), multipath)
			}
			if multipath {
				if _, err := c.AddPath(ctx, clientAddr2+":0"); err != nil {
					t.Fatalf("add path from %s: %v", clientAddr2, err)
				}
			}
			d := download(t, ctx, c, f, nil)
			t.Logf("downloaded %d bytes from picoquic in %v (%.0f Mbit/s)", fileSize, d.Round(time.Millisecond), fileSize*8/d.Seconds()/1e6)
			if multipath {
				checkOurPaths(t, "client", c.Paths(), false)
			}
			n := checkPathResponses(t, parseQlog(t, trace.bytes()))
			t.Logf("PATH_CHALLENGEs from picoquic answered on their path: %d", n)
		})
	}
}

// TestPicoquicClient: picoquicdemo's client downloads the file from our
// server: over one path, over two (multipath, -A), after a simulated NAT
// rebinding (-f 1: its port changes after the handshake and packets to the
// old one are lost), after a migration to a new port (-f 3), and over two
// paths with a rebinding of the first.
func TestPicoquicClient(t *testing.T) {
	picoquicDemo(t)
	for _, tc := range []struct {
		name      string
		multipath bool
		flags     []string
		// moves: the client's address changes, so our server must move
		// path 0 to its new address, validated.
		moves bool
	}{
		{"single path", false, nil, false},
		{"multipath", true, nil, false},
		{"nat rebinding", false, []string{"-f", "1"}, true},
		{"migration", false, []string{"-f", "3"}, true},
		{"multipath nat rebinding", true, []string{"-f", "1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cfg := f.config(t, true)
			trace := captureQlog(cfg)
			addr, end := serveOnce(t, ctx, f, cfg)

			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			port := fmt.Sprint(addr.Port)
			args := []string{"-a", hq.ALPN, "-n", "localhost", "-o", out, "-d", "20000"}
			if tc.multipath {
				args = append(args, "-M", "-A", fmt.Sprintf("%s/%d", clientAddr2, loopbackIndex(t)))
			}
			args = append(append(args, tc.flags...), "127.0.0.1", port, "/big")
			start := time.Now()
			select {
			case err := <-runPicoquic(t, ctx, dir, args...):
				if err != nil {
					t.Fatalf("picoquicdemo: %v", err)
				}
			case <-ctx.Done():
				t.Fatal("picoquicdemo did not finish")
			}
			elapsed := time.Since(start)
			got, err := os.ReadFile(filepath.Join(out, "big"))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(got); len(got) != fileSize || sum != f.sum {
				t.Fatalf("picoquic got %d bytes (sha256 %x), want %d (sha256 %x)", len(got), sum, fileSize, f.sum)
			}
			t.Logf("picoquic downloaded %d bytes (process %v)", len(got), elapsed.Round(time.Millisecond))

			e := waitServed(t, ctx, end, tc.multipath)
			t.Logf("our server's connection ended with %v", e.err)
			if tc.multipath {
				checkOurPaths(t, "server", e.paths, true)
			}
			events := parseQlog(t, trace.bytes())
			n := checkPathResponses(t, events)
			t.Logf("PATH_CHALLENGEs from picoquic answered on their path: %d", n)
			if tc.moves {
				checkMoved(t, events, e.paths)
			}
		})
	}
}

// checkMoved checks that our server moved path 0 to the client's new
// address: the trace shows it validating a new address of path 0 and then
// the path active there, and the path ended at that address.
func checkMoved(t *testing.T, events []qlogEvent, paths []mpquic.PathStats) {
	t.Helper()
	validating, active := "", ""
	for _, e := range events {
		if e.Name != "quic:tuple_assigned" || e.Data.TupleID != "0" || e.Data.TupleRemote == nil {
			continue
		}
		addr := fmt.Sprintf("%s:%d", e.Data.TupleRemote.IP, e.Data.TupleRemote.Port)
		switch e.Data.State {
		case "validating":
			validating = addr
		case "active":
			if addr == validating {
				active = addr
			}
		}
	}
	if validating == "" || active == "" {
		t.Fatalf("our server did not move path 0 to a new client address and validate it (validating %q, active %q)", validating, active)
	}
	for _, p := range paths {
		if p.ID == 0 {
			t.Logf("our server's path 0 ended at %v (moved and validated there: %s)", p.Remote, active)
			if p.Remote.String() != active {
				t.Errorf("path 0 ended at %v, not at the validated new address %s", p.Remote, active)
			}
		}
	}
	if len(paths) == 0 {
		t.Error("our server reports no paths")
	}
}

// TestPicoquicServerAbandon: our client abandons its second path
// (PATH_ABANDON) while picoquic sends the file over both; picoquic must
// send what was in flight there again on the first path, and the file
// arrives whole.
func TestPicoquicServerAbandon(t *testing.T) {
	picoquicDemo(t)
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := freeUDPPort(t)
	runPicoquic(t, ctx, t.TempDir(), picoquicServerArgs(f, port, true)...)
	cfg := f.config(t, false)
	trace := captureQlog(cfg)
	c := dialStarting(t, ctx, fmt.Sprintf("127.0.0.1:%d", port), cfg)
	defer c.Close()
	if !c.MultipathEnabled() {
		t.Fatal("multipath not negotiated with picoquic")
	}
	id, err := c.AddPath(ctx, clientAddr2+":0")
	if err != nil {
		t.Fatalf("add path from %s: %v", clientAddr2, err)
	}
	downloadAbandoning(t, ctx, c, f, id)
	for _, p := range c.Paths() {
		t.Logf("our client path %d %v->%v: received %d bytes, state %s", p.ID, p.Local, p.Remote, p.BytesReceived, p.State)
		if p.ID == id && p.State != "closing" {
			t.Errorf("path %d is %s after PATH_ABANDON", id, p.State)
		}
	}
	events := parseQlog(t, trace.bytes())
	sent, got := false, false
	for _, e := range events {
		for _, fr := range e.Data.Frames {
			if fr.Type == "path_abandon" {
				sent = sent || e.Name == "quic:packet_sent"
				got = got || e.Name == "quic:packet_received"
			}
		}
	}
	t.Logf("PATH_ABANDON sent: %v, picoquic's PATH_ABANDON received: %v", sent, got)
	if !sent {
		t.Error("our client sent no PATH_ABANDON")
	}
	checkPathResponses(t, events)
}
