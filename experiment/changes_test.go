package experiment

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const changesFile = `name = "changes"
duration = "30s"
[[path]]
rate = "50Mbit"
rtt = "60ms"
[[path.change]]
at = "10s"
down = true
[[path.change]]
at = "15s"
down = false
[[path]]
rate = "50Mbit"
rtt = "60ms"
[[path.change]]
at = "5s"
direction = "down"
rate = "10Mbit"
delay = "50ms"
loss = "1%"
jitter = "2ms"
queue = "2bdp"
[[path.change]]
at = "5s"
direction = "up"
queue = "64kB"
[[source]]
kind = "bulk"
`

func TestChanges(t *testing.T) {
	runs, err := Parse("c.toml", []byte(changesFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	if len(e.Paths[0].Changes) != 2 || len(e.Paths[1].Changes) != 2 {
		t.Fatalf("changes %+v %+v", e.Paths[0].Changes, e.Paths[1].Changes)
	}
	up, down := e.Paths[0].Steps()
	if len(up) != 2 || len(down) != 2 || !up[0].Down || up[0].At != 10*time.Second || up[1].Down || down[1].At != 15*time.Second {
		t.Errorf("path 0 steps %+v %+v", up, down)
	}
	if up[0].Link != e.Paths[0].Up {
		t.Errorf("down = true changed the link: %+v", up[0].Link)
	}
	up, down = e.Paths[1].Steps()
	want := Link{Rate: 10e6, Delay: 50 * time.Millisecond, Loss: 0.01, LossModel: "bernoulli", BurstLength: 1, QueueBDP: 2, Jitter: 2 * time.Millisecond}
	if len(down) != 1 || down[0].Link != want || down[0].RTT != 80*time.Millisecond {
		t.Errorf("path 1 down steps %+v, want %+v at RTT 80ms", down, want)
	}
	// Both changes at 5 s apply before the step's RTT is taken.
	if len(up) != 1 || up[0].Link.QueueBytes != 64000 || up[0].Link.QueueBDP != 0 || up[0].RTT != 80*time.Millisecond {
		t.Errorf("path 1 up steps %+v", up)
	}
	checkRoundTrip(t, e)
	// A sweep or --set reaches a change by its index within its path.
	o, _ := ParseOverride("path.1.change.0.rate=\"20Mbit\"")
	runs, err = Parse("c.toml", []byte(changesFile), []Override{o})
	if err != nil {
		t.Fatal(err)
	}
	if r := *runs[0].Paths[1].Changes[0].Rate; r != 20e6 {
		t.Errorf("override gives %v", r)
	}
}

func TestChangeErrors(t *testing.T) {
	base := "name = \"x\"\nduration = \"30s\"\n[[path]]\nrtt = \"20ms\"\n[[path]]\nrtt = \"20ms\"\n[[source]]\nkind = \"bulk\"\n"
	tests := []struct {
		name, change string
		want         string
	}{
		// The change's table is on line 7, its first key on line 8.
		{"missing at", "down = true", "c.toml:7: path.1.change.0.at: missing"},
		{"zero at", "at = 0\ndown = true", "c.toml:8: path.1.change.0.at: must be after the start"},
		{"at after the end", "at = \"30s\"\ndown = true", "c.toml:8: path.1.change.0.at: 30s is not before the end of the experiment (30s)"},
		{"sets nothing", "at = \"1s\"", "c.toml:8: path.1.change.0.at: the change sets nothing"},
		{"bad direction", "at = \"1s\"\ndown = true\ndirection = \"left\"", "c.toml:10: path.1.change.0.direction: \"left\" is not one of up, down"},
		{"unknown key", "at = \"1s\"\nbandwidth = \"1Mbit\"", "c.toml:9: path.1.change.0.bandwidth: unknown key"},
		{"bad rate", "at = \"1s\"\nrate = \"fast\"", "c.toml:9: path.1.change.0.rate: bad rate"},
		{"bad loss", "at = \"1s\"\nloss = \"120%\"", "c.toml:9: path.1.change.0.loss"},
		{"negative delay", "at = \"1s\"\ndelay = \"-1ms\"", "c.toml:9: path.1.change.0.delay"},
		{"bad queue", "at = \"1s\"\nqueue = \"0bdp\"", "c.toml:9: path.1.change.0.queue: bad queue"},
		{"down not a boolean", "at = \"1s\"\ndown = \"yes\"", "c.toml:9: path.1.change.0.down: want true or false"},
		{"out of order", "at = \"2s\"\ndown = true\n[[path.change]]\nat = \"1s\"\ndown = false", "c.toml:11: path.1.change.1.at: 1s is before the previous change's 2s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(base, "[[source]]", "[[path.change]]\n"+tc.change+"\n[[source]]", 1)
			_, err := Parse("c.toml", []byte(doc), nil)
			var es Errors
			var e *Error
			if err == nil || !errors.As(err, &es) && !errors.As(err, &e) {
				t.Fatalf("error %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n%v\ndoes not contain %q", err, tc.want)
			}
		})
	}
}

// A [[path.change]] before any [[path]] makes "path" a table, not an
// array of tables: the error names the change's line.
func TestChangeWithoutPath(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"no path at all", "name = \"x\"\nduration = \"30s\"\n\n[[path.change]]\nat = \"1s\"\ndown = true\n[[source]]\nkind = \"bulk\"\n",
			"c.toml:4: path: want [[path]] tables"},
		{"change before the paths", "name = \"x\"\n[[path.change]]\nat = \"1s\"\ndown = true\n[[source]]\nkind = \"bulk\"\n",
			"c.toml:2: path: want [[path]] tables"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.toml", []byte(tc.doc), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A path's changes are numbered within the path: the first change of the
// second path is path.1.change.0 whatever the first path has, and its
// errors name its own lines.
func TestChangeLinesPerPath(t *testing.T) {
	doc := "name = \"x\"\n[[path]]\n[[path.change]]\nat = \"1s\"\ndown = true\n[[path]]\n[[path.change]]\nat = \"1s\"\nrate = \"x\"\n[[source]]\nkind = \"bulk\"\n"
	_, err := Parse("c.toml", []byte(doc), nil)
	if err == nil || err.Error() != `c.toml:9: path.1.change.0.rate: bad rate "x" (want e.g. "100Mbit")` {
		t.Fatalf("error %v", err)
	}
}
