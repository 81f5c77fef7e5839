package plots

import (
	"errors"
	"strings"
	"testing"

	"github.com/mpq/mpq/trafficgen"
)

// TestMetricsTable: the metrics table's columns are the metrics asked
// for, in order, each computed as its doc comment says (threeReps: the
// server's throughput 20, 22, 24 Mbit/s, mean 22 ± 4.97; path 0's growth
// 1133.333 ± 379.458).
func TestMetricsTable(t *testing.T) {
	reps := threeReps()
	for i := range reps {
		// s1's times: 10, 20, ..., 100 ms and one failed in each run.
		reps[i].times = []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100}
		reps[i].competitors = []trafficgen.CompetitorSummary{{Name: "c", GoodputMbps: reps[i].total / 2}}
	}
	points := loadFixtures(t, reps...)
	for _, tc := range []struct {
		name    string
		metrics []string
		wantMD  []string // rows of the Markdown, the header first
		wantCSV string   // the CSV's first two lines
		wantErr string
	}{
		{name: "headline metrics", metrics: []string{"throughput_server_mbps", "path.0.cwnd_growth_ca_bytes_per_rtt"},
			wantMD: []string{"| run | runs | throughput_server_mbps | path.0.cwnd_growth_ca_bytes_per_rtt |",
				"| cwr-red | 3 | 22.00 ± 4.97 | 1133 ± 379 |", "| lowrtt | 1 of 2 | 30.00 | 1340 |"},
			wantCSV: "label,runs,throughput_server_mbps,throughput_server_mbps_ci95_lo,throughput_server_mbps_ci95_hi,throughput_server_mbps_n," +
				"path.0.cwnd_growth_ca_bytes_per_rtt,path.0.cwnd_growth_ca_bytes_per_rtt_ci95_lo,path.0.cwnd_growth_ca_bytes_per_rtt_ci95_hi,path.0.cwnd_growth_ca_bytes_per_rtt_n\n" +
				"cwr-red,3,22.000,17.032,26.968,3,1133.333,753.875,1512.792,3\n"},
		{name: "pooled quantiles", metrics: []string{"s1.pooled_mct_p50_ms", "s1.pooled_mct_p90_ms"},
			// 30 messages of cwr-red pooled: rank 15 and 27.
			wantMD: []string{"| run | runs | s1.pooled_mct_p50_ms | s1.pooled_mct_p90_ms |", "| cwr-red | 3 | 50.00 | 90.00 |"}},
		{name: "a ratio per run", metrics: []string{"throughput_server_mbps/competitor.c.goodput_mbps"},
			wantMD: []string{"| run | runs | throughput_server_mbps/competitor.c.goodput_mbps |", "| cwr-red | 3 | 2.00 ± 0.00 |"}},
		{name: "no metric", wantErr: "name the columns with --metric"},
		{name: "unknown metric", metrics: []string{"goodput_mbps"}, wantErr: "--metric goodput_mbps: no such metric"},
		{name: "unknown half of a ratio", metrics: []string{"throughput_server_mbps/x"}, wantErr: "--metric x: no such metric"},
		{name: "the wrong time of a source", metrics: []string{"s1.pooled_response_p99_ms"}, wantErr: "have a mct time, not response"},
		{name: "no such source", metrics: []string{"s9.pooled_mct_p99_ms"}, wantErr: "--source s9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := DefaultOptions()
			o.Metrics = tc.metrics
			tab, err := Tabulate("metrics", points, o)
			if tc.wantErr != "" {
				var ie *InputError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.As(err, &ie) {
					t.Fatalf("error %v, want an input error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md := tableText(t, tab, "md")
			for _, row := range tc.wantMD {
				if !strings.Contains(md, row+"\n") {
					t.Errorf("markdown lacks %q:\n%s", row, md)
				}
			}
			if csv := tableText(t, tab, "csv"); tc.wantCSV != "" && !strings.HasPrefix(csv, tc.wantCSV) {
				t.Errorf("csv:\n%s\nwant it to start with:\n%s", csv, tc.wantCSV)
			}
		})
	}
	if _, err := Draw("metrics", points, DefaultOptions()); err == nil || !strings.Contains(err.Error(), "is a table") {
		t.Errorf("drawing the metrics table: %v", err)
	}
}

// TestMetricsTableSaysHowManyRuns: a metric some runs lack (a competitor
// in two of the three) is the mean of those that have it, and the table
// says over how many: "(2 of 3 runs)" and the CSV's _n.
func TestMetricsTableSaysHowManyRuns(t *testing.T) {
	reps := threeReps()
	for _, i := range []int{0, 1, 3} { // cwr-red's first two, lowrtt's
		reps[i].competitors = []trafficgen.CompetitorSummary{{Name: "c", GoodputMbps: 10}}
	}
	o := DefaultOptions()
	o.Metrics = []string{"competitor.c.goodput_mbps"}
	tab, err := Tabulate("metrics", loadFixtures(t, reps...), o)
	if err != nil {
		t.Fatal(err)
	}
	if md := tableText(t, tab, "md"); !strings.Contains(md, "| cwr-red | 3 | 10.00 ± 0.00 (2 of 3 runs) |") {
		t.Errorf("markdown:\n%s", md)
	}
	if csv := tableText(t, tab, "csv"); !strings.Contains(csv, "cwr-red,3,10.000,10.000,10.000,2\n") {
		t.Errorf("csv:\n%s", csv)
	}
}
