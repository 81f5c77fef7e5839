package trafficgen

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// Millis is a time in milliseconds in results. +Inf stands for a message
// that did not complete (unbounded); NaN for a value that does not exist
// (the mean of no values). JSON writes them as the string "+Inf" and as
// null, CSV as "+Inf" and as an empty field; both parse back.
type Millis float64

// Inf is the time of a message that did not complete.
var Inf = Millis(math.Inf(1))

// MarshalJSON writes finite values as numbers, +Inf as "+Inf", NaN as
// null.
func (m Millis) MarshalJSON() ([]byte, error) { return MarshalFloat(float64(m)), nil }

// UnmarshalJSON reads what MarshalJSON writes.
func (m *Millis) UnmarshalJSON(b []byte) error {
	f, err := UnmarshalFloat(b)
	*m = Millis(f)
	return err
}

// MarshalFloat writes a value of a result in JSON: finite values as
// numbers, infinities as the strings "+Inf" and "-Inf", NaN (no value)
// as null.
func MarshalFloat(f float64) []byte {
	switch {
	case math.IsNaN(f):
		return []byte("null")
	case math.IsInf(f, 1):
		return []byte(`"+Inf"`)
	case math.IsInf(f, -1):
		return []byte(`"-Inf"`)
	}
	return strconv.AppendFloat(nil, f, 'f', -1, 64)
}

// UnmarshalFloat reads what MarshalFloat writes.
func UnmarshalFloat(b []byte) (float64, error) {
	b = bytes.TrimSpace(b)
	switch string(b) {
	case "null":
		return math.NaN(), nil
	case `"+Inf"`, `"Inf"`:
		return math.Inf(1), nil
	case `"-Inf"`:
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return math.NaN(), fmt.Errorf("trafficgen: bad value %s", b)
	}
	return f, nil
}

// FormatCSV writes a value for a CSV field: "+Inf", "" for NaN, else the
// number with three decimals (microseconds).
func FormatCSV(f float64) string {
	switch {
	case math.IsNaN(f):
		return ""
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(f, 'f', 3, 64)
}

// ParseCSV reads a field FormatCSV wrote ("" is NaN).
func ParseCSV(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// ms converts a duration to milliseconds rounded to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// round3 rounds to three decimals.
func round3(f float64) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	return math.Round(f*1e3) / 1e3
}

// Dist summarises the times of a set of messages in milliseconds,
// completed and failed: a failed message counts as +Inf, so quantiles and
// the maximum are +Inf once the failures reach their rank.
type Dist struct {
	// N counts the messages, Failed those that did not complete.
	N      int `json:"n"`
	Failed int `json:"failed"`
	// Min, the nearest-rank quantiles (the smallest value with at least
	// p·N values at or below it) and Max over all N.
	Min  Millis `json:"min"`
	P50  Millis `json:"p50"`
	P90  Millis `json:"p90"`
	P99  Millis `json:"p99"`
	P999 Millis `json:"p999"`
	Max  Millis `json:"max"`
	// Mean is over all N (+Inf if any failed); MeanCompleted over the
	// completed ones only (NaN, null in JSON, if none completed).
	Mean          Millis `json:"mean"`
	MeanCompleted Millis `json:"mean_completed"`
}

// NearestRank is the nearest-rank p-quantile of sorted values (ascending,
// +Inf last): the value at rank ceil(p·n), at least rank 1. NaN if there
// are no values.
func NearestRank(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	// p·n computed in a way that keeps exact products exact (0.99·100
	// is 98.99999… in floating point).
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	return sorted[min(max(rank, 1), n)-1]
}

// DistributionOf summarises times in milliseconds, +Inf for messages that
// did not complete; nil if there are none.
func DistributionOf(vals []float64) *Dist {
	if len(vals) == 0 {
		return nil
	}
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	d := &Dist{N: len(s), Min: Millis(s[0]), Max: Millis(s[len(s)-1])}
	q := func(p float64) Millis { return Millis(NearestRank(s, p)) }
	d.P50, d.P90, d.P99, d.P999 = q(0.5), q(0.9), q(0.99), q(0.999)
	var sum float64
	for _, v := range s {
		if math.IsInf(v, 1) {
			d.Failed++
			continue
		}
		sum += v
	}
	d.MeanCompleted = Millis(math.NaN())
	if done := d.N - d.Failed; done > 0 {
		d.MeanCompleted = Millis(round3(sum / float64(done)))
	}
	d.Mean = d.MeanCompleted
	if d.Failed > 0 {
		d.Mean = Inf
	}
	return d
}

// Distribution summarises the times of completed messages and failed more
// that did not complete; nil if there are none.
func Distribution(ds []time.Duration, failed int) *Dist {
	vals := make([]float64, 0, len(ds)+failed)
	for _, d := range ds {
		vals = append(vals, ms(d))
	}
	for range failed {
		vals = append(vals, math.Inf(1))
	}
	return DistributionOf(vals)
}

// Jitter is the mean absolute difference of consecutive delays divided by
// the mean delay, the jitter of the cloud control study (reference 000);
// NaN with fewer than two delays.
func Jitter(ds []time.Duration) float64 {
	if len(ds) < 2 {
		return math.NaN()
	}
	var diff, sum float64
	for i, d := range ds {
		sum += float64(d)
		if i > 0 {
			diff += math.Abs(float64(d - ds[i-1]))
		}
	}
	mean := sum / float64(len(ds))
	if mean == 0 {
		return 0
	}
	return diff / float64(len(ds)-1) / mean
}

// QuantileCI is the distribution-free (order-statistic) confidence
// interval of level conf for the p-quantile of the population that the
// sorted values (ascending, +Inf last) sample: [x(l), x(u)], the values
// of ranks l and u (from 1), with B ~ Binomial(n, p) the number of
// values at or below the quantile, l the largest rank with P(B ≤ l−1) ≤
// (1−conf)/2 and u the smallest with P(B ≥ u) ≤ (1−conf)/2; the
// interval covers the quantile with probability at least conf. When no
// rank is low (high) enough, which few values for a high p leave, lo is
// NaN (hi +Inf: the values do not bound the quantile from above); both
// NaN without values. Ranks are 0 when missing.
func QuantileCI(sorted []float64, p, conf float64) (lo, hi float64, loRank, hiRank int) {
	n := len(sorted)
	if n == 0 {
		return math.NaN(), math.NaN(), 0, 0
	}
	alpha := (1 - conf) / 2
	lgn, _ := math.Lgamma(float64(n) + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	pmf := func(k int) float64 {
		a, _ := math.Lgamma(float64(k) + 1)
		b, _ := math.Lgamma(float64(n-k) + 1)
		return math.Exp(lgn - a - b + float64(k)*lp + float64(n-k)*lq)
	}
	// P(B ≤ l−1) grows with l: the largest l with it at most alpha.
	below := 0.0 // P(B ≤ l−1)
	for l := 1; l <= n; l++ {
		below += pmf(l - 1)
		if below > alpha {
			break
		}
		loRank = l
	}
	// P(B ≥ u) shrinks as u grows: the smallest u with it at most alpha.
	above := 0.0 // P(B ≥ u)
	for u := n; u >= 1; u-- {
		above += pmf(u)
		if above > alpha {
			break
		}
		hiRank = u
	}
	lo, hi = math.NaN(), math.Inf(1)
	if loRank > 0 {
		lo = sorted[loRank-1]
	}
	if hiRank > 0 {
		hi = sorted[hiRank-1]
	}
	return lo, hi, loRank, hiRank
}

// Beyond counts the sorted values greater than v: the messages beyond a
// quantile (those that did not complete included, unless v is +Inf).
func Beyond(sorted []float64, v float64) int {
	return len(sorted) - sort.Search(len(sorted), func(i int) bool { return sorted[i] > v })
}
