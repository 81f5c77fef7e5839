// Command peers times mpq's simulator against the peer simulators a reader
// compares it with, on the same work: a saturated download over one or two
// 100 Mbit/s paths, 25 ms one way, a drop-tail queue of 50 ms on each
// direction, 1350-byte packets, NewReno, for SECONDS of virtual time
// (experiments/speed-2x100.toml's work).
//
// It is opt-in (a program, not a test; go test ./... only compiles it):
//
//	go run ./bench/peers -picoquic ../picoquic -picotls ../picotls [-ns3 SITE] [-rounds 5]
//
// It builds mpq (cmd/mpq, with its PGO profile) and, through
// bench/peers/picoquic/build.sh, the picoquic driver pq_bulk twice (as
// shipped, and acknowledging every second packet); with -ns3, the
// site-packages/ns3 folder of `pip install ns3==3.44.post0`, it builds
// the ns-3 driver (bench/peers/ns3/bulk.cc). Then it runs every
// contender once a round, in an order that rotates from round to round,
// each as a whole process, and prints for each its median simulated
// seconds per wall second and per CPU second (user + system time of the
// child, from its rusage), and the medians of the ratios of each mpq
// contender to each peer taken round by round (a ratio above 1: mpq is
// faster). The machine (CPU model, CPUs, load average before and after)
// is printed with them.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mpq/mpq/bench/internal/timing"
)

// contender is one simulator configuration: a command, its environment and
// whether it is mpq's.
type contender struct {
	name string
	mpq  bool
	env  []string
	args []string
	// check, if set, vets the command's output (a run that did not do the
	// work counts as failed).
	check func(out string) error
}

func main() {
	var (
		pqSrc   = flag.String("picoquic", "", "picoquic source tree (the interoperability build's, d199d45)")
		tlsSrc  = flag.String("picotls", "", "picotls source tree (f07f1c8)")
		ns3Site = flag.String("ns3", "", "site-packages/ns3 folder of pip's ns3==3.44.post0 (empty: no ns-3)")
		work    = flag.String("work", filepath.Join(os.TempDir(), "mpq-bench-peers"), "build and scratch folder (builds are reused)")
		rounds  = flag.Int("rounds", 5, "rounds (each runs every contender once)")
		seconds = flag.Int("seconds", 20, "simulated seconds of each run")
		pathsF  = flag.String("paths", "1,2", "path counts to run")
		limit   = flag.Duration("timeout", 30*time.Minute, "bound on all the runs")
	)
	flag.Parse()
	if *pqSrc == "" || *tlsSrc == "" {
		fmt.Fprintln(os.Stderr, "peers: -picoquic and -picotls name the source trees (see docs/results/performance.md)")
		os.Exit(2)
	}
	if err := run(*pqSrc, *tlsSrc, *ns3Site, *work, *rounds, *seconds, *pathsF, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(pqSrc, tlsSrc, ns3Site, work string, rounds, seconds int, pathsF string, limit time.Duration) error {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	work, _ = filepath.Abs(work)
	root, err := repoRoot()
	if err != nil {
		return err
	}
	mpq := filepath.Join(work, "mpq")
	if err := command(root, nil, "go", "build", "-o", mpq, "./cmd/mpq"); err != nil {
		return err
	}
	if err := command(root, nil, "sh", "bench/peers/picoquic/build.sh", pqSrc, tlsSrc, filepath.Join(work, "picoquic")); err != nil {
		return err
	}
	ns3 := ""
	if ns3Site != "" {
		ns3 = filepath.Join(work, "ns3_bulk")
		if err := command(root, nil, "sh", "bench/peers/ns3/build.sh", ns3Site, ns3); err != nil {
			return err
		}
	}
	pqAbs, _ := filepath.Abs(pqSrc)
	cert, key := filepath.Join(pqAbs, "certs", "cert.pem"), filepath.Join(pqAbs, "certs", "key.pem")

	var paths []int
	for _, f := range strings.Split(pathsF, ",") {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 || n > 2 {
			return fmt.Errorf("-paths %q: 1, 2 or 1,2", pathsF)
		}
		paths = append(paths, n)
	}
	fmt.Printf("machine: %s, %d CPUs, %s/%s, %s\n", cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Printf("mpq: %s\n", gitDescribe(root))
	fmt.Printf("load average before: %s\n", timing.Loadavg())
	deadline := time.Now().Add(limit)
	for _, n := range paths {
		var cs []contender
		for _, m := range []struct {
			name, procs string
			null        bool
		}{{"mpq 1 CPU null", "1", true}, {"mpq 1 CPU AES-GCM", "1", false}, {"mpq default null", "", true}} {
			toml := filepath.Join(work, fmt.Sprintf("speed-%dx100-null-%v.toml", n, m.null))
			if err := os.WriteFile(toml, []byte(experiment(n, seconds, m.null)), 0o644); err != nil {
				return err
			}
			var env []string
			if m.procs != "" {
				env = []string{"GOMAXPROCS=" + m.procs}
			}
			cs = append(cs, contender{name: m.name, mpq: true, env: env,
				args: []string{mpq, "run", toml, "--out", filepath.Join(work, "out")}})
		}
		pqCheck := func(out string) error {
			if !strings.Contains(out, fmt.Sprintf("paths_used=%d ", n)) {
				return fmt.Errorf("picoquic did not use %d paths: %q", n, out)
			}
			return nil
		}
		for _, v := range []struct{ name, bin string }{{"picoquic shipped", "pq_bulk"}, {"picoquic ACK/2", "pq_bulk_ack2"}} {
			cs = append(cs, contender{name: v.name, check: pqCheck,
				args: []string{filepath.Join(work, "picoquic", v.bin), cert, key, fmt.Sprint(n), fmt.Sprint(seconds)}})
		}
		if ns3 != "" {
			cs = append(cs, contender{name: "ns-3 TCP", args: []string{ns3, fmt.Sprintf("--links=%d", n), fmt.Sprintf("--duration=%d", seconds)}})
		}
		if err := compare(n, seconds, rounds, cs, deadline); err != nil {
			return err
		}
	}
	fmt.Printf("load average after: %s\n", timing.Loadavg())
	return nil
}

// experiment is the work in mpq's experiment format: speed-2x100.toml with
// n paths and seconds of duration.
func experiment(n, seconds int, null bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name = \"speed-%dx100\"\nduration = \"%ds\"\nseed = 1\n", n, seconds)
	for range n {
		b.WriteString("\n[[path]]\nrate = \"100Mbit\"\nrtt = \"50ms\"\n")
	}
	fmt.Fprintf(&b, "\n[transport]\nmax_packet_size = 1350\nsim_null_protection = %v\n", null)
	b.WriteString("\n[[source]]\nname = \"bulk\"\nkind = \"bulk\"\n")
	return b.String()
}

// compare runs the contenders rounds times, alternating, and prints the
// table.
func compare(n, seconds, rounds int, cs []contender, deadline time.Time) error {
	got := make([][]timing.Sample, len(cs))
	for r := range rounds {
		for k := range cs {
			i := (k + r) % len(cs)
			if time.Now().After(deadline) {
				return fmt.Errorf("out of time after %d rounds", r)
			}
			s, err := runOnce(cs[i], seconds)
			if err != nil {
				return fmt.Errorf("%s, %d paths: %w", cs[i].name, n, err)
			}
			got[i] = append(got[i], s)
		}
	}
	fmt.Printf("\n%d path(s), %d simulated s a run, %d rounds (medians; simulated s per wall s, per CPU s)\n", n, seconds, rounds)
	fmt.Printf("| contender | sim s / wall s | sim s / CPU s | CPU s / wall s |\n| --- | --- | --- | --- |\n")
	for i, c := range cs {
		fmt.Printf("| %s | %.1f | %.1f | %.2f |\n", c.name,
			timing.Median(timing.Of(got[i], func(s timing.Sample) float64 { return float64(seconds) / s.Wall })),
			timing.Median(timing.Of(got[i], func(s timing.Sample) float64 { return float64(seconds) / s.CPU })),
			timing.Median(timing.Of(got[i], func(s timing.Sample) float64 { return s.CPU / s.Wall })))
	}
	fmt.Printf("\nratios mpq / peer, round by round (median [min-max]), per wall s; per CPU s\n")
	for i, m := range cs {
		if !m.mpq {
			continue
		}
		for j, p := range cs {
			if p.mpq {
				continue
			}
			wall := make([]float64, rounds)
			cpu := make([]float64, rounds)
			for r := range rounds {
				wall[r] = got[j][r].Wall / got[i][r].Wall
				cpu[r] = got[j][r].CPU / got[i][r].CPU
			}
			fmt.Printf("%s / %s: %s; %s\n", m.name, p.name, timing.Spread(wall), timing.Spread(cpu))
		}
	}
	return nil
}

// runOnce runs c once and returns its wall and CPU seconds. A run is
// bounded: 60 times the virtual time (the slowest peer does about one
// simulated second per wall second).
func runOnce(c contender, seconds int) (timing.Sample, error) {
	s, out, err := timing.Run(c.args, c.env, time.Duration(seconds)*time.Minute)
	if err != nil {
		return s, err
	}
	if c.check != nil {
		if err := c.check(out); err != nil {
			return s, err
		}
	}
	return s, nil
}

// command runs a build step in dir, its output on stderr.
func command(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w (run it inside the repository)", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func gitDescribe(root string) string {
	out, err := exec.Command("git", "-C", root, "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown commit"
	}
	return strings.TrimSpace(string(out))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
