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
