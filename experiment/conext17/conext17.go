// Package conext17 turns the scenario lists of De Coninck and
// Bonaventure's CoNEXT'17 multipath QUIC evaluation (experiments/conext17/
// data/*.json, copied from the evaluation's published scenario files) into mpq experiment
// files: one per class, its scenarios a [[sweep.scenario]] list, single
// path against multipath a [[sweep.mode]] list.
//
// Each path becomes a link in both directions as the original testbed
// (minitopo over tc) built it, as the data's README describes it: the
// rate, the one-way delay, Bernoulli loss, and a drop-tail queue of the
// bandwidth-delay product (rate x round trip) in packets of 1500 bytes,
// rounded up, at least 10 packets. The download is the data's
// file_size_kb in KiB: the testbed's file was made with dd bs=1K
// (minitopo's QUIC experiment).
//
//	go run ./experiment/conext17/gen experiments/conext17
package conext17

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Design is one class of scenarios as the data files hold it.
type Design struct {
	Class       string       `json:"class"`
	FileSizeKB  int          `json:"file_size_kb"`
	Repetitions int          `json:"repetitions"`
	Scenarios   [][]PathSpec `json:"scenarios"`
}

// PathSpec is one path of a scenario.
type PathSpec struct {
	BandwidthMbps float64 `json:"bandwidth_mbps"`
	DelayMS       float64 `json:"delay_ms"` // one way
	QueuingDelay  float64 `json:"queuing_delay"`
	LossPct       float64 `json:"loss_pct"`
}

// Classes are the design's classes, in the order of the paper's figures.
var Classes = []string{"lowbdp", "lowbdp_loss", "highbdp", "highbdp_loss", "small_lowbdp"}

// Read decodes a class's data file and checks its shape: two paths per
// scenario, entry 2k+1 entry 2k with its paths swapped, values in range.
func Read(r io.Reader) (*Design, error) {
	var d Design
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("decoding the design: %w", err)
	}
	if d.Class == "" || d.FileSizeKB <= 0 || d.Repetitions <= 0 {
		return nil, fmt.Errorf("class %q, file_size_kb %d, repetitions %d: want a class, a positive size and repetitions", d.Class, d.FileSizeKB, d.Repetitions)
	}
	if len(d.Scenarios) == 0 || len(d.Scenarios)%2 != 0 {
		return nil, fmt.Errorf("%s: %d scenario entries, want a positive even number (each scenario in both path orders)", d.Class, len(d.Scenarios))
	}
	for i, s := range d.Scenarios {
		if len(s) != 2 {
			return nil, fmt.Errorf("%s: entry %d has %d paths, want 2", d.Class, i, len(s))
		}
		for j, p := range s {
			if !(p.BandwidthMbps > 0) || !(p.DelayMS >= 0) || !(p.LossPct >= 0 && p.LossPct < 100) || math.IsInf(p.BandwidthMbps, 0) || math.IsInf(p.DelayMS, 0) {
				return nil, fmt.Errorf("%s: entry %d path %d: bandwidth %v Mbit/s, delay %v ms, loss %v %%: out of range", d.Class, i, j, p.BandwidthMbps, p.DelayMS, p.LossPct)
			}
		}
		if i%2 == 1 && (s[0] != d.Scenarios[i-1][1] || s[1] != d.Scenarios[i-1][0]) {
			return nil, fmt.Errorf("%s: entry %d is not entry %d with its paths swapped", d.Class, i, i-1)
		}
	}
	return &d, nil
}

// QueuePackets is the queue of a path in packets of 1500 bytes: its
// bandwidth-delay product over the round trip (twice the one-way delay),
// rounded up, and at least 10 packets. (minitopo's formula also adds a
// queuing-delay term that contributes less than a packet, because the
// value given in seconds is used as milliseconds: left out, as the data's
// README says.)
func QueuePackets(p PathSpec) int {
	bdp := p.BandwidthMbps * 1e6 / 8 * (2 * p.DelayMS / 1000) // bytes
	// The tolerance keeps a product that is a whole number of packets
	// but for float rounding from gaining a packet.
	n := int(math.Ceil(bdp/1500 - 1e-9))
	return max(n, 10)
}

// ScenarioName names entry i of a class: "s001a" for scenario 1 with its
// paths in the order of the data's first entry, "s001b" swapped.
func ScenarioName(i int) string {
	return fmt.Sprintf("s%03d%c", i/2+1, 'a'+rune(i%2))
}

// num formats a value of the data as it is written there (shortest
// decimal form).
func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Variant says whose controllers a class's file runs.
type Variant int

const (
	// Paper runs the published controllers (CUBIC of RFC 9438 single
	// path, OLIA of Khalili et al. multipath): experiments/conext17.
	Paper Variant = iota
	// MPQUIC runs them with the readings of MPQUIC, the implementation
	// the paper and the thesis measured (MPQUICReadings):
	// experiments/conext17-mpquic.
	MPQUIC
)

// MPQUICReadings are the [transport] keys of the MPQUIC variant: the
// controllers of qdeconinck/mp-quic (after Chromium's QUIC) emulate 2
// connections with a Reno backoff of 0.7, so a loss leaves 0.85 of the
// window to OLIA and CUBIC alike, CUBIC's Reno-friendly growth is about
// 0.97 packets a round trip; the initial window is 32 packets, an RTO
// (after two tail-loss probes) collapses the window to 2 packets with
// ssthresh half the window, and windows grow only while used. Its
// receiver's flow-control windows start at 32 KiB per stream and 48 KiB
// per connection (quic-go's of 2017) and grow by auto-tuning, the
// connection's kept at 1.5 times the stream's. Its CUBIC sets the window
// to the cubic target at each ACK (MPQUICSingleReadings: the single path
// mode's controller alone), and its OLIA decides its best paths by an
// int64 comparison that overflows (MPQUICMultiReadings: the multipath
// mode's).
const MPQUICReadings = `initial_window = 32
emulated_connections = 2
loss_reduction = 0.7
cwnd_limited = true
rto_collapse = true
initial_receive_window = "32KiB"
conn_window_follows_stream = true
`

// MPQUICSingleReadings are the keys of the MPQUIC variant's single path
// mode beside its controller, cubic: readings cubic alone takes.
const MPQUICSingleReadings = `"transport.cubic_target" = true
`

// MPQUICMultiReadings are the keys of the MPQUIC variant's multipath mode
// beside its controller, olia: MPQUIC's OLIA decides its best paths by a
// comparison in int64 that overflows (olia_best_overflow).
const MPQUICMultiReadings = `"transport.olia_best_overflow" = true
`

// Dir is the directory of a variant's files under experiments/.
func (v Variant) Dir() string {
	if v == MPQUIC {
		return "conext17-mpquic"
	}
	return "conext17"
}

// Experiment is the experiment file of a class (its name
// "conext17-CLASS"), the paper's variant.
func Experiment(d *Design, source string) []byte { return VariantExperiment(d, source, Paper) }

// VariantExperiment is the experiment file of a class in variant v: the
// Paper variant is Experiment's; the MPQUIC variant ("conext17-mpquic-CLASS")
// is the same design with MPQUICReadings.
func VariantExperiment(d *Design, source string, v Variant) []byte {
	if v == MPQUIC {
		return mpquicExperiment(d, source)
	}
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# The CoNEXT'17 multipath QUIC design, class %s: %d scenarios in both path\n", d.Class, len(d.Scenarios)/2)
	w("# orders, a download of %d KiB single path (CUBIC, on the scenario's first\n", d.FileSizeKB)
	w("# path) and multipath (OLIA), %d repetitions. Generated from %s\n", d.Repetitions, source)
	w("# by `go run ./experiment/conext17/gen experiments/conext17`; do not edit.\n")
	w("# Each path in both directions: its rate, one-way delay and random loss,\n")
	w("# and a drop-tail queue of its bandwidth-delay product in 1500-byte packets\n")
	w("# (at least 10), as the original testbed built it (docs/results/conext17.md).\n")
	w("#\n#   mpq run experiments/conext17/%s.toml --parallel 2\n", d.Class)
	w("#\n# When every run is done, mpq run draws the class's figure (output.figures)\n")
	w("# into results/conext17-%s: ratio.pdf and ratio.png, the CDF over the\n", d.Class)
	w("# scenarios of single path time / multipath time.\n\n")
	w("name = \"conext17-%s\"\n", d.Class)
	w("description = \"CoNEXT'17 design, class %s: single path (CUBIC) vs multipath (OLIA) download completion time\"\n", d.Class)
	w("# The request goes once the connection is up; the run ends when the\n")
	w("# download completed (the drain ends then), at most an hour later.\n")
	w("duration = \"30s\"\ndrain = \"3600s\"\nseed = 1\nrepeat = %d\n\n", d.Repetitions)
	w("# Every scenario sets both paths' rate, delay, loss and queue.\n[[path]]\n[[path]]\n\n")
	w("[transport]\npath_scheduler = \"lowrtt\"\n\n")
	w("# file_size_kb = %d: the testbed made the file with dd bs=1K, so KiB.\n", d.FileSizeKB)
	w("[[source]]\nname = \"download\"\nkind = \"file\"\nsize = \"%dKiB\"\ncount = 1\n\n", d.FileSizeKB)
	w("[output]\n# summary.json and messages.csv only: thousands of runs.\nseries = false\nfigures = [\"ratio.pdf\", \"ratio.png\"]\n")
	for i, s := range d.Scenarios {
		w("\n[[sweep.scenario]]\nname = %q\n", ScenarioName(i))
		for j, p := range s {
			w("\"path.%d.rate\" = \"%sMbit\"\n", j, num(p.BandwidthMbps))
			w("\"path.%d.delay\" = \"%sms\"\n", j, num(p.DelayMS))
			w("\"path.%d.loss\" = \"%s%%\"\n", j, num(p.LossPct))
			w("\"path.%d.queue\" = %d\n", j, 1500*QueuePackets(p))
		}
	}
	w("\n# Last, so that it varies fastest: the two modes of a scenario are\n# neighbours in the run order.\n")
	w("[[sweep.mode]]\nname = \"single\"\n\"transport.multipath\" = false\n\"transport.congestion\" = \"cubic\"\n\n")
	w("[[sweep.mode]]\nname = \"multi\"\n\"transport.multipath\" = true\n\"transport.congestion\" = \"olia\"\n")
	return []byte(b.String())
}

// mpquicExperiment is the paper's file of the class with MPQUIC's
// readings in [transport], its own name, header and results directory.
func mpquicExperiment(d *Design, source string) []byte {
	paper := string(Experiment(d, source))
	body := paper[strings.Index(paper, "\nname = ")+1:]
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# The CoNEXT'17 multipath QUIC design, class %s, with the controllers of\n", d.Class)
	w("# MPQUIC (qdeconinck/mp-quic, the implementation the paper and De Coninck's\n")
	w("# thesis measured) instead of the published ones: experiments/conext17/%s.toml\n", d.Class)
	w("# with the readings below (docs/results/conext17.md).\n")
	w("# Generated from %s\n", source)
	w("# by `go run ./experiment/conext17/gen experiments/conext17`; do not edit.\n")
	w("#\n#   mpq run experiments/conext17-mpquic/%s.toml --parallel 2\n\n", d.Class)
	body = strings.Replace(body, fmt.Sprintf("name = \"conext17-%s\"", d.Class), fmt.Sprintf("name = \"conext17-mpquic-%s\"", d.Class), 1)
	body = strings.Replace(body, "single path (CUBIC) vs multipath (OLIA) download completion time", "single path (CUBIC) vs multipath (OLIA) with MPQUIC's readings", 1)
	body = strings.Replace(body, "[transport]\npath_scheduler = \"lowrtt\"\n", "[transport]\npath_scheduler = \"lowrtt\"\n# MPQUIC's readings of the controllers and receive windows\n# (conext17.MPQUICReadings).\n"+MPQUICReadings, 1)
	body = strings.Replace(body, "\"transport.congestion\" = \"cubic\"\n", "\"transport.congestion\" = \"cubic\"\n"+MPQUICSingleReadings, 1)
	body = strings.Replace(body, "\"transport.congestion\" = \"olia\"\n", "\"transport.congestion\" = \"olia\"\n"+MPQUICMultiReadings, 1)
	b.WriteString(body)
	return []byte(b.String())
}
