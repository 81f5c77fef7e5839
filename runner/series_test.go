package runner

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// seriesDoc is one file download over two paths, as the CoNEXT'17 grid
// runs it (experiments/conext17).
const seriesDoc = `name = "series"
duration = "2s"
drain = "60s"
[[path]]
rate = "10Mbit"
delay = "10ms"
queue = "15000"
[[path]]
rate = "5Mbit"
delay = "20ms"
queue = "15000"
[transport]
congestion = "olia"
[[source]]
name = "dl"
kind = "file"
size = "500kB"
`

// TestSeriesOff: output.series = false leaves paths.csv and throughput.csv
// out and changes nothing else of the run: its summary's sources and
// paths are those of the run with the time series.
func TestSeriesOff(t *testing.T) {
	on, onDir := run(t, seriesDoc)
	off, offDir := run(t, seriesDoc+"[output]\nseries = false\n")
	for _, f := range []string{"paths.csv", "throughput.csv"} {
		if _, err := os.Stat(filepath.Join(onDir, f)); err != nil {
			t.Errorf("series on: %v", err)
		}
		if _, err := os.Stat(filepath.Join(offDir, f)); err == nil {
			t.Errorf("series off: %s written", f)
		}
	}
	for _, f := range []string{"summary.json", "messages.csv", "config.resolved.toml"} {
		if _, err := os.Stat(filepath.Join(offDir, f)); err != nil {
			t.Errorf("series off: %v", err)
		}
	}
	a, _ := json.Marshal(on.Summary.Sources)
	b, _ := json.Marshal(off.Summary.Sources)
	if string(a) != string(b) {
		t.Fatalf("sources differ:\n%s\n%s", a, b)
	}
	if s := on.Summary.Sources[0]; s.Completed != 1 {
		t.Fatalf("download not complete: %+v", s)
	}
	// The run ends when the download completed, long before the drain's
	// bound.
	if d := off.Summary.DrainedS; d >= 60 {
		t.Fatalf("drained %v s: the run did not end with the download", d)
	}
}

// TestRecorderConfigSeries: without output.series (no paths.csv) the
// recorder keeps no path samples; with it, every output.path_interval.
func TestRecorderConfigSeries(t *testing.T) {
	for _, series := range []bool{true, false} {
		e := load(t, seriesDoc+fmt.Sprintf("[output]\nseries = %v\npath_interval = \"10ms\"\n", series))
		got := recorderConfig(e, time.Time{}).PathInterval
		if want := map[bool]time.Duration{true: 10 * time.Millisecond, false: -1}[series]; got != want {
			t.Errorf("series %v: path interval %v, want %v", series, got, want)
		}
	}
}
