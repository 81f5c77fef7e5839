// Command parts times mpq run in each way a simulation's two parts can
// run, to compare the default (the runner's chooser) with the ways forced
// for a whole run (docs/results/performance.md, "The two-CPU mode"):
//
//	go run ./bench/parts [-rounds 6] [-mpq BIN] -- experiments/speed-2x100.toml [mpq run flags]
//
// The modes: auto (the default), side (MPQ_SIM_PARTS=side: always side by
// side, the two-CPU mode before the choice), one CPU (GOMAXPROCS=1) and
// turns (MPQ_SIM_PARTS=turns). Each round runs every mode once as a whole
// process, in an order that rotates from round to round, each into a
// fresh output folder; it prints each mode's median wall and CPU seconds,
// the better of side and one CPU by median wall time, its wall time over
// auto's (the goal: at least 0.95), and the same ratio round by round.
// Beside a CPU hog, start one yourself (timeout 600 yes >/dev/null &) and
// stop it by its PID afterwards. Opt-in: go test ./... only compiles it.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/mpq/mpq/bench/internal/timing"
)

var modes = []struct{ name, env string }{
	{"auto", "MPQ_SIM_PARTS=auto"},
	{"side", "MPQ_SIM_PARTS=side"},
	{"one CPU", "GOMAXPROCS=1"},
	{"turns", "MPQ_SIM_PARTS=turns"},
}

func main() {
	rounds := flag.Int("rounds", 6, "rounds (each runs every mode once)")
	bin := flag.String("mpq", "", "mpq binary (default: built from this checkout)")
	limit := flag.Duration("timeout", 5*time.Minute, "bound on one run")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: parts [-rounds N] [-mpq BIN] -- FILE [mpq run flags]")
		os.Exit(2)
	}
	if err := run(*bin, *rounds, *limit, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "parts:", err)
		os.Exit(1)
	}
}

func run(bin string, rounds int, limit time.Duration, args []string) error {
	work, err := os.MkdirTemp("", "mpq-bench-parts")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		bin = filepath.Join(work, "mpq")
		build := exec.Command("go", "build", "-o", bin, "./cmd/mpq")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	fmt.Printf("mpq run %v, %d rounds; load average before: %s\n", args, rounds, timing.Loadavg())
	got := make([][]timing.Sample, len(modes))
	for r := range rounds {
		for k := range modes {
			i := (k + r) % len(modes)
			out := filepath.Join(work, fmt.Sprintf("out-%d-%d", r, i))
			cmd := append([]string{bin, "run"}, args...)
			cmd = append(cmd, "--out", out)
			s, _, err := timing.Run(cmd, []string{modes[i].env}, limit)
			if err != nil {
				return fmt.Errorf("%s: %w", modes[i].name, err)
			}
			got[i] = append(got[i], s)
			os.RemoveAll(out)
		}
	}
	fmt.Printf("load average after: %s\n\n| mode | wall s | CPU s |\n| --- | --- | --- |\n", timing.Loadavg())
	wall := func(s timing.Sample) float64 { return s.Wall }
	for i, m := range modes {
		fmt.Printf("| %s | %.3f | %.3f |\n", m.name, timing.Median(timing.Of(got[i], wall)),
			timing.Median(timing.Of(got[i], func(s timing.Sample) float64 { return s.CPU })))
	}
	better := 1 // side, or one CPU (2) where its median wall time is less
	if timing.Median(timing.Of(got[2], wall)) < timing.Median(timing.Of(got[1], wall)) {
		better = 2
	}
	ratios := make([]float64, rounds)
	for r := range rounds {
		ratios[r] = got[better][r].Wall / got[0][r].Wall
	}
	fmt.Printf("\nbetter of side and one CPU: %s; its wall time over auto's: %.2f by medians, %s round by round\n",
		modes[better].name, timing.Median(timing.Of(got[better], wall))/timing.Median(timing.Of(got[0], wall)), timing.Spread(ratios))
	return nil
}
