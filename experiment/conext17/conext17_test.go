package conext17

import (
	"bytes"
	"github.com/mpq/mpq/mpquic/congestion"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// TestQueuePackets: hand-computed queues. 51.83 Mbit/s over 2 x 10.5 ms
// is 136,053.75 bytes, 90.7 packets: 91. 0.14 Mbit/s over 2 x 13.6 ms is
// 476 bytes: the floor of 10. 12 Mbit/s over 2 x 10 ms is 30,000 bytes,
// exactly 20 packets (not 21).
func TestQueuePackets(t *testing.T) {
	for _, tc := range []struct {
		p    PathSpec
		want int
	}{
		{PathSpec{BandwidthMbps: 51.83, DelayMS: 10.5}, 91},
		{PathSpec{BandwidthMbps: 0.14, DelayMS: 13.6}, 10},
		{PathSpec{BandwidthMbps: 12, DelayMS: 10}, 20},
		{PathSpec{BandwidthMbps: 99.94, DelayMS: 0}, 10},
		{PathSpec{BandwidthMbps: 45.38, DelayMS: 13.3}, 101},
	} {
		if got := QueuePackets(tc.p); got != tc.want {
			t.Errorf("%+v: %d packets, want %d", tc.p, got, tc.want)
		}
	}
}

func TestRead(t *testing.T) {
	good := `{"class":"c","file_size_kb":256,"repetitions":3,"scenarios":[
[{"bandwidth_mbps":1,"delay_ms":2,"queuing_delay":0.1,"loss_pct":0},{"bandwidth_mbps":3,"delay_ms":4,"queuing_delay":0.1,"loss_pct":1}],
[{"bandwidth_mbps":3,"delay_ms":4,"queuing_delay":0.1,"loss_pct":1},{"bandwidth_mbps":1,"delay_ms":2,"queuing_delay":0.1,"loss_pct":0}]]}`
	if _, err := Read(strings.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]string{
		"not swapped":   strings.Replace(good, `"delay_ms":4,"queuing_delay":0.1,"loss_pct":1},{"bandwidth_mbps":1`, `"delay_ms":5,"queuing_delay":0.1,"loss_pct":1},{"bandwidth_mbps":1`, 1),
		"unknown field": strings.Replace(good, `"class"`, `"klass":1,"class"`, 1),
		"zero rate":     strings.Replace(good, `"bandwidth_mbps":1,`, `"bandwidth_mbps":0,`, 1),
		"odd entries":   strings.Replace(good, "]]}", "],[{\"bandwidth_mbps\":1,\"delay_ms\":2},{\"bandwidth_mbps\":1,\"delay_ms\":2}]]}", 1),
		"no size":       strings.Replace(good, `"file_size_kb":256`, `"file_size_kb":0`, 1),
		"syntax":        good[:40],
	} {
		if _, err := Read(strings.NewReader(bad)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestFilesCommitted: experiments/conext17/*.toml are the generator's
// output for the committed data, and each loads as 253 scenarios x 2
// orders x 2 modes, with the links the data say.
func TestFilesCommitted(t *testing.T) {
	dir := filepath.Join("..", "..", "experiments", "conext17")
	for _, c := range Classes {
		f, err := os.Open(filepath.Join(dir, "data", c+".json"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := Read(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Join(dir, c+".toml")
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, Experiment(d, "experiments/conext17/data/"+c+".json")) {
			t.Errorf("%s differs from the generator's output: go run ./experiment/conext17/gen experiments/conext17", name)
		}
		mname := filepath.Join(dir+"-mpquic", c+".toml")
		mgot, err := os.ReadFile(mname)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mgot, VariantExperiment(d, "experiments/conext17/data/"+c+".json", MPQUIC)) {
			t.Errorf("%s differs from the generator's output: go run ./experiment/conext17/gen experiments/conext17", mname)
		}
		mruns, err := experiment.Load(mname, []experiment.Override{{Key: "repeat", Value: int64(1), Origin: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		want := congestion.Readings{InitialWindow: 32, EmulatedConnections: 2, LossReduction: 0.7, CwndLimited: true, RTOCollapse: true}
		wantSingle, wantMulti := want, want
		wantSingle.CubicTarget = true
		wantMulti.OLIABestOverflow = true
		if len(mruns) != 2*len(d.Scenarios) || mruns[11].Transport.CongestionReadings != wantMulti || mruns[10].Transport.CongestionReadings != wantSingle ||
			mruns[11].Transport.Congestion != "olia" || mruns[10].Transport.Congestion != "cubic" || mruns[0].Name != "conext17-mpquic-"+c {
			t.Fatalf("%s: %d runs, run 11 %+v", mname, len(mruns), mruns[11].Transport)
		}
		for _, r := range mruns[10:12] {
			if r.Transport.InitialReceiveWindow != 32<<10 || !r.Transport.ConnWindowFollowsStream {
				t.Fatalf("%s: receive windows %d (following the stream's: %v), want MPQUIC's 32 KiB, following", mname, r.Transport.InitialReceiveWindow, r.Transport.ConnWindowFollowsStream)
			}
		}
		runs, err := experiment.Load(name, []experiment.Override{{Key: "repeat", Value: int64(1), Origin: "test"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2*len(d.Scenarios) || len(d.Scenarios) != 506 {
			t.Fatalf("%s: %d runs of %d entries", c, len(runs), len(d.Scenarios))
		}
		// Entry 5 (s003b) in its multipath mode, and in its single
		// path mode.
		single, multi := runs[10], runs[11]
		p := d.Scenarios[5]
		if strings.Join(multi.Label, ",") != "scenario=s003b,mode=multi" || multi.Transport.Congestion != "olia" || !multi.Transport.Multipath ||
			single.Transport.Congestion != "cubic" || single.Transport.Multipath {
			t.Fatalf("%s: runs 10, 11: %v %+v / %v %+v", c, single.Label, single.Transport, multi.Label, multi.Transport)
		}
		for i, path := range multi.Paths {
			for _, l := range []experiment.Link{path.Up, path.Down} {
				if l.Rate != p[i].BandwidthMbps*1e6 || math.Abs(l.Delay.Seconds()*1e3-p[i].DelayMS) > 1e-9 || math.Abs(l.Loss-p[i].LossPct/100) > 1e-12 ||
					l.QueueLimit(path.RTT()) != int64(1500*QueuePackets(p[i])) {
					t.Fatalf("%s s003b path %d: %+v, want %+v", c, i, l, p[i])
				}
			}
		}
		if s := multi.Sources[0]; s.Kind != experiment.KindFile || s.Size != int64(d.FileSizeKB)*1024 || s.Count != 1 {
			t.Fatalf("%s: source %+v", c, s)
		}
	}
}
