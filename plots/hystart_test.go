package plots

import (
	"slices"
	"strings"
	"testing"
)

// hyStartLines is a server trace with HyStart++ steps (as mpquic logs
// them), a state change, and metrics and packets that are neither.
var hyStartLines = []string{
	`{"file_schema":"urn:ietf:params:qlog:file:sequential","trace":{"vantage_point":{"name":"mpquic","type":"server"}}}`,
	`{"time":90.6,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":14700,"bytes_in_flight":0,"smoothed_rtt":60,"rtt_variance":30,"hystart_step":"round_ended","hystart_round_samples":0,"hystart_css":false}}`,
	`{"time":100,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":16000,"bytes_in_flight":1350,"smoothed_rtt":60,"rtt_variance":30}}`,
	`{"time":151.25,"name":"quic:recovery_metrics_updated","data":{"path_id":1,"congestion_window":17150,"bytes_in_flight":2700,"smoothed_rtt":60,"rtt_variance":30,"min_rtt":60.41,"hystart_step":"round_ended","hystart_round_min_rtt":60.414,"hystart_round_samples":3,"hystart_threshold":67.96,"hystart_css":false}}`,
	`{"time":200,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":9},"path_id":0,"raw":{"length":1350},"frames":[]}}`,
	`{"time":476,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":615900,"bytes_in_flight":600000,"smoothed_rtt":66,"rtt_variance":3,"hystart_step":"css_entered","hystart_round_min_rtt":69.944,"hystart_round_samples":8,"hystart_threshold":69.944,"hystart_css":true}}`,
	`{"time":526,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":669049,"bytes_in_flight":600000,"smoothed_rtt":66,"rtt_variance":3,"hystart_step":"css_left","hystart_round_min_rtt":60.22,"hystart_round_samples":87,"hystart_css":false}}`,
	`{"time":600,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":700000,"bytes_in_flight":690000,"smoothed_rtt":66,"rtt_variance":3}}`,
	`{"time":650,"name":"quic:recovery_metrics_updated","data":{"path_id":1,"congestion_window":90000,"bytes_in_flight":0,"smoothed_rtt":66,"rtt_variance":3}}`,
	`{"time":689,"name":"quic:congestion_state_updated","data":{"path_id":0,"old":"slow_start","new":"recovery"}}`,
	`{"time":689,"name":"quic:recovery_metrics_updated","data":{"path_id":0,"congestion_window":350000,"bytes_in_flight":690000,"smoothed_rtt":66,"rtt_variance":3}}`,
}

// TestHyStartTable: every HyStart++ step and state change of the trace
// in its order, times in s with three decimals, RTTs with two, windows
// in kB with one (a state change's the path's last before it), absent
// fields empty; metrics without a step and packets left out; --from/--to bound the rows; a trace without steps,
// and a run without a trace, are errors that say what is missing.
func TestHyStartTable(t *testing.T) {
	dir := t.TempDir()
	rd := writeFixture(t, dir, fixture{sched: "lowrtt", times: []float64{1}})
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	if _, err := HyStartTable(points, o); err == nil || !strings.Contains(err.Error(), "output.qlog=true") {
		t.Fatalf("no trace: %v", err)
	}
	writeTrace(t, rd, hyStartLines[:3])
	if _, err := HyStartTable(points, o); err != nil {
		t.Fatalf("one step: %v", err)
	}
	writeTrace(t, rd, []string{hyStartLines[0], hyStartLines[2], hyStartLines[9]})
	if _, err := HyStartTable(points, o); err == nil || !strings.Contains(err.Error(), "no HyStart++ steps") {
		t.Fatalf("no steps: %v", err)
	}
	writeTrace(t, rd, hyStartLines)
	tab, err := Tabulate("hystart", points, o)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"time_s", "path", "event", "round_min_rtt_ms", "samples", "threshold_ms", "cwnd_kB", "css"},
		{"0.091", "0", "round_ended", "", "0", "", "14.7", "false"},
		{"0.151", "1", "round_ended", "60.41", "3", "67.96", "17.1", "false"},
		{"0.476", "0", "css_entered", "69.94", "8", "69.94", "615.9", "true"},
		{"0.526", "0", "css_left", "60.22", "87", "", "669.0", "false"},
		{"0.689", "0", "state slow_start -> recovery", "", "", "", "700.0", ""},
	}
	if len(tab.MD) != len(want) {
		t.Fatalf("%d rows, want %d:\n%v", len(tab.MD), len(want), tab.MD)
	}
	for i := range want {
		if !slices.Equal(tab.MD[i], want[i]) || !slices.Equal(tab.CSV[i], want[i]) {
			t.Errorf("row %d: md %q csv %q, want %q", i, tab.MD[i], tab.CSV[i], want[i])
		}
	}
	o.From, o.To = 150, 500
	tab, err = HyStartTable(points, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.MD) != 3 || tab.MD[1][0] != "0.151" || tab.MD[2][0] != "0.476" {
		t.Errorf("rows from 150 to 500 ms: %v", tab.MD)
	}
}
