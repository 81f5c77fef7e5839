package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestCAStretches: the congestion avoidance stretches of paths.csv rows:
// from a row in that state to the next in another, the last one to the
// last row.
func TestCAStretches(t *testing.T) {
	rows := []PathState{
		{Time: 0, State: "slow_start"}, {Time: 10, State: "congestion_avoidance"}, {Time: 20, State: "congestion_avoidance"},
		{Time: 25, State: "recovery"}, {Time: 40, State: "congestion_avoidance"}, {Time: 55, State: "congestion_avoidance"},
	}
	got := caStretches(rows)
	if want := [][2]float64{{10, 25}, {40, 55}}; !slices.Equal(got, want) {
		t.Fatalf("stretches %v, want %v", got, want)
	}
}

// traceLines is a qlog trace of the server: stream 1 carries priority
// messages, stream 5 bulk data.
var traceLines = []string{
	`{"file_schema":"urn:ietf:params:qlog:file:sequential","trace":{"vantage_point":{"name":"mpquic","type":"server"}}}`,
	`{"time":10,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":0},"path_id":0,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":5,"offset":0,"raw":{"length":1300}}]}}`,
	`{"time":11,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":0},"path_id":1,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":1,"offset":0,"raw":{"length":1300}}]}}`,
	`{"time":11,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":1},"path_id":0,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":1,"offset":0,"raw":{"length":1300}}],"duplicate_of":{"path_id":1,"packet_number":0}}}`,
	`{"time":12,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":2},"path_id":0,"raw":{"length":60},"frames":[{"frame_type":"ack","ack_delay_raw":0,"acked_ranges":[[0,3]]}]}}`,
	`{"time":40,"name":"quic:packet_lost","data":{"header":{"packet_type":"1RTT","packet_number":0},"path_id":0,"trigger":"time_threshold"}}`,
	`{"time":41,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":3},"path_id":0,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":5,"offset":0,"raw":{"length":1300}}]}}`,
	`{"time":42,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":4},"path_id":0,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":5,"offset":1300,"raw":{"length":1300}}]}}`,
	`{"time":90,"name":"quic:packet_sent","data":{"header":{"packet_type":"1RTT","packet_number":5},"path_id":0,"raw":{"length":1350},"frames":[{"frame_type":"stream","stream_id":5,"offset":2600,"raw":{"length":1300}}]}}`,
}

func writeTrace(t *testing.T, dir string, lines []string) string {
	t.Helper()
	qd := filepath.Join(dir, "qlog")
	if err := os.MkdirAll(qd, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("\x1e" + l + "\n")
	}
	name := filepath.Join(qd, "abcd_server.sqlog")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestReadPackets: packets with stream data classed (bulk, priority,
// copy by duplicate_of, retransmission of data sent before), losses
// marked on the packet sent, ACK-only packets and packets outside the
// window left out.
func TestReadPackets(t *testing.T) {
	name := writeTrace(t, t.TempDir(), traceLines)
	got, err := readPackets(name, map[uint64]bool{1: true}, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	want := []packetMark{
		{T: 10, Path: 0, Class: classBulk, Lost: true},
		{T: 11, Path: 1, Class: classPriority, Priority: true},
		{T: 11, Path: 0, Class: classCopy, Priority: true},
		{T: 41, Path: 0, Class: classRetx},
		{T: 42, Path: 0, Class: classBulk},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("marks\n%+v\nwant\n%+v", got, want)
	}
}

// TestTimelineAndCwndDraw: the timeline finds the sender's trace and
// draws the lanes the packets need; cwnd draws one panel per path; both
// draw one run only.
func TestTimelineAndCwndDraw(t *testing.T) {
	dir := t.TempDir()
	paths := "0.000,server,0,13500,1350,,333,0,0,slow_start\n0.000,server,1,13500,0,,333,0,0,slow_start\n" +
		"50.000,server,0,20000,9000,,50,50,50,congestion_avoidance\n80.000,server,1,15000,4000,,50,50,50,congestion_avoidance\n"
	rd := writeFixture(t, dir, fixture{sched: "cwr-red", times: []float64{25.8, 60}, growth: [2]float64{1, 1}, paths: paths})
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLabels(points, nil); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	if _, err := TimelineFigure(points, o); err == nil || !strings.Contains(err.Error(), "output.qlog=true") {
		t.Fatalf("timeline without a trace: %v", err)
	}
	writeTrace(t, rd, traceLines)
	o.From, o.To = 0, 200
	f, err := TimelineFigure(points, o)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := f.Write(&svg, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"p0 bulk", "p0 copy", "p0 retx", "p1 prio", "messages", "25.8 ms", "time (ms)"} {
		if !strings.Contains(svg.String(), s) {
			t.Errorf("timeline lacks %q", s)
		}
	}
	if strings.Contains(svg.String(), "p1 bulk") {
		t.Error("timeline has a lane without packets")
	}
	c, err := CwndFigure(points, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plots) != 2 {
		t.Fatalf("%d cwnd panels, want one per path", len(c.Plots))
	}
	two := loadFixtures(t, fixture{sched: "cwr", times: []float64{1}}, fixture{rep: 1, sched: "cwr", times: []float64{1}})
	for _, draw := range []func([]*Point, Options) (*Figure, error){CwndFigure, TimelineFigure} {
		if _, err := draw(two, o); err == nil || !strings.Contains(err.Error(), "draws one run, and 2 are selected") {
			t.Errorf("two runs: %v", err)
		}
	}
}

// TestTimelineWindow: by default the window goes from one RTT of the
// fastest path before the slowest message to half of one after its
// delivery; a failed message is the slowest.
func TestTimelineWindow(t *testing.T) {
	points := loadFixtures(t, fixture{sched: "cwr", times: []float64{25, 80, 30}})
	r := points[0].Runs[0]
	msgs, _ := r.Messages()
	from, to := timelineWindow(r.Summary, "periodic", msgs, DefaultOptions())
	// The second message, created at 150 ms, took 80 ms; RTT 50 ms.
	if from != 100 || to != 255 {
		t.Fatalf("window [%v, %v], want [100, 255]", from, to)
	}
	msgs[0].MCT = inf
	if from, to = timelineWindow(r.Summary, "periodic", msgs, DefaultOptions()); from != 50 || to != 600 {
		t.Fatalf("window with a failed message [%v, %v], want [50, 600]", from, to)
	}
}

// TestClash: a message's time label is moved when a marker of the row
// above reaches into it (issue 37: labels overlapped markers).
func TestClash(t *testing.T) {
	r := vg.Points(markerRadius)
	box := func(x0, x1, y0, y1 float64) [4]vg.Length {
		return [4]vg.Length{vg.Length(x0), vg.Length(x1), vg.Length(y0), vg.Length(y1)}
	}
	for _, c := range []struct {
		name string
		pts  []vg.Point
		box  [4]vg.Length
		want bool
	}{
		{"none", nil, box(0, 10, 0, 5), false},
		{"inside", []vg.Point{{X: 5, Y: 2}}, box(0, 10, 0, 5), true},
		{"a radius right of it", []vg.Point{{X: 10 + r - 0.01, Y: 2}}, box(0, 10, 0, 5), true},
		{"beyond the radius", []vg.Point{{X: 10 + r + 0.01, Y: 2}}, box(0, 10, 0, 5), false},
		{"above it", []vg.Point{{X: 5, Y: 5 + r + 1}}, box(0, 10, 0, 5), false},
	} {
		if got := clash(c.pts, c.box[0], c.box[1], c.box[2], c.box[3]); got != c.want {
			t.Errorf("%s: clash = %v, want %v", c.name, got, c.want)
		}
	}
}
