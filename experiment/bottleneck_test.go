package experiment

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const bottleneckFile = `name = "bn"
[[bottleneck]]
name = "shared"
rate = "20Mbit"
delay = "5ms"
loss = "0.1%"
queue_bdp = 0.5
[[bottleneck]]
name = "other"
rate = "10Mbit"
queue = "64kB"
[[path]]
rtt = "40ms"
bottleneck = "shared"
[[path]]
rtt = "60ms"
bottleneck = "shared"
[[path]]
rtt = "10ms"
[[source]]
kind = "bulk"
`

func TestBottlenecks(t *testing.T) {
	runs, err := Parse("b.toml", []byte(bottleneckFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	if len(e.Bottlenecks) != 2 {
		t.Fatalf("bottlenecks %+v", e.Bottlenecks)
	}
	b := e.Bottlenecks[0]
	want := Link{Rate: 20e6, Delay: 5 * time.Millisecond, Loss: 0.001, LossModel: "bernoulli", BurstLength: 1, QueueBDP: 0.5}
	if b.Name != "shared" || b.Link != want {
		t.Errorf("bottleneck %+v, want %+v", b, want)
	}
	// The paths' RTTs include the bottleneck both ways; its BDP is of the
	// largest: 60 + 10 ms.
	if r := e.Paths[0].RTT(); r != 50*time.Millisecond {
		t.Errorf("path 0 RTT %v, want 50ms", r)
	}
	if b.RTT != 70*time.Millisecond {
		t.Errorf("bottleneck RTT %v, want 70ms", b.RTT)
	}
	if e.Bottlenecks[1].Link.QueueBytes != 64000 || e.Bottlenecks[1].RTT != 0 {
		t.Errorf("unused bottleneck %+v", e.Bottlenecks[1])
	}
	if e.BottleneckOf(1) != &e.Bottlenecks[0] || e.BottleneckOf(2) != nil {
		t.Error("BottleneckOf")
	}
	again, err := Parse("resolved.toml", e.ResolvedTOML(), nil)
	if err != nil {
		t.Fatalf("resolved file does not parse: %v\n%s", err, e.ResolvedTOML())
	}
	a := again[0]
	a.File, e.File = "", ""
	if !reflect.DeepEqual(a, e) {
		t.Fatalf("round trip differs:\n%+v\n%+v\n%s", a, e, e.ResolvedTOML())
	}
}

func TestBottleneckErrors(t *testing.T) {
	tests := []struct{ name, from, to, want string }{
		{"unknown name", `bottleneck = "shared"` + "\n[[path]]\nrtt = \"60ms\"\nbottleneck = \"shared\"", `bottleneck = "shared"` + "\n[[path]]\nrtt = \"60ms\"\nbottleneck = \"sharde\"",
			`b.toml:17: path.1.bottleneck: unknown bottleneck "sharde" (known: "other", "shared")`},
		{"name twice", `name = "other"`, `name = "shared"`, `b.toml:9: bottleneck.1.name: bottleneck name "shared" used twice`},
		{"no name", `name = "other"`, `label = "other"`, `bottleneck.1.name: missing`},
		{"no rate", "rate = \"10Mbit\"\n", "", `bottleneck.1.rate: missing`},
		{"zero rate", `rate = "10Mbit"`, `rate = 0`, `b.toml:10: bottleneck.1.rate: must be positive`},
		{"both queues", `queue = "64kB"`, "queue = \"64kB\"\nqueue_bdp = 1", `bottleneck.1.queue_bdp: give either queue or queue_bdp`},
		{"bad queue_bdp", `queue = "64kB"`, "queue_bdp = -1", `b.toml:11: bottleneck.1.queue_bdp: -1 is not a positive multiple`},
		{"unknown key", `queue = "64kB"`, "jitter = \"1ms\"", `b.toml:11: bottleneck.1.jitter: unknown key`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(bottleneckFile, tc.from, tc.to, 1)
			_, err := Parse("b.toml", []byte(doc), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error\n%v\ndoes not contain %q", err, tc.want)
			}
		})
	}
}
