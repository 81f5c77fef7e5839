package trafficgen

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// summary.json lists every scheduled change with the values it set, in
// the units of the summary, and nothing it left alone.
func TestLinkChangesSummary(t *testing.T) {
	runs, err := experiment.Parse("c.toml", []byte(`name = "c"
duration = "30s"
[[path]]
[[path.change]]
at = "10s"
down = true
[[path]]
[[path.change]]
at = "2.5s"
direction = "up"
rate = "20Mbit"
delay = "12.5ms"
loss = "1%"
queue = "2bdp"
[[source]]
kind = "bulk"
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(LinkChanges(&runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"path":0,"at_s":10,"direction":"both","down":true},` +
		`{"path":1,"at_s":2.5,"direction":"up","rate_mbps":20,"delay_ms":12.5,"loss":0.01,"queue_bdp":2}]`
	if string(js) != want {
		t.Errorf("got  %s\nwant %s", js, want)
	}
	runs[0].Paths[0].Changes, runs[0].Paths[1].Changes = nil, nil
	if c := LinkChanges(&runs[0]); c != nil {
		t.Errorf("no changes gives %v", c)
	}
}

// A competitor's rates are its bytes over the time it was active in the
// window, by hand: active from 2 s to its stop at 6 s of an 8 s run, 1 MB
// read and 1.25 MB sent: 1e6 x 8 / 4 s = 2 Mbit/s of goodput, 2.5 of
// throughput. Without a stop it is active to the end: 6 s.
func TestSummariseCompetitor(t *testing.T) {
	rec := NewRecorder(RecorderConfig{Start: time.Unix(0, 0), Duration: 8 * time.Second, Interval: 100 * time.Millisecond})
	rec.gotWin["server"] = &[2]uint64{0, 1_000_000}
	rec.sentWin["server"] = map[uint64]*[2]uint64{0: {0, 1_000_000}, 1: {250_000, 0}}
	c := experiment.Competitor{Name: "reno", Path: 1, Congestion: "newreno", Start: 2 * time.Second, Stop: 6 * time.Second}
	s := SummariseCompetitor(c, 8*time.Second, rec)
	if s.Name != "reno" || s.Path != 1 || s.Congestion != "newreno" || s.ActiveS != 4 || s.GoodputMbps != 2 || s.ThroughputMbps != 2.5 {
		t.Errorf("summary %+v", s)
	}
	c.Stop = 0
	if s := SummariseCompetitor(c, 8*time.Second, rec); s.ActiveS != 6 || s.GoodputMbps != 1.333 {
		t.Errorf("without a stop: %+v", s)
	}
}
