package cli

import (
	"fmt"
	"time"

	"github.com/mpq/mpq/experiment"
)

// progress follows a sweep's runs and estimates the time left. A run's
// work is its experiment duration (simulated or real seconds), so a sweep
// over durations is estimated by the seconds still to run, not by the
// number of runs.
type progress struct {
	start    time.Time
	n, done  int
	work     []float64 // per run, seconds of experiment
	total    float64
	doneWork float64
}

func newProgress(runs []experiment.Experiment, start time.Time) *progress {
	p := &progress{start: start, n: len(runs), work: make([]float64, len(runs))}
	for i, r := range runs {
		p.work[i] = r.Duration.Seconds()
		p.total += p.work[i]
	}
	return p
}

// finished records that run i ended at now and returns the "[i/N]" head
// of its progress line.
func (p *progress) finished(i int, now time.Time) string {
	p.done++
	p.doneWork += p.work[i]
	return fmt.Sprintf("[%d/%d]", p.done, p.n)
}

// left is the estimate of the time left, as "; about 1m10s left", or ""
// when nothing is left or nothing is known yet.
func (p *progress) left(now time.Time) string {
	d, ok := eta(now.Sub(p.start), p.doneWork, p.total)
	if !ok || p.done == p.n {
		return ""
	}
	return "; about " + formatETA(d) + " left"
}

// eta estimates the time left for a sweep of total seconds of experiment
// of which done were finished after elapsed wall-clock time, at the
// average rate so far (which includes the runs in parallel).
func eta(elapsed time.Duration, done, total float64) (time.Duration, bool) {
	if done <= 0 || elapsed <= 0 || total <= done {
		return 0, false
	}
	return time.Duration(float64(elapsed) * (total - done) / done), true
}

// formatETA rounds an estimate to what is worth reading: tenths of a
// second below 10 s, seconds below 10 min, minutes above.
func formatETA(d time.Duration) string {
	switch {
	case d < 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d < 10*time.Minute:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}
