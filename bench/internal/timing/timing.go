// Package timing runs commands as whole processes and summarises their
// times, for the programs under bench/ (they compare commands run in turn
// on a shared machine: medians and round-by-round ratios, never one run).
package timing

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

// Sample is one run's wall and CPU seconds (user and system time of the
// child, from its rusage).
type Sample struct{ Wall, CPU float64 }

// Run runs args with env added to the environment, killed after limit,
// and returns its times and output; an error if it failed.
func Run(args, env []string, limit time.Duration) (Sample, string, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Sample{}, "", err
	}
	timer := time.AfterFunc(limit, func() { _ = cmd.Process.Kill() })
	err := cmd.Wait()
	wall := time.Since(t0).Seconds()
	timer.Stop()
	if err != nil {
		return Sample{}, out.String(), fmt.Errorf("%v: %s", err, Tail(out.String()))
	}
	st := cmd.ProcessState
	return Sample{Wall: wall, CPU: (st.UserTime() + st.SystemTime()).Seconds()}, out.String(), nil
}

// Median is the middle of v (the mean of the two middle values for an
// even count); v is not changed.
func Median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// Of applies f to every sample.
func Of(s []Sample, f func(Sample) float64) []float64 {
	v := make([]float64, len(s))
	for i := range s {
		v[i] = f(s[i])
	}
	return v
}

// Spread is "median [least-greatest]".
func Spread(v []float64) string {
	return fmt.Sprintf("%.2f [%.2f-%.2f]", Median(v), slices.Min(v), slices.Max(v))
}

// Tail is the end of a command's output, for an error message.
func Tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// Loadavg is /proc/loadavg's three load averages, or "unknown".
func Loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "unknown"
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}
