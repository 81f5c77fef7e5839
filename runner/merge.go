package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// A run of two processes (mpq run --role, and the netns backend, which
// starts both roles) leaves each end's half in a directory of its own:
// HalfFile (trafficgen.Half as JSON), the end's role.json, its qlog
// traces if asked for, and with the client's the resolved configuration.
// Merge joins the halves into the files of an ordinary run.
const (
	// HalfFile is the name of an end's half of a run.
	HalfFile = "half.json"
	// RoleFile describes the end that wrote a half (RoleInfo).
	RoleFile = "role.json"
)

// RoleInfo describes one end of a two-process run, next to its half.
type RoleInfo struct {
	Side string `json:"side"`
	// ConfigSHA256 identifies the resolved configuration the end ran.
	ConfigSHA256 string `json:"config_sha256"`
	// Local and Remote are the end's address on each path and the
	// other end's (the client's --local and --connect, the server's
	// --listen).
	Local  []string `json:"local"`
	Remote []string `json:"remote,omitempty"`
	// Started is when the end began the run (wall clock).
	Started time.Time `json:"started"`
	// Clock is the client's measurement of the server's clock (nil on the
	// server's side).
	Clock *ClockReport `json:"clock,omitempty"`
	// PathIndex maps the connection's path IDs to the experiment's paths
	// (the client's view: path i starts at its i-th --local address).
	PathIndex map[uint64]int `json:"path_index,omitempty"`
	// Kernel and Congestion are, for the kernel's transports, the
	// client's kernel release and the controller its socket ran.
	Kernel     string `json:"kernel,omitempty"`
	Congestion string `json:"congestion,omitempty"`
	// Kind is the transport the client's connection ran (kindOf).
	Kind string `json:"kind,omitempty"`
	// Connections is the number of connections that carried the run's
	// messages: those the server accepted, those the client opened
	// (connectionsOf).
	Connections int `json:"connections,omitempty"`
	// MaxConnections is the largest number of connections the client
	// had open at once, per request or pooled (maxConnectionsOf).
	MaxConnections int `json:"max_connections,omitempty"`
}

// connectionsPer1000 is the number of connections per 1000 of the
// client's messages: transport.connections × 1000 over the messages the
// client's sources generated (those of the warm-up included, as the
// connections; 0 without messages), reference 000's sessions per 1000
// requests (its Figure 4).
func connectionsPer1000(sum *trafficgen.Summary) float64 {
	n := 0
	for _, s := range sum.Sources {
		if s.Sender == "client" {
			n += s.Messages + s.WarmupExcluded
		}
	}
	if n == 0 {
		return 0
	}
	return float64(sum.Transport.Connections) * 1000 / float64(n)
}

// writeJSON writes v to name through a temporary file, so that name is
// never half-written.
func writeJSON(name string, v any) error {
	js, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// jsonCopy returns a copy of v made through JSON.
func jsonCopy[T any](v *T) (*T, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var c T
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func readJSON(name string, v any) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// writeHalf writes an end's half and description into dir.
func writeHalf(dir string, h *trafficgen.Half, info *RoleInfo) error {
	if err := writeJSON(filepath.Join(dir, HalfFile), h); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, RoleFile), info)
}

// readHalf reads the half and the description in dir.
func readHalf(dir string) (*trafficgen.Half, *RoleInfo, error) {
	var h trafficgen.Half
	var info RoleInfo
	if err := readJSON(filepath.Join(dir, HalfFile), &h); err != nil {
		return nil, nil, err
	}
	if err := readJSON(filepath.Join(dir, RoleFile), &info); err != nil {
		return nil, nil, err
	}
	if h.Side != info.Side {
		return nil, nil, fmt.Errorf("%s: a %s half described as the %s's", dir, h.Side, info.Side)
	}
	return &h, &info, nil
}

// Merge joins the client's half in clientDir and the server's in
// serverDir into the result files of an ordinary run in dir:
// config.resolved.toml, summary.json, messages.csv, paths.csv,
// throughput.csv, the qlog traces of both ends, and clock.json (the
// measured offset of the server's clock). e is the run's experiment (the
// client's resolved configuration); both halves must come from it.
func Merge(e *experiment.Experiment, clientDir, serverDir, dir string) (*Result, error) {
	return mergeRun(e, clientDir, serverDir, dir, MergeOptions{}, nil)
}

// MergeWith is Merge with options.
func MergeWith(e *experiment.Experiment, clientDir, serverDir, dir string, opt MergeOptions) (*Result, error) {
	return mergeRun(e, clientDir, serverDir, dir, opt, nil)
}

// mergeHalves reads and joins the halves of a run of e.
// It returns the client's and the server's RoleInfo.
func mergeHalves(e *experiment.Experiment, clientDir, serverDir string, opt MergeOptions) (*trafficgen.Recorder, trafficgen.SummaryInput, *RoleInfo, *RoleInfo, error) {
	var in trafficgen.SummaryInput
	ch, ci, err := readHalf(clientDir)
	if err != nil {
		return nil, in, nil, nil, err
	}
	sh, si, err := readHalf(serverDir)
	if err != nil {
		return nil, in, nil, nil, err
	}
	if ch.Side != "client" || sh.Side != "server" {
		return nil, in, nil, nil, fmt.Errorf("want a client's and a server's half, got a %s's and a %s's", ch.Side, sh.Side)
	}
	if want := configSHA256(e); ci.ConfigSHA256 != want || si.ConfigSHA256 != want {
		return nil, in, nil, nil, fmt.Errorf("the halves ran other configurations than %s (client %.12s, server %.12s, want %.12s)",
			e.File, ci.ConfigSHA256, si.ConfigSHA256, want)
	}
	if opt.CorrectClock {
		if ci.Clock == nil {
			return nil, in, nil, nil, errNoClock
		}
		correctClock(sh, ci.Clock)
		c := *ci.Clock
		c.Corrected = true
		c.Note = "offset = server clock - client clock; the server's times were moved into the client's clock by the offset, interpolated between start and end (mpq merge --correct-clock)"
		ci.Clock = &c
	}
	rec, in, err := trafficgen.MergeHalves(e, ch, sh)
	if err != nil {
		return nil, in, nil, nil, err
	}
	in.BaseRTT = roleRTTs(e, ci.PathIndex)
	return rec, in, ci, si, nil
}

// mergeRun is MergeWith; amend, if not nil, completes the summary before it
// is written, and extra writes rows of throughput.csv after the
// connection's.
func mergeRun(e *experiment.Experiment, clientDir, serverDir, dir string, opt MergeOptions, amend func(*trafficgen.Summary), extra ...func(io.Writer) error) (*Result, error) {
	rec, in, ci, si, err := mergeHalves(e, clientDir, serverDir, opt)
	if err != nil {
		return nil, err
	}
	sum := rec.Summarise(e, in)
	sum.Transport.Kernel, sum.Transport.Congestion = ci.Kernel, ci.Congestion
	if ci.Kind != "" {
		sum.Transport.Kind = ci.Kind
	}
	sum.Transport.Connections = si.Connections
	if c := sum.Transport.Connection; c != "" && c != experiment.ConnectionShared {
		sum.Transport.MaxConnections = ci.MaxConnections
		sum.Transport.ConnectionsPer1000 = connectionsPer1000(sum)
	}
	if amend != nil {
		amend(sum)
	}
	if err := writeResults(dir, e, rec, sum, ci.Started, extra...); err != nil {
		return nil, err
	}
	for _, side := range []string{clientDir, serverDir} {
		if err := copyQlog(filepath.Join(side, "qlog"), filepath.Join(dir, "qlog")); err != nil {
			return nil, err
		}
	}
	if ci.Clock != nil {
		if err := writeJSON(filepath.Join(dir, "clock.json"), ci.Clock); err != nil {
			return nil, err
		}
	}
	return &Result{Summary: sum}, nil
}

// roleRTTs lists by path ID the round-trip propagation delay of the
// experiment path each path ID runs over.
func roleRTTs(e *experiment.Experiment, index map[uint64]int) []time.Duration {
	var out []time.Duration
	ids := make([]uint64, 0, len(index))
	for id := range index {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		i := index[id]
		if id > 1<<16 || i < 0 || i >= len(e.Paths) {
			continue
		}
		for uint64(len(out)) <= id {
			out = append(out, 0)
		}
		out[id] = e.Paths[i].RTT()
	}
	return out
}

// copyQlog copies the traces in from into to (nothing if from does not
// exist).
func copyQlog(from, to string) error {
	ents, err := os.ReadDir(from)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, d := range ents {
		if d.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, d.Name()))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, d.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
