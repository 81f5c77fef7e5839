package resultset

import (
	"math"
	"testing"
)

// TestStudentT975 against the 0.975 quantiles computed independently
// (numerical integration of the t density with mpmath, 30 digits).
func TestStudentT975(t *testing.T) {
	for _, tc := range []struct {
		df   int
		want float64
	}{
		{1, 12.7062047361949}, {2, 4.30265272974946}, {3, 3.18244630528371}, {4, 2.77644510519779},
		{9, 2.26215716279821}, {29, 2.04522964213270}, {100, 1.98397151852355}, {1000, 1.96233908082641},
	} {
		if got := StudentT975(tc.df); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("t(0.975, %d) = %.12f, want %.12f", tc.df, got, tc.want)
		}
	}
}

// TestSummarise pins mean, standard deviation and the Student-t interval
// on values computed by hand.
func TestSummarise(t *testing.T) {
	near := func(a Value, b float64) bool { return math.Abs(float64(a)-b) < 1e-9 }
	// 1..5: mean 3, sd √(10/4) = 1.58113883, half-width
	// 2.77644510519779 · 1.58113883 / √5 = 1.96324316.
	s := Summarise([]float64{1, 2, 3, 4, 5})
	if s.N != 5 || !near(s.Mean, 3) || !near(s.SD, math.Sqrt(2.5)) ||
		math.Abs(float64(s.CI95[0])-(3-1.963243161)) > 1e-8 || math.Abs(float64(s.CI95[1])-(3+1.963243161)) > 1e-8 {
		t.Fatalf("1..5: %+v", s)
	}
	// Two values 10 and 20: mean 15, sd 7.0710678, half-width
	// 12.7062047 · 7.0710678 / √2 = 63.5310237.
	s = Summarise([]float64{10, 20})
	if !near(s.Mean, 15) || math.Abs(float64(s.CI95[1])-(15+63.53102368)) > 1e-7 {
		t.Fatalf("10, 20: %+v", s)
	}
	// One value: no spread, no interval.
	s = Summarise([]float64{7})
	if s.N != 1 || !near(s.Mean, 7) || !math.IsNaN(float64(s.SD)) || !math.IsNaN(float64(s.CI95[0])) {
		t.Fatalf("one value: %+v", s)
	}
	// An unbounded value makes the mean unbounded and the rest undefined;
	// missing values (NaN) are left out.
	s = Summarise([]float64{1, math.Inf(1), math.NaN(), 3})
	if s.N != 3 || s.Inf != 1 || !math.IsInf(float64(s.Mean), 1) || !math.IsNaN(float64(s.SD)) || !math.IsNaN(float64(s.CI95[1])) {
		t.Fatalf("with +Inf: %+v", s)
	}
	if s := Summarise(nil); s.N != 0 || !math.IsNaN(float64(s.Mean)) {
		t.Fatalf("nothing: %+v", s)
	}
}
