package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/resultset/agreement"
)

// The rehearsal's report, OUTDIR/rehearsal.json.
//
//	rehearsal report OUTDIR OFFSET_MS DRIFT_PPM REPEAT SEEDS PARAM...
//
// reads the merged runs in OUTDIR/results/validation-lowrate, the
// simulator's in OUTDIR/sim/validation-lowrate, each run's clock.json and
// the nodes' clock samples against the host (OUTDIR/nodes/NODE/clock-*.json),
// and writes rehearsal.json. It exits 0 when the offsets and the
// agreement held, 3 when either did not, 2 on bad arguments, 1 when it
// could not tell.

// maxOffsetError is how far the offset a run measured may be from the
// one set (issue 40).
const maxOffsetError = 2.0

type clockRun struct {
	Run string `json:"run"`
	// SetMS is the client's clock minus the server's when the run's
	// first probe was taken, as set: the step (measured against the
	// host right after it) plus the drift since.
	SetMS float64 `json:"set_ms"`
	// MeasuredMS is the same as the run's clock.json measured it
	// (minus its offset_ms, which is the server's minus the client's).
	MeasuredMS    float64 `json:"measured_ms"`
	MeasuredRTTMS float64 `json:"measured_rtt_ms"`
	EndSetMS      float64 `json:"end_set_ms"`
	EndMeasuredMS float64 `json:"end_measured_ms"`
	Corrected     bool    `json:"corrected"`
}

type point struct {
	Runs        int     `json:"runs"`
	P50MS       float64 `json:"mct_p50_ms"`
	GoodputMbps float64 `json:"goodput_mbps"`
	PooledP99MS float64 `json:"pooled_p99_ms"`
	PooledN     int     `json:"pooled_messages"`
}

type report struct {
	Experiment string            `json:"experiment"`
	Parameters map[string]string `json:"profile_parameters"`
	// The offset set (client minus server, ms), nominally and as it was
	// at the first run, and as the first run measured it.
	ClockOffsetNominalMS  float64    `json:"clock_offset_nominal_ms"`
	ClockDriftPPM         float64    `json:"clock_drift_ppm"`
	ClockOffsetSetMS      float64    `json:"clock_offset_set_ms"`
	ClockOffsetMeasuredMS float64    `json:"clock_offset_measured_ms"`
	ClockRuns             []clockRun `json:"clock_runs"`
	// ClockHeld: every run measured its offset within MaxErrorMS of the
	// one set, at its start and at its end.
	ClockHeld       bool    `json:"clock_held"`
	ClockMaxErrorMS float64 `json:"clock_max_error_ms"`
	ClockSetNote    string  `json:"clock_set_note"`
	// ClockEndCheck compares, after the last run, the client's offset
	// from the server through the host (both nodes measured against
	// it) with the one set by then.
	ClockEndCheck struct {
		ThroughHostMS float64    `json:"through_host_ms"`
		SetMS         float64    `json:"set_ms"`
		RTTMS         [2]float64 `json:"rtt_ms"`
	} `json:"clock_end_check"`
	Agreement agreeJSON `json:"agreement"`
}

type agreeJSON struct {
	Simulator point `json:"simulator"`
	Rehearsal point `json:"rehearsal"`
	Bounds    struct {
		P50     string `json:"mct_p50"`
		Goodput string `json:"goodput"`
	} `json:"bounds"`
	Compared string   `json:"compared"`
	Failures []string `json:"failures"`
	// NotChecked are the pooled p99's differences, logged only.
	NotChecked []string `json:"not_checked"`
	Held       bool     `json:"held"`
}

type nodeSample struct {
	OffsetMS float64   `json:"offset_ms"`
	RTTMS    float64   `json:"rtt_ms"`
	At       time.Time `json:"at"`
}

type clockFile struct {
	Start struct {
		OffsetMS float64   `json:"offset_ms"`
		RTTMS    float64   `json:"rtt_ms"`
		At       time.Time `json:"at"`
	} `json:"start"`
	End struct {
		OffsetMS float64   `json:"offset_ms"`
		RTTMS    float64   `json:"rtt_ms"`
		At       time.Time `json:"at"`
	} `json:"end"`
	Corrected bool `json:"corrected"`
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

func runsUnder(root string) ([]string, error) {
	dirs, err := resultset.FindRuns(root)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("%s: no runs", root)
	}
	for i := range dirs {
		dirs[i] = filepath.Join(root, dirs[i])
	}
	return dirs, nil
}

func toPoint(p agreement.Point) point {
	return point{Runs: p.Runs, P50MS: p.P50MS, GoodputMbps: p.GoodputMbps, PooledP99MS: p.PooledP99MS, PooledN: p.PooledN}
}

func reportCmd(args []string) (int, error) {
	if len(args) < 5 {
		usage()
	}
	out := args[0]
	var nums [4]float64
	for i, a := range args[1:5] {
		v, err := strconv.ParseFloat(a, 64)
		if err != nil {
			return 2, fmt.Errorf("report: %q: not a number", a)
		}
		nums[i] = v
	}
	offset, drift, repeat, seeds := nums[0], nums[1], int(nums[2]), int(nums[3])
	const name = "validation-lowrate"
	r := report{Experiment: "experiments/" + name + ".toml", Parameters: map[string]string{},
		ClockOffsetNominalMS: offset, ClockDriftPPM: drift, ClockMaxErrorMS: maxOffsetError, ClockHeld: true}
	for _, kv := range args[5:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return 2, fmt.Errorf("report: %q: want key=value", kv)
		}
		r.Parameters[k] = v
	}

	// The offset as set, measured through the host: each node's offset
	// from the host's clock, interpolated linearly between its
	// measurements (the client's right after its step and after the
	// runs, the server's right after its boot-time step and after the
	// runs: an emulated clock drifts from the host's too), the client's
	// less the server's.
	var set, server, cEnd, sEnd nodeSample
	for _, f := range []struct {
		node, file string
		s          *nodeSample
	}{{"client", "clock-set.json", &set}, {"server", "clock-boot.json", &server},
		{"client", "clock-end.json", &cEnd}, {"server", "clock-end.json", &sEnd}} {
		if err := readJSON(filepath.Join(out, "nodes", f.node, f.file), f.s); err != nil {
			return 1, err
		}
	}
	interp := func(a, b nodeSample, t time.Time) float64 {
		span := b.At.Sub(a.At).Seconds()
		if span <= 0 {
			return a.OffsetMS
		}
		return a.OffsetMS + (b.OffsetMS-a.OffsetMS)*t.Sub(a.At).Seconds()/span
	}
	setAt := func(t time.Time) float64 { return interp(set, cEnd, t) - interp(server, sEnd, t) }
	r.ClockSetNote = fmt.Sprintf("client minus server, ms, measured through the host: the client stepped its clock to the host's plus %g ms and set %g ppm (measured right after: %+.3f ms, round trip %.3f ms; after the runs: %+.3f ms, %.3f ms), the server stepped its clock to the host's at boot (measured right after: %+.3f ms, round trip %.3f ms; after the runs: %+.3f ms, %.3f ms); each interpolated linearly in time. Measured: minus clock.json's offset_ms (server minus client)",
		offset, drift, set.OffsetMS, set.RTTMS, cEnd.OffsetMS, cEnd.RTTMS, server.OffsetMS, server.RTTMS, sEnd.OffsetMS, sEnd.RTTMS)
	r.ClockEndCheck.ThroughHostMS = cEnd.OffsetMS - sEnd.OffsetMS
	r.ClockEndCheck.SetMS = setAt(cEnd.At)
	r.ClockEndCheck.RTTMS = [2]float64{cEnd.RTTMS, sEnd.RTTMS}

	merged := filepath.Join(out, "results", name)
	runs, err := runsUnder(merged)
	if err != nil {
		return 1, err
	}
	if len(runs) != repeat {
		return 1, fmt.Errorf("%s: %d merged runs, want %d", merged, len(runs), repeat)
	}
	for i, d := range runs {
		var c clockFile
		if err := readJSON(filepath.Join(d, "clock.json"), &c); err != nil {
			return 1, err
		}
		cr := clockRun{Run: filepath.Base(d), SetMS: setAt(c.Start.At), MeasuredMS: -c.Start.OffsetMS, MeasuredRTTMS: c.Start.RTTMS,
			EndSetMS: setAt(c.End.At), EndMeasuredMS: -c.End.OffsetMS, Corrected: c.Corrected}
		if math.Abs(cr.MeasuredMS-cr.SetMS) > maxOffsetError || math.Abs(cr.EndMeasuredMS-cr.EndSetMS) > maxOffsetError {
			r.ClockHeld = false
		}
		if i == 0 {
			r.ClockOffsetSetMS, r.ClockOffsetMeasuredMS = cr.SetMS, cr.MeasuredMS
		}
		r.ClockRuns = append(r.ClockRuns, cr)
	}

	simDir := filepath.Join(out, "sim", name)
	sims, err := runsUnder(simDir)
	if err != nil {
		return 1, err
	}
	if len(sims) != seeds {
		return 1, fmt.Errorf("%s: %d simulator runs, want %d", simDir, len(sims), seeds)
	}
	sim, err := agreement.FromRuns(sims, "priority", "background")
	if err != nil {
		return 1, err
	}
	got, err := agreement.FromRuns(runs, "priority", "background")
	if err != nil {
		return 1, err
	}
	a := &r.Agreement
	a.Simulator, a.Rehearsal = toPoint(sim), toPoint(got)
	b := agreement.Default
	a.Bounds.P50 = fmt.Sprintf("%g %% + %g ms of the simulator's (%.2f ms)", b.P50Rel*100, b.P50AbsMS, b.P50Rel*sim.P50MS+b.P50AbsMS)
	a.Bounds.Goodput = fmt.Sprintf("%g %% of the simulator's (%.3f Mbit/s)", b.GoodputRel*100, b.GoodputRel*sim.GoodputMbps)
	a.Compared = "the means over the runs of the priority source's MCT p50 and of the background source's goodput (resultset/agreement, as deploy/vm's TestVMAgreementLowRate)"
	a.Failures = append([]string{}, b.Check(sim, got, agreement.P50|agreement.Goodput)...)
	a.NotChecked = append([]string{}, b.Check(sim, got, agreement.PooledP99)...)
	a.Held = len(a.Failures) == 0

	js, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return 1, err
	}
	name2 := filepath.Join(out, "rehearsal.json")
	if err := os.WriteFile(name2+".tmp", append(js, '\n'), 0o644); err != nil {
		return 1, err
	}
	if err := os.Rename(name2+".tmp", name2); err != nil {
		return 1, err
	}
	fmt.Printf("clock: set %+.3f ms, measured %+.3f ms (%d runs within %g ms: %v)\n", r.ClockOffsetSetMS, r.ClockOffsetMeasuredMS, len(r.ClockRuns), maxOffsetError, r.ClockHeld)
	fmt.Printf("agreement: p50 %.2f ms against the simulator's %.2f, goodput %.3f Mbit/s against %.3f: held %v\n",
		got.P50MS, sim.P50MS, got.GoodputMbps, sim.GoodputMbps, a.Held)
	for _, f := range a.Failures {
		fmt.Println("  " + f)
	}
	if !r.ClockHeld || !a.Held {
		return 3, nil
	}
	return 0, nil
}
