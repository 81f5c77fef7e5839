package mpquic_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// Bounds of TestFrozenReaders.
const (
	frozenClients = 20
	frozenBudget  = 8 << 20
	frozenStall   = 2 * time.Second
	// frozenHeapBound bounds the live heap's growth while the clients
	// hold their downloads, their own receive buffers (a 512 KiB stream
	// window each, never read) included; without the budget the server's
	// send buffers alone reach 4 MiB a connection, 80 MB.
	frozenHeapBound = 40 << 20
)

// TestFrozenReaders: clients that request a 20 MB file and never read it.
// The server's send buffers together stay within the send budget (each
// connection holds at most its share, where StreamSendBuffer would allow
// 4 MiB), the live heap grows by less than frozenHeapBound, a client that
// reads meanwhile downloads the file whole, and the server closes the
// frozen connections SendStallTimeout after their last acknowledgement,
// returning their memory.
func TestFrozenReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("frozen readers")
	}
	f := getFiles(t)
	budget := core.NewSendBudget(frozenBudget)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), SendBudget: budget, SendStallTimeout: frozenStall})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, f.root)
	ctx := ctxT(t, 60*time.Second)

	runtime.GC()
	base := liveHeap()
	var frozen []*mpquic.Conn
	for range frozenClients {
		c, s := dialStream(ctx, t, l.Addr().String())
		if _, err := fmt.Fprintf(s, "GET /big\r\n"); err != nil {
			t.Fatal(err)
		}
		s.Close() // the request sent; the answer is never read
		frozen = append(frozen, c)
	}
	// While they hold: the budget's use and the live heap.
	var peakUsed int64
	var peakHeap uint64
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		used, _ := budget.Used()
		peakUsed = max(peakUsed, used)
		if h := liveHeap(); h > base {
			peakHeap = max(peakHeap, h-base)
		}
	}
	// A client that reads is served meanwhile.
	c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	start := time.Now()
	if _, err := hq.Get(ctx, s, "/big", &b); err != nil {
		t.Fatalf("download beside the frozen readers: %v", err)
	}
	c.Close()
	checkDownload(t, "big", &b, f.big)
	t.Logf("%d frozen readers: send buffers at most %.1f MB (budget %d MB), live heap +%.1f MB; a reader's download of %d MB in %v",
		frozenClients, float64(peakUsed)/(1<<20), frozenBudget>>20, float64(peakHeap)/(1<<20), len(f.big)>>20, time.Since(start).Round(time.Millisecond))
	if peakUsed == 0 || peakUsed > frozenBudget+frozenClients*core.MinSendShare {
		t.Errorf("send buffers held %d bytes at most, want some and at most the budget %d", peakUsed, frozenBudget)
	}
	if peakHeap > frozenHeapBound {
		t.Errorf("live heap grew by %.1f MB, bound %d MB", float64(peakHeap)/(1<<20), frozenHeapBound>>20)
	}
	// The server ends the frozen connections SendStallTimeout after
	// their last acknowledgement (give or take the closing period).
	deadline := time.Now().Add(frozenStall + 3*time.Second)
	for {
		closed := 0
		for _, c := range frozen {
			select {
			case <-c.Done():
				closed++
			default:
			}
		}
		if closed == len(frozen) && l.Stats().Conns == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d frozen connections closed %v after the stall timeout; server %+v", closed, len(frozen), frozenStall+3*time.Second, l.Stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if used, conns := budget.Used(); used != 0 || conns != 0 || budget.Open() != 0 {
		t.Fatalf("budget holds %d bytes for %d connections, and charges %d, once they are gone", used, conns, budget.Open())
	}
	t.Logf("frozen connections closed: %v", frozen[0].Err())
}

// Bounds of TestBudgetReclaims: a budget that charges each connection
// budgetConnCost, and the frozen readers; they leave the send buffers
// budgetLimit-budgetReaders*budgetConnCost, 4 MiB, while the first two
// take 4 MiB each (a stream's most) before the others arrive.
const (
	budgetLimit    = 8 << 20
	budgetConnCost = 256 << 10
	budgetReaders  = 16
)

// TestBudgetReclaims: the send budget charges each open connection its
// fixed cost, so that the send buffers' shares shrink as clients that do
// not read arrive; the first ones took more than their share while they
// were few and keep it while they do not read, so the server closes
// them, the longest stalled first, until the send buffers and the fixed
// costs fit in the limit again. A client that reads meanwhile is served
// whole and never closed.
func TestBudgetReclaims(t *testing.T) {
	if testing.Short() {
		t.Skip("frozen readers")
	}
	f := getFiles(t)
	budget := core.NewSendBudget(budgetLimit)
	budget.SetConnCost(budgetConnCost)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), SendBudget: budget, SendStallTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, f.root)
	ctx := ctxT(t, 60*time.Second)
	total := func() int64 {
		used, _ := budget.Used()
		return used + int64(budget.Open())*budgetConnCost
	}
	var frozen []*mpquic.Conn
	var peak int64
	for range budgetReaders {
		c, s := dialStream(ctx, t, l.Addr().String())
		if _, err := fmt.Fprintf(s, "GET /big\r\n"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		frozen = append(frozen, c)
		// Let it fill its send buffer before the next arrives.
		for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			peak = max(peak, total())
		}
	}
	// A client that reads, beside them.
	c, s := dialStream(ctx, t, l.Addr().String())
	got := make(chan error, 1)
	var b bytes.Buffer
	go func() {
		_, err := hq.Get(ctx, s, "/big", &b)
		got <- err
	}()
	// The server takes memory back within ReclaimStall and a few polls.
	deadline := time.Now().Add(core.ReclaimStall + 3*time.Second)
	for total() > budgetLimit {
		if time.Now().After(deadline) {
			used, _ := budget.Used()
			t.Fatalf("send buffers %d and %d connections' fixed costs exceed the limit %d %v after the peak %d; %d reclaimed",
				used, budget.Open(), budgetLimit, core.ReclaimStall+3*time.Second, peak, budget.Reclaimed())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := <-got; err != nil {
		t.Fatalf("download beside the frozen readers: %v (server closed %d for the budget)", err, budget.Reclaimed())
	}
	if err := c.Err(); err != nil {
		t.Fatalf("the reading client's connection ended: %v", err)
	}
	checkDownload(t, "big", &b, f.big)
	closed := 0
	for _, c := range frozen {
		select {
		case <-c.Done():
			closed++
			if !strings.Contains(c.Err().Error(), "memory budget") {
				t.Errorf("frozen reader closed with %v", c.Err())
			}
		default:
		}
	}
	st := l.Stats()
	t.Logf("%d frozen readers: send buffers and fixed costs peaked at %.1f MB (limit %d MB); %d closed for the budget (server counted %d), the rest within it",
		budgetReaders, float64(peak)/(1<<20), budgetLimit>>20, closed, st.Reclaimed)
	if peak <= budgetLimit {
		t.Errorf("peak %d within the limit %d: the test did not exceed the budget", peak, budgetLimit)
	}
	if closed == 0 || uint64(closed) != st.Reclaimed || closed == budgetReaders {
		t.Errorf("%d of %d frozen readers closed, server counted %d: want some, not all", closed, budgetReaders, st.Reclaimed)
	}
}

// TestBudgetRefuses: a server whose send budget affords the fixed costs
// and MinSendShare of three connections refuses the next with
// CONNECTION_REFUSED, and counts it.
func TestBudgetRefuses(t *testing.T) {
	const afforded = 3
	budget := core.NewSendBudget(afforded * (budgetConnCost + core.MinSendShare))
	budget.SetConnCost(budgetConnCost)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), SendBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, t.TempDir())
	ctx := ctxT(t, 20*time.Second)
	for range afforded {
		dialStream(ctx, t, l.Addr().String())
	}
	c, err := mpquic.Dial(ctx, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t)})
	if err == nil {
		c.Close()
		t.Fatalf("connection %d accepted, budget %d for %d bytes each", afforded+1, budget.Limit(), budgetConnCost+core.MinSendShare)
	}
	if st := l.Stats(); !strings.Contains(err.Error(), "CONNECTION_REFUSED") && !strings.Contains(err.Error(), "refused") || st.BudgetRefused == 0 {
		t.Fatalf("connection %d: %v; server refused %d for the budget", afforded+1, err, st.BudgetRefused)
	}
}

// TestFrozenReadersHoldNoCopyBuffer: a server streaming files to clients
// that do not read holds none of the buffers it reads the files into
// once their send buffers are full (hq.Serve copies through
// Stream.ReadFrom, which takes a buffer only while there is room).
func TestFrozenReadersHoldNoCopyBuffer(t *testing.T) {
	const readers = 10
	f := getFiles(t)
	budget := core.NewSendBudget(2 << 20)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), SendBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, f.root)
	ctx := ctxT(t, 20*time.Second)
	for range readers {
		_, s := dialStream(ctx, t, l.Addr().String())
		if _, err := fmt.Fprintf(s, "GET /big\r\n"); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	// Their send buffers fill: the budget's use stops changing.
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Since(since) < 300*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if used, conns := budget.Used(); used != last || conns < readers {
			last, since = used, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("send buffers still changing (%d bytes) after 10 s", last)
		}
	}
	if n := copyBuffersHeldAfter(3 * time.Second); n != 0 {
		t.Errorf("%d copy buffers held by %d streams blocked on full send buffers", n, readers)
	}
}

// copyBuffersHeldAfter returns how many of Stream.ReadFrom's buffers are
// taken once none is, or after d: a copy in progress when the send
// buffers stopped changing returns its buffer within moments, a stream
// blocked holding one never does.
func copyBuffersHeldAfter(d time.Duration) int64 {
	for deadline := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if n := mpquic.CopyBuffersHeld(); n == 0 || time.Now().After(deadline) {
			return n
		}
	}
}

// Bounds of TestIdleConnMemory: the connections, the file each
// downloads, and what each may then hold of the live heap, its client's
// side (about 0.5 MiB of receive buffers for its own socket) and the
// server's together.
const (
	idleConns         = 10
	idleConnFile      = 4 << 20
	idleConnHeapBound = 2 << 20
)

// TestIdleConnMemory: connections that downloaded a file and wait do not
// keep the server's send buffer alive (it held the file's last 4 MiB
// through the last STREAM frame it encoded, although the stream had
// freed it and the send budget counted it free).
func TestIdleConnMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("memory of many connections")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "file"), make([]byte, idleConnFile), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	serveFiles(l, root)
	ctx := ctxT(t, 30*time.Second)
	runtime.GC()
	base := liveHeap()
	for range idleConns {
		_, s := dialStream(ctx, t, l.Addr().String())
		var b bytes.Buffer
		if _, err := hq.Get(ctx, s, "/file", &b); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the last acknowledgements
	runtime.GC()
	per := (int64(liveHeap()) - int64(base)) / idleConns
	t.Logf("%d idle connections: %d bytes of live heap each (client and server)", idleConns, per)
	if per > idleConnHeapBound {
		t.Errorf("an idle connection holds %d bytes of live heap, bound %d", per, idleConnHeapBound)
	}
}

// dialStream dials addr and opens a stream; the connection is closed when
// the test ends.
func dialStream(ctx context.Context, t *testing.T, addr string) (*mpquic.Conn, *mpquic.Stream) {
	t.Helper()
	return dialStreamWith(ctx, t, addr, &mpquic.Config{TLS: clientTLS(t)})
}

// dialStreamWith is dialStream with the client's configuration cfg.
func dialStreamWith(ctx context.Context, t *testing.T, addr string, cfg *mpquic.Config) (*mpquic.Conn, *mpquic.Stream) {
	t.Helper()
	c, err := mpquic.Dial(ctx, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

// squeezeReader reads zeros. Once, on its second Read, it calls squeeze
// first: another connection takes what is left of the shared budget
// between ReadFrom's check for room and its write of the bytes read.
type squeezeReader struct {
	reads   int
	squeeze func()
}

func (r *squeezeReader) Read(p []byte) (int, error) {
	if r.reads++; r.reads == 2 {
		r.squeeze()
	}
	clear(p)
	return len(p), nil
}

// TestReadFromReservesRoom: Stream.ReadFrom holds no copy buffer when
// another connection takes the shared budget's room while it reads (the
// room it saw is reserved before the read). The budget affords two
// connections MinSendShare each; the reading client's stream window is
// 8 KiB and it never reads, so without the reservation the write of the
// second chunk blocks for good with its buffer held.
func TestReadFromReservesRoom(t *testing.T) {
	f := getFiles(t)
	budget := core.NewSendBudget(2 * core.MinSendShare)
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t), SendBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := ctxT(t, 20*time.Second)
	need, ready := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		c, err := l.Accept(context.Background())
		if err != nil {
			done <- err
			return
		}
		s, err := c.AcceptStream(context.Background())
		if err != nil {
			done <- err
			return
		}
		serveFiles(l, f.root) // the second connection's
		_, err = s.ReadFrom(&squeezeReader{squeeze: func() { close(need); <-ready }})
		done <- err
	}()
	_, s := dialStreamWith(ctx, t, l.Addr().String(), &mpquic.Config{TLS: clientTLS(t), InitialStreamWindow: 8 << 10})
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-need:
	case err := <-done:
		t.Fatalf("ReadFrom returned before its second read: %v", err)
	case <-ctx.Done():
		t.Fatal("no second read")
	}
	_, s2 := dialStream(ctx, t, l.Addr().String())
	if _, err := fmt.Fprintf(s2, "GET /big\r\n"); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	for {
		if _, conns := budget.Used(); conns == 2 {
			break
		}
		if ctx.Err() != nil {
			u, n := budget.Used()
			t.Fatalf("the second connection took no send buffer (used %d by %d, open %d)", u, n, budget.Open())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(ready)
	// The send buffers fill: the budget's use stops changing.
	last, since := int64(-1), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Since(since) < 300*time.Millisecond; time.Sleep(10 * time.Millisecond) {
		if used, _ := budget.Used(); used != last {
			last, since = used, time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("send buffers still changing (%d bytes) after 10 s", last)
		}
	}
	if n := copyBuffersHeldAfter(3 * time.Second); n != 0 {
		t.Errorf("%d copy buffers held after another connection took the budget during a read", n)
	}
	select {
	case err := <-done:
		t.Fatalf("ReadFrom returned: %v", err)
	default:
	}
}
