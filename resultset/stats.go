package resultset

import (
	"math"
	"sort"

	"github.com/mpq/mpq/trafficgen"
)

// Value is a number in the aggregate files: +Inf for an unbounded value
// (a quantile that reaches failed messages), NaN for one that does not
// exist (the standard deviation of one run). JSON writes them as "+Inf"
// and null, CSV as "+Inf" and an empty field.
type Value float64

// MarshalJSON implements json.Marshaler.
func (v Value) MarshalJSON() ([]byte, error) { return trafficgen.MarshalFloat(float64(v)), nil }

// UnmarshalJSON implements json.Unmarshaler.
func (v *Value) UnmarshalJSON(b []byte) error {
	f, err := trafficgen.UnmarshalFloat(b)
	*v = Value(f)
	return err
}

// csv formats a value for a CSV field, with up to six decimals.
func (v Value) csv() string {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return trafficgen.FormatCSV(f)
	}
	return formatFloat(f)
}

// Summary is a metric across the repetitions of a grid point.
type Summary struct {
	// N counts the repetitions with a value (NaN values are left out),
	// Inf those whose value is +Inf.
	N   int `json:"n"`
	Inf int `json:"inf"`
	// Mean and SD (sample standard deviation, n-1) of the values; +Inf
	// and undefined (NaN) as soon as one value is +Inf. SD is NaN for one
	// value.
	Mean Value `json:"mean"`
	SD   Value `json:"sd"`
	// CI95 is the 95 % confidence interval of the mean after Student's t:
	// mean ± t(0.975, n-1)·sd/√n; NaN when the standard deviation is.
	CI95 [2]Value `json:"ci95"`
}

// Summarise computes a metric's Summary from its values.
func Summarise(vals []float64) Summary {
	var s Summary
	var sum float64
	var finite []float64
	for _, v := range vals {
		switch {
		case math.IsNaN(v):
			continue
		case math.IsInf(v, 0):
			s.Inf++
		default:
			finite = append(finite, v)
			sum += v
		}
		s.N++
	}
	nan := Value(math.NaN())
	s.Mean, s.SD, s.CI95 = nan, nan, [2]Value{nan, nan}
	switch {
	case s.N == 0:
		return s
	case s.Inf > 0:
		s.Mean = Value(math.Inf(1))
		return s
	}
	n := float64(s.N)
	mean := sum / n
	s.Mean = Value(mean)
	if s.N < 2 {
		return s
	}
	var ss float64
	for _, v := range finite {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / (n - 1))
	half := StudentT975(s.N-1) * sd / math.Sqrt(n)
	s.SD = Value(sd)
	s.CI95 = [2]Value{Value(mean - half), Value(mean + half)}
	return s
}

// StudentT975 is the 0.975 quantile of Student's t distribution with df
// degrees of freedom (df ≥ 1): the factor of a two-sided 95 % confidence
// interval. It inverts the distribution function by bisection.
func StudentT975(df int) float64 {
	lo, hi := 0.0, 1000.0
	for range 200 {
		mid := (lo + hi) / 2
		if studentCDF(mid, float64(df)) < 0.975 {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo < 1e-12 {
			break
		}
	}
	return (lo + hi) / 2
}

// studentCDF is P(T ≤ t) for t ≥ 0 with v degrees of freedom:
// 1 - I_x(v/2, 1/2)/2 with x = v/(v+t²).
func studentCDF(t, v float64) float64 {
	return 1 - 0.5*regIncBeta(v/(v+t*t), v/2, 0.5)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), by
// its continued fraction (evaluated with the modified Lentz method), on
// the side of x where it converges fast.
func regIncBeta(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	lga, _ := math.Lgamma(a)
	lgb, _ := math.Lgamma(b)
	lgab, _ := math.Lgamma(a + b)
	front := math.Exp(lgab - lga - lgb + a*math.Log(x) + b*math.Log(1-x))
	if x > (a+1)/(a+b+2) {
		return 1 - front*betaFraction(1-x, b, a)/b
	}
	return front * betaFraction(x, a, b) / a
}

// betaFraction evaluates the continued fraction of the incomplete beta
// function.
func betaFraction(x, a, b float64) float64 {
	const tiny = 1e-300
	c, d := 1.0, 1-(a+b)*x/(a+1)
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	f := d
	for m := 1; m <= 300; m++ {
		fm := float64(m)
		// Even step.
		num := fm * (b - fm) * x / ((a + 2*fm - 1) * (a + 2*fm))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		f *= d * c
		// Odd step.
		num = -(a + fm) * (a + b + fm) * x / ((a + 2*fm) * (a + 2*fm + 1))
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		delta := d * c
		f *= delta
		if math.Abs(delta-1) < 1e-15 {
			break
		}
	}
	return f
}

// Pooled is a distribution of message times pooled over the repetitions
// of a grid point, in milliseconds, failed messages as +Inf.
type Pooled struct {
	// Metric is the messages.csv column it comes from: mct_ms for
	// periodic sources, response_ms for kinds with replies.
	Metric string `json:"metric"`
	// N counts the messages pooled, those of the warm-up
	// (output.warmup) left out; WarmupExcluded counts these.
	WarmupExcluded int   `json:"warmup_excluded"`
	N              int   `json:"n"`
	Failed         int   `json:"failed"`
	P50            Value `json:"p50"`
	P99            Value `json:"p99"`
	P999           Value `json:"p999"`
	// P99CI95 and P999CI95 are the 95 % order-statistic confidence
	// intervals of the p99 and the p99.9 (trafficgen.QuantileCI): the
	// pooled values of two ranks; the upper end is +Inf when the
	// messages are too few to bound the quantile (or it reaches failed
	// ones), the lower null when too few to bound it from below.
	P99CI95  [2]Value `json:"p99_ci95"`
	P999CI95 [2]Value `json:"p999_ci95"`
	// BeyondP99 and BeyondP999 count the messages whose time is greater
	// than the p99 and the p99.9 (failed ones included): what a tail
	// quantile rests on.
	BeyondP99  int `json:"beyond_p99"`
	BeyondP999 int `json:"beyond_p999"`
}

// pool computes a Pooled distribution.
func pool(metric string, vals []float64) Pooled {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	p := Pooled{Metric: metric, N: len(s)}
	for _, v := range s {
		if math.IsInf(v, 1) {
			p.Failed++
		}
	}
	q := func(x float64) Value { return Value(trafficgen.NearestRank(s, x)) }
	p.P50, p.P99, p.P999 = q(0.5), q(0.99), q(0.999)
	ci := func(x float64) [2]Value {
		lo, hi, _, _ := trafficgen.QuantileCI(s, x, 0.95)
		return [2]Value{Value(lo), Value(hi)}
	}
	p.P99CI95, p.P999CI95 = ci(0.99), ci(0.999)
	p.BeyondP99, p.BeyondP999 = trafficgen.Beyond(s, float64(p.P99)), trafficgen.Beyond(s, float64(p.P999))
	return p
}
