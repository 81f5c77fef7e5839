// Package tracegen writes link traces in mahimahi's format (see
// experiment.Trace) from a rate over time: the small traces of
// experiments/traces are its output (go run ./experiment/tracegen/gen), not
// copies of measured traces.
package tracegen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Rate is a link's rate in bits per second at a time since the start.
type Rate func(at time.Duration) float64

// Opportunities turns a rate over [0, period) into delivery opportunities
// of experiment.TracePacket bytes, in whole milliseconds: the rate's bytes
// accumulate millisecond by millisecond, and an opportunity is due at the
// end of each millisecond for every packet's worth they reach. The last
// time is the period, so that the trace repeats with it (an opportunity
// is added there if none falls on it).
func Opportunities(r Rate, period time.Duration) []int64 {
	var out []int64
	credit := 0.0
	n := int64(period / time.Millisecond)
	for ms := int64(1); ms <= n; ms++ {
		credit += r(time.Duration(ms-1)*time.Millisecond) / 8 / 1000
		for credit >= experiment.TracePacket {
			out = append(out, ms)
			credit -= experiment.TracePacket
		}
	}
	if len(out) == 0 || out[len(out)-1] != n {
		out = append(out, n)
	}
	return out
}

// Constant is a constant rate.
func Constant(bps float64) Rate { return func(time.Duration) float64 { return bps } }

// Ramp goes linearly from one rate to another over d, then stays.
func Ramp(from, to float64, d time.Duration) Rate {
	return func(at time.Duration) float64 {
		f := min(1, float64(at)/float64(d))
		return from + (to-from)*f
	}
}

// Walk is a random walk of the logarithm of the rate, seeded: it starts
// at start and every step moves by a normal draw of standard deviation
// sigma (in natural-log units), reflected at the bounds lo and hi.
func Walk(seed uint64, start, lo, hi, sigma float64, step, period time.Duration) Rate {
	rng := rand.New(rand.NewPCG(seed, 0x74726163))
	n := int(period/step) + 1
	rates := make([]float64, n)
	l, llo, lhi := math.Log(start), math.Log(lo), math.Log(hi)
	for i := range rates {
		rates[i] = math.Exp(l)
		l += rng.NormFloat64() * sigma
		for l < llo || l > lhi {
			if l < llo {
				l = 2*llo - l
			}
			if l > lhi {
				l = 2*lhi - l
			}
		}
	}
	return func(at time.Duration) float64 { return rates[min(int(at/step), n-1)] }
}

// Write writes a trace, one time a line.
func Write(w io.Writer, ms []int64) error {
	bw := bufio.NewWriter(w)
	for _, v := range ms {
		fmt.Fprintln(bw, v)
	}
	return bw.Flush()
}

// File is one trace of experiments/traces.
type File struct {
	Name string
	// About says what it is and where it comes from.
	About string
	MS    []int64
}

// Files are the traces of experiments/traces.
func Files() []File {
	return []File{
		{"constant-12mbit.trace", "12 Mbit/s exactly: one 1500-byte opportunity every millisecond, a 1 s period.",
			Opportunities(Constant(12e6), time.Second)},
		{"cellular-walk.trace", "20 s of a cellular-like link: the rate's logarithm walks randomly (seed 1) every 200 ms by a normal step of 0.25, between 2 and 40 Mbit/s, from 12 Mbit/s. Our parameters, a stand-in for the quickly varying rate of cellular links that Winstein et al. report (Sprout, NSDI 2013); not fitted to any measured trace.",
			Opportunities(Walk(1, 12e6, 2e6, 40e6, 0.25, 200*time.Millisecond, 20*time.Second), 20*time.Second)},
		{"wifi-degrading.trace", "20 s of a link that degrades like Wi-Fi as its user walks away: from 30 Mbit/s down to 2 Mbit/s, linearly over the 20 s.",
			Opportunities(Ramp(30e6, 2e6, 20*time.Second), 20*time.Second)},
		{"lte-improving.trace", "20 s of a link that improves as a cellular connection takes over: from 2 Mbit/s up to 20 Mbit/s, linearly over the 20 s.",
			Opportunities(Ramp(2e6, 20e6, 20*time.Second), 20*time.Second)},
	}
}
