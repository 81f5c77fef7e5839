package trafficgen

import (
	"encoding/json"
	"testing"

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
