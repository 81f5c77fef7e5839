package experiment

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const competitorFile = `name = "c"
duration = "30s"
[[path]]
rtt = "40ms"
[[path]]
rtt = "60ms"
[[competitor]]
name = "reno"
path = 1
start = "5s"
stop = "20s"
[[competitor]]
path = 0
[[source]]
name = "bg"
kind = "bulk"
`

func TestCompetitors(t *testing.T) {
	runs, err := Parse("c.toml", []byte(competitorFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	want := []Competitor{{Name: "reno", Path: 1, Congestion: "newreno", Start: 5 * time.Second, Stop: 20 * time.Second},
		{Name: "competitor1", Path: 0, Congestion: "newreno"}}
	if !reflect.DeepEqual(e.Competitors, want) {
		t.Fatalf("competitors %+v", e.Competitors)
	}
	if a := e.Competitors[0].Active(e.Duration); a != 15*time.Second {
		t.Errorf("active %v", a)
	}
	if a := e.Competitors[1].Active(e.Duration); a != 30*time.Second {
		t.Errorf("active %v", a)
	}
	ce := e.CompetitorExperiment(0)
	if len(ce.Paths) != 1 || ce.Paths[0].RTT() != 60*time.Millisecond || ce.Transport.Multipath || ce.Transport.Congestion != "newreno" ||
		len(ce.Sources) != 1 || ce.Sources[0].Kind != KindBulk || ce.Sources[0].Name != "reno" || ce.Sources[0].Start != 5*time.Second || ce.Duration != e.Duration {
		t.Errorf("competitor experiment %+v", ce)
	}
	checkRoundTrip(t, e)
}

func TestCompetitorErrors(t *testing.T) {
	tests := []struct{ name, from, to, want string }{
		{"no path", "path = 1\n", "", "c.toml:7: competitor.0.path: missing"},
		{"path out of range", "path = 1", "path = 2", "c.toml:9: competitor.0.path: 2 outside [0, 1]"},
		{"unknown controller", "path = 1", "path = 1\ncongestion = \"vegas\"", `c.toml:10: competitor.0.congestion: unknown congestion controller "vegas"`},
		{"start after the end", `start = "5s"`, `start = "30s"`, "c.toml:10: competitor.0.start: 30s is not before the end"},
		{"stop before start", `stop = "20s"`, `stop = "5s"`, "c.toml:11: competitor.0.stop: 5s is not after start 5s"},
		{"a source's name", `name = "reno"`, `name = "bg"`, `c.toml:8: competitor.0.name: name "bg" is another competitor's or a source's`},
		{"unknown key", `stop = "20s"`, `size = "1MB"`, "c.toml:11: competitor.0.size: unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.toml", []byte(strings.Replace(competitorFile, tc.from, tc.to, 1)), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n%v\ndoes not contain %q", err, tc.want)
			}
		})
	}
}
