package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/internal/certs"
	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
)

// setupServe registers serve's flags; the command serves files until ctx
// is cancelled, then closes every connection, waits for the request
// handlers and returns 0.
func setupServe(fs *flag.FlagSet) runFunc {
	var o serveOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:4433", "UDP `HOST:PORT` to listen on")
	fs.StringVar(&o.root, "root", "", "serve files from `DIR` (required)")
	fs.StringVar(&o.cert, "cert", "", "PEM certificate `FILE` (default: self-signed)")
	fs.StringVar(&o.key, "key", "", "PEM private key `FILE`")
	fs.BoolVar(&o.retry, "retry", false, "validate every client address with Retry")
	fs.IntVar(&o.retryThreshold, "retry-threshold", core.DefaultRetryThreshold, "validate new client addresses with Retry while `N` connections are in their handshake")
	fs.IntVar(&o.maxHandshakes, "max-handshakes", core.DefaultMaxHandshakes, "refuse new connections while `N` are in their handshake, except that a client that followed a Retry takes the slot of the oldest handshake of the source prefix holding the most")
	fs.IntVar(&o.maxPerPrefix, "max-handshakes-per-prefix", 0, "refuse new connections from a source prefix (/24, /48) that holds `N` handshake slots (default: --max-handshakes/8)")
	fs.IntVar(&o.maxConns, "max-conns", core.DefaultMaxConns, "refuse new connections while `N` are open")
	fs.StringVar(&o.resetKeyFile, "reset-key-file", "", "derive stateless reset tokens from the secret in `FILE` (at least 16 bytes), so that they survive restarts (default: from the certificate's key)")
	fs.BoolVar(&o.zeroRTT, "0rtt", false, "send session tickets that allow 0-RTT and accept requests in 0-RTT (tickets are valid until the server stops; requests in 0-RTT can be replayed by an attacker)")
	o.memBudget = defaultMemoryBudget
	fs.Var(&o.memBudget, "memory-budget", "bound the server's memory (RSS) to about `SIZE` (e.g. 256MiB): each open connection is charged its state, the send buffers share the rest, new connections are refused when it affords no more, and clients that do not read lose their connection when it is exceeded")
	fs.Var(&o.memBudget, "send-budget", "the former name of --memory-budget (`SIZE`)")
	fs.DurationVar(&o.sendStall, "send-stall-timeout", 30*time.Second, "close a connection whose client acknowledged none of the buffered data for `DURATION` (0: never)")
	fs.DurationVar(&o.statsEvery, "stats-interval", 10*time.Second, "log the listener's counters every `DURATION` while they change (0: only at exit)")
	o.tf.register(fs)
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if !noArgs("serve", args, stderr) {
			return exitUsage
		}
		return serve(ctx, &o, stderr)
	}
}

// serveOptions are serve's flags.
type serveOptions struct {
	addr, root, cert, key string
	retry                 bool
	zeroRTT               bool
	// Admission limits and the stateless reset key.
	retryThreshold, maxHandshakes, maxConns int
	maxPerPrefix                            int
	resetKeyFile                            string
	statsEvery                              time.Duration
	// The memory budget and the send stall timeout.
	memBudget sizeFlag
	sendStall time.Duration
	tf        transportFlags
}

// serve serves files until ctx is cancelled.
func serve(ctx context.Context, o *serveOptions, stderr io.Writer) int {
	if o.root == "" {
		fmt.Fprintln(stderr, "mpq serve: --root is required")
		return exitUsage
	}
	if st, err := os.Stat(o.root); err != nil || !st.IsDir() {
		fmt.Fprintf(stderr, "mpq serve: --root %s is not a directory\n", o.root)
		return exitUsage
	}
	for _, lim := range []struct {
		name string
		v    int
	}{{"--retry-threshold", o.retryThreshold}, {"--max-handshakes", o.maxHandshakes}, {"--max-conns", o.maxConns}} {
		if lim.v < 1 {
			fmt.Fprintf(stderr, "mpq serve: %s %d must be at least 1\n", lim.name, lim.v)
			return exitUsage
		}
	}
	if o.maxPerPrefix < 0 {
		fmt.Fprintf(stderr, "mpq serve: --max-handshakes-per-prefix %d must not be negative\n", o.maxPerPrefix)
		return exitUsage
	}
	if o.memBudget < minMemoryBudget {
		fmt.Fprintf(stderr, "mpq serve: --memory-budget %d: want at least %d bytes\n", int64(o.memBudget), minMemoryBudget)
		return exitUsage
	}
	if o.sendStall < 0 {
		fmt.Fprintf(stderr, "mpq serve: --send-stall-timeout %v must not be negative\n", o.sendStall)
		return exitUsage
	}
	if o.statsEvery < 0 {
		fmt.Fprintf(stderr, "mpq serve: --stats-interval %v must not be negative\n", o.statsEvery)
		return exitUsage
	}
	var resetKey []byte
	if o.resetKeyFile != "" {
		var err error
		if resetKey, err = os.ReadFile(o.resetKeyFile); err != nil {
			fmt.Fprintf(stderr, "mpq serve: --reset-key-file: %v\n", err)
			return exitUsage
		}
		if len(resetKey) < 16 {
			fmt.Fprintf(stderr, "mpq serve: --reset-key-file %s: %d bytes, want at least 16\n", o.resetKeyFile, len(resetKey))
			return exitUsage
		}
	}
	cert, err := certs.Load(o.cert, o.key)
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitUsage
	}
	cfg, cleanup, err := o.tf.config(&tls.Config{Certificates: []tls.Certificate{cert}}, stderr)
	defer cleanup()
	if err != nil {
		printErr(stderr, "serve", err)
		return exitUsage
	}
	cfg.Allow0RTT = o.zeroRTT
	budget := serverBudget(int64(o.memBudget))
	// The collector must keep the heap within the budget: without a soft
	// limit it lets the heap double (RSS 874 MB with 1,000 clients that
	// do not read and a send budget of 256 MiB).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(softMemoryLimit(int64(o.memBudget)))
	}
	cfg.SendBudget, cfg.SendStallTimeout = budget, o.sendStall
	l, err := mpquic.ListenWithOptions(o.addr, cfg, mpquic.ListenOptions{
		RequireRetry:   o.retry,
		RetryThreshold: o.retryThreshold,
		MaxHandshakes:  o.maxHandshakes,
		MaxConns:       o.maxConns,
		ResetKey:       resetKey,

		MaxHandshakesPerPrefix: o.maxPerPrefix,
	})
	if err != nil {
		fmt.Fprintf(stderr, "mpq serve: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "mpq serve: serving %s on %s (hq-interop)\n", o.root, l.Addr())
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go returnMemory(ctx, budget)
	go func() {
		logStats(ctx, l, o.statsEvery, stderr)
		l.Close()
		fmt.Fprintf(stderr, "mpq serve: %s\n", formatStats(l.Stats()))
		close(stopped)
	}()
	files := &hq.Files{Root: o.root}
	var wg sync.WaitGroup
	var early earlyCount
	code := 0
	for {
		c, err := l.Accept(ctx)
		if err != nil {
			if !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				fmt.Fprintf(stderr, "mpq serve: %v\n", err)
				code = exitFailure
			}
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			serveConn(ctx, c, files, stderr)
			early.add(c.EarlyData())
		}()
	}
	// Closing the listener closes every connection, which ends the
	// handlers' stream operations.
	cancel()
	<-stopped
	wg.Wait()
	if o.zeroRTT {
		fmt.Fprintf(stderr, "mpq serve: %s\n", early.String())
	}
	return code
}

// earlyCount counts what became of 0-RTT on a server's connections.
type earlyCount struct {
	mu                         sync.Mutex
	resumed, accepted, packets uint64
}

func (e *earlyCount) add(st core.EarlyDataState) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if st.Resumed {
		e.resumed++
	}
	if st.Accepted && st.PacketsReceived > 0 {
		e.accepted++
		e.packets += st.PacketsReceived
	}
}

// String is the log line of the counters.
func (e *earlyCount) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("0-RTT: connections resumed %d, with 0-RTT data accepted %d (%d 0-RTT packets)", e.resumed, e.accepted, e.packets)
}

// serveConn answers the requests of one connection until it ends or ctx is
// cancelled; it returns when its request handlers have returned.
func serveConn(ctx context.Context, c *mpquic.Conn, files *hq.Files, stderr io.Writer) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		s, err := c.AcceptStream(ctx)
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := files.Serve(s); err != nil {
				fmt.Fprintf(stderr, "mpq serve: %s: %v\n", c.RemoteAddr(), err)
			}
		}()
	}
}

// defaultMemoryBudget is --memory-budget's default: 256 MiB, under 2 % of
// a 24 GiB machine.
const defaultMemoryBudget = 256 << 20

// connMemory is what the budget charges each open connection besides its
// send buffers. A heap profile of mpq serve holding 1,000 clients that do
// not read (docs/design/server.md) showed about 65 KiB a connection
// besides the send buffers: 36 KiB of heap (its packets' and streams'
// records, TLS and packet protection state), the 16 KiB buffer its file
// is read into, and 15 KiB of goroutine stacks; the rest is room for the
// collector's bookkeeping and what the profile did not see.
const connMemory = 80 << 10

// processMemory is what the budget sets aside for the process besides
// the connections: the resident binary (codeMemory) and the idle
// server's heap, runtime and listener (about 2 MiB, Anonymous in
// /proc/PID/smaps_rollup, with room to spare).
const processMemory = codeMemory + 8<<20

// collectorRoom is what the budget leaves between the live heap and the
// soft memory limit, for garbage between two collections: an eighth of
// the budget, at least 16 MiB. With less, the collector would run all
// the time once the connections hold their shares.
func collectorRoom(budget int64) int64 { return max(budget/8, minCollectorRoom) }

// minCollectorRoom is collectorRoom's least.
const minCollectorRoom = 16 << 20

// codeMemory is what RSS holds besides the memory the Go runtime
// manages: the resident part of the binary, 12.6 MiB of the idle
// server's 14.2 MiB (file-backed pages in /proc/PID/smaps_rollup), a
// little more once more of its code has run.
const codeMemory = 16 << 20

// serverBudget is the SendBudget of a memory budget of budget bytes: the
// budget less processMemory and collectorRoom, each open connection
// charged connMemory.
func serverBudget(budget int64) *core.SendBudget {
	b := core.NewSendBudget(budget - processMemory - collectorRoom(budget))
	b.SetConnCost(connMemory)
	return b
}

// minMemoryBudget is the least --memory-budget: one that affords one
// connection (well below 8 times minCollectorRoom, so that its
// collectorRoom is the least).
const minMemoryBudget = processMemory + minCollectorRoom + connMemory + core.MinSendShare

// softMemoryLimit is the Go soft memory limit mpq serve sets, unless
// GOMEMLIMIT is set, for a memory budget of budget bytes: the budget
// less codeMemory, which RSS holds besides the runtime's memory. The
// live heap stays collectorRoom below it (the send budget, the
// connections' fixed costs and the idle heap are the budget less
// codeMemory and collectorRoom).
func softMemoryLimit(budget int64) int64 {
	return budget - codeMemory
}

// sizeFlag is a flag of a size in bytes ("256MiB", "10MB", "65536").
type sizeFlag int64

func (s *sizeFlag) String() string {
	if *s > 0 && *s%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", *s>>20)
	}
	return fmt.Sprint(int64(*s))
}
func (s *sizeFlag) Set(v string) error {
	n, err := experiment.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeFlag(n)
	return nil
}

// returnMemory gives the heap's free memory back to the system once what
// the budget charges (the send buffers, connMemory for each open
// connection) shrank by freeMemoryStep since the last time (connections
// ended), and once more a second later; it looks four times a second and
// frees at most once a second (a collection and a scavenge of the heap),
// until ctx is done. Otherwise the Go runtime would return it over
// minutes, the soft memory limit being the budget's.
func returnMemory(ctx context.Context, b *core.SendBudget) {
	const freeMemoryStep = 8 << 20 // a smaller step frees more often
	t := time.NewTicker(time.Second / 4)
	defer t.Stop()
	var peak int64
	var freed time.Time
	again := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		used, _ := b.Used()
		used += int64(b.Open()) * connMemory
		peak = max(peak, used)
		if time.Since(freed) < time.Second {
			continue
		}
		// Once more a second after: the ended connections' handlers
		// and records outlive what the budget charged them.
		shrank := peak-used >= freeMemoryStep
		if shrank || again {
			debug.FreeOSMemory()
			again = shrank
			peak, freed = used, time.Now()
		}
	}
}

// logStats logs the listener's counters every interval while they change,
// until ctx is done.
func logStats(ctx context.Context, l *mpquic.Listener, interval time.Duration, w io.Writer) {
	if interval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	var last mpquic.ListenerStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if st := l.Stats(); st != last {
				fmt.Fprintf(w, "mpq serve: %s\n", formatStats(st))
				last = st
			}
		}
	}
}

// formatStats is the log line of a listener's counters.
func formatStats(s mpquic.ListenerStats) string {
	return fmt.Sprintf("connections accepted %d, retried %d, refused %d (%d for their prefix's share, %d for the memory budget), rejected %d, in handshake %d, open %d; "+
		"handshakes evicted %d, quiet %d; closed for the memory budget %d; datagrams dropped %d (+%d at full connection queues); stateless resets %d",
		s.Accepted, s.Retried, s.Refused, s.PrefixRefused, s.BudgetRefused, s.Rejected, s.Handshakes, s.Conns,
		s.Evicted, s.QuietTimeouts, s.Reclaimed, s.Dropped, s.QueueDropped, s.Resets)
}
