package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpq/mpq/mpquic/congestion"
)

// ResolvedTOML writes the run as an experiment file with every value
// explicit (defaults filled in, sweep and overrides applied): reading it
// back gives the same run (one repetition: the seed is this repetition's
// and repeat is left out). It is what a results directory keeps as
// config.resolved.toml.
func (e *Experiment) ResolvedTOML() []byte {
	var b strings.Builder
	w := func(key string, v string) { fmt.Fprintf(&b, "%s = %s\n", key, v) }
	q := strconv.Quote
	fmt.Fprintf(&b, "# Resolved from %s", e.File)
	if len(e.Vary) > 0 {
		fmt.Fprintf(&b, " with %s", strings.Join(e.Vary, ", "))
	}
	b.WriteString("\n")
	if e.Repeat > 1 {
		fmt.Fprintf(&b, "# Repetition %d of %d: seed derived from %d\n", e.Repetition+1, e.Repeat, e.BaseSeed)
	}
	w("name", q(e.Name))
	if e.Description != "" {
		w("description", q(e.Description))
	}
	w("duration", q(dur(e.Duration)))
	w("drain", q(dur(e.Drain)))
	w("seed", strconv.FormatUint(e.Seed, 10))
	w("backend", q(e.Backend))
	writeBottlenecks(&b, e)
	for _, p := range e.Paths {
		b.WriteString("\n[[path]]\n")
		writeAddrs(w, p)
		if p.Bottleneck != "" {
			w("bottleneck", q(p.Bottleneck))
		}
		if p.Backup {
			w("backup", "true")
		}
		writeTraces(w, p)
		writeLink(&b, p.Up, true)
		b.WriteString("[path.down]\n")
		writeLink(&b, p.Down, true)
		writeChanges(&b, p)
	}
	t := e.Transport
	b.WriteString("\n[transport]\n")
	if t.Kind != "" && t.Kind != KindMPQ {
		// The baselines: their keys alone (kind mpq writes no kind, so
		// that the configurations of runs from before the key existed
		// stay the same).
		w("kind", q(t.Kind))
		if t.TCPCongestion != "" {
			w("tcp_congestion", q(t.TCPCongestion))
		}
		if t.Connection != "" && t.Connection != ConnectionShared {
			// Written only when not the default, as tcp_congestion.
			w("connection", q(t.Connection))
		}
		if t.Connection == ConnectionPool {
			w("pool_idle_timeout", q(dur(t.PoolIdleTimeout)))
			w("pool_max_idle", strconv.Itoa(t.PoolMaxIdle))
		}
		w("multipath", strconv.FormatBool(t.Multipath))
	} else {
		writeMPQTransport(&b, w, e)
	}
	writeSources(&b, w, e)
	writeCompetitors(&b, e)
	b.WriteString("\n[output]\n")
	w("qlog", strconv.FormatBool(e.Output.Qlog))
	w("interval", q(dur(e.Output.Interval)))
	w("path_interval", q(dur(e.Output.PathInterval)))
	if !e.Output.Series {
		// Written only when off, as warmup.
		w("series", "false")
	}
	if e.Output.Warmup > 0 {
		// Written only when set: the configurations (and hashes) of
		// runs without a warm-up stay those of earlier versions.
		w("warmup", q(dur(e.Output.Warmup)))
	}
	return []byte(b.String())
}

// writeMPQTransport writes mpq's transport keys.
func writeMPQTransport(b *strings.Builder, w func(key, v string), e *Experiment) {
	q := strconv.Quote
	t := e.Transport
	w("path_scheduler", q(t.PathScheduler))
	w("stream_scheduler", q(t.StreamScheduler))
	w("congestion", q(t.Congestion))
	w("newreno_growth", q(t.NewRenoGrowth))
	w("max_packet_size", strconv.Itoa(t.MaxPacketSize))
	w("pacing", strconv.FormatBool(t.Pacing))
	w("multipath", strconv.FormatBool(t.Multipath))
	w("initial_rtt", q(dur(t.InitialRTT)))
	if opts := t.SchedulerOptions.Written(t.PathScheduler); len(opts) > 0 {
		keys := slices.Sorted(maps.Keys(opts))
		var kv []string
		for _, k := range keys {
			switch v := opts[k].(type) {
			case bool:
				kv = append(kv, k+" = "+strconv.FormatBool(v))
			case string:
				kv = append(kv, k+" = "+q(v))
			}
		}
		w("scheduler_options", "{ "+strings.Join(kv, ", ")+" }")
	}
	// Written only when not the default, so that the configurations
	// (and config_sha256) of runs from before the keys existed stay the
	// same.
	if !t.PathFailure {
		w("path_failure", "false")
	}
	if t.PathAbandonAfter > 0 {
		w("path_abandon_after", q(dur(t.PathAbandonAfter)))
	}
	if t.ReceiveWindow > 0 {
		w("receive_window", strconv.FormatInt(t.ReceiveWindow, 10))
	}
	if t.InitialReceiveWindow > 0 {
		w("initial_receive_window", strconv.FormatInt(t.InitialReceiveWindow, 10))
	}
	if t.ConnWindowFollowsStream || t.followsStreamWindowByDefault() {
		// Also when false where the path scheduler's default is true.
		w("conn_window_follows_stream", strconv.FormatBool(t.ConnWindowFollowsStream))
	}
	if t.SendBelowWindow {
		w("send_below_window", "true")
	}
	if t.ZeroRTT {
		w("zero_rtt", "true")
	}
	if t.Repair {
		w("repair", "true")
	}
	if t.SlowStart != "" && t.SlowStart != string(congestion.DefaultSlowStart(t.Congestion)) {
		w("slow_start", q(t.SlowStart))
	}
	if r := t.CongestionReadings; !r.IsZero() {
		if r.InitialWindow > 0 {
			w("initial_window", strconv.Itoa(r.InitialWindow))
		}
		if r.EmulatedConnections > 1 {
			w("emulated_connections", strconv.Itoa(r.EmulatedConnections))
		}
		if r.LossReduction > 0 {
			w("loss_reduction", strconv.FormatFloat(r.LossReduction, 'g', -1, 64))
		}
		if r.CwndLimited {
			w("cwnd_limited", "true")
		}
		if r.RTOCollapse {
			w("rto_collapse", "true")
		}
		if r.CubicTarget {
			w("cubic_target", "true")
		}
		if r.OLIABestOverflow {
			w("olia_best_overflow", "true")
		}
		if r.CubicAlpha != congestion.CubicAlphaWMax {
			w("cubic_alpha", q(string(r.CubicAlpha)))
		}
	}
	if t.SimNullProtection != DefaultSimNullProtection(e.Backend) {
		w("sim_null_protection", strconv.FormatBool(t.SimNullProtection))
	} else if t.SimNullProtection {
		b.WriteString("# sim_null_protection = true (the simulator's default: null 1-RTT packet protection, same results as AES-GCM)\n")
	}
}

// writeSources writes the [[source]] tables.
func writeSources(b *strings.Builder, w func(key, v string), e *Experiment) {
	q := strconv.Quote
	for _, s := range e.Sources {
		b.WriteString("\n[[source]]\n")
		w("name", q(s.Name))
		w("kind", q(s.Kind))
		w("priority", strconv.FormatBool(s.Priority))
		if s.Kind != KindBulk {
			w("reply_priority", strconv.FormatBool(s.ReplyPriority))
		}
		w("start", q(dur(s.Start)))
		if s.Stop > 0 {
			w("stop", q(dur(s.Stop)))
		}
		for _, k := range sourceKeys[s.Kind] {
			switch k {
			case "interval":
				w(k, q(dur(s.Interval)))
			case "size":
				w(k, strconv.FormatInt(s.Size, 10))
			case "reply_size":
				w(k, strconv.FormatInt(s.ReplySize, 10))
			case "count":
				w(k, strconv.Itoa(s.Count))
			case "announce":
				w(k, strconv.FormatBool(s.Announce))
			case "timeout":
				w(k, q(dur(s.Timeout)))
			}
		}
	}
}

// writeLink writes a link's keys; the path's up link goes in [[path]],
// its down link in [path.down].
func writeLink(b *strings.Builder, l Link, delay bool) {
	w := func(key string, v string) { fmt.Fprintf(b, "%s = %s\n", key, v) }
	if l.Trace == nil {
		w("rate", strconv.Quote(FormatRate(l.Rate)))
	}
	if delay {
		w("delay", strconv.Quote(dur(l.Delay)))
	}
	w("loss", strconv.FormatFloat(l.Loss, 'g', -1, 64))
	w("loss_model", strconv.Quote(l.LossModel))
	if l.LossModel == "gilbert" {
		w("burst", strconv.FormatFloat(l.BurstLength, 'g', -1, 64))
	}
	if l.QueueBytes > 0 {
		w("queue", strconv.FormatInt(l.QueueBytes, 10))
	} else {
		w("queue", strconv.Quote(strconv.FormatFloat(l.QueueBDP, 'g', -1, 64)+"bdp"))
	}
	w("jitter", strconv.Quote(dur(l.Jitter)))
}

func dur(d time.Duration) string { return d.String() }

// PointSHA256 identifies the run's grid point: the SHA-256 (hex) of its
// resolved configuration without comments and without the seed, the same
// for every repetition of the point and different for anything else.
func (e *Experiment) PointSHA256() string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(e.ResolvedTOML()), "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "seed = ") {
			continue
		}
		b.WriteString(line)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// SameRun reports whether two resolved configurations describe the same
// run: equal but for comments (which name the file they came from).
func SameRun(a, b []byte) bool {
	strip := func(x []byte) string {
		var s strings.Builder
		for _, line := range strings.SplitAfter(string(x), "\n") {
			if !strings.HasPrefix(line, "#") {
				s.WriteString(line)
			}
		}
		return s.String()
	}
	return strip(a) == strip(b)
}
