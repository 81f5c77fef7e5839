package runner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// The offset between two measurements is interpolated in time: a clock
// that drifts at a steady rate is followed.
func TestServerToClientDrift(t *testing.T) {
	at := time.Unix(1000, 0)
	c := &ClockReport{Start: ClockSample{OffsetMS: -40, At: at}, End: ClockSample{OffsetMS: -41.2, At: at.Add(60 * time.Second)}}
	to := serverToClient(c)
	for _, tc := range []struct {
		client time.Duration // since Start.At
		offMS  float64
	}{{0, -40}, {30 * time.Second, -40.6}, {60 * time.Second, -41.2}} {
		want := at.Add(tc.client)
		server := want.Add(time.Duration(tc.offMS * float64(time.Millisecond)))
		if d := to(server).Sub(want); d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("%v after the start: off by %v", tc.client, d)
		}
	}
	if !to(time.Time{}).IsZero() {
		t.Error("a zero time moved")
	}
}

// skewServer puts the server's half in dir on a clock d ahead of the one
// it ran on, as a server whose clock is d ahead of the client's would
// have written it, and the client's measurement of it in its role.json.
func skewServer(t *testing.T, cdir, sdir string, d time.Duration) {
	t.Helper()
	sh, si, err := readHalf(sdir)
	if err != nil {
		t.Fatal(err)
	}
	shift := func(x *time.Time) {
		if !x.IsZero() {
			*x = x.Add(d)
		}
	}
	shift(&sh.Start)
	shift(&sh.ConnectStart)
	for _, m := range sh.Messages {
		if trafficgen.SenderSide(m.Kind) == "server" {
			shift(&m.Created)
			shift(&m.Due)
		}
		for _, x := range []*time.Time{&m.Started, &m.Written, &m.Delivered, &m.Replied} {
			shift(x)
		}
	}
	for i := range sh.Samples {
		shift(&sh.Samples[i].At)
	}
	if err := writeHalf(sdir, sh, si); err != nil {
		t.Fatal(err)
	}
	ch, ci, err := readHalf(cdir)
	if err != nil {
		t.Fatal(err)
	}
	ci.Clock.Start.OffsetMS += float64(d) / 1e6
	ci.Clock.End.OffsetMS += float64(d) / 1e6
	if err := writeHalf(cdir, ch, ci); err != nil {
		t.Fatal(err)
	}
}

// mergeP50 merges the halves with opt and returns each source's MCT p50.
func mergeP50(t *testing.T, e *experiment.Experiment, cdir, sdir string, opt MergeOptions) map[string]float64 {
	t.Helper()
	out := t.TempDir()
	res, err := MergeWith(e, cdir, sdir, out, opt)
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]float64{}
	for _, s := range res.Summary.Sources {
		if s.MCTMS != nil {
			p[s.Name] = float64(s.MCTMS.P50)
		}
	}
	if opt.CorrectClock {
		b, err := os.ReadFile(filepath.Join(out, "clock.json"))
		if err != nil || !strings.Contains(string(b), `"corrected": true`) {
			t.Errorf("clock.json does not say it was corrected: %s %v", b, err)
		}
	}
	return p
}

// A server whose clock is 40 ms behind the client's makes the messages
// it sends 40 ms longer (and those the client sends 40 ms shorter); mpq
// merge --correct-clock (MergeOptions.CorrectClock) takes the offset the
// client measured out again.
func TestMergeCorrectsClock(t *testing.T) {
	e := load(t, rolesDoc)
	_, _, cdir, sdir, _ := runRoles(t, e)
	want := mergeP50(t, e, cdir, sdir, MergeOptions{})
	const skew = -40 * time.Millisecond
	skewServer(t, cdir, sdir, skew)
	raw := mergeP50(t, e, cdir, sdir, MergeOptions{})
	got := mergeP50(t, e, cdir, sdir, MergeOptions{CorrectClock: true})
	if len(want) == 0 {
		t.Fatal("no completion times")
	}
	for name, w := range want {
		t.Logf("%s: p50 %.3f ms synchronised, %.3f with the server 40 ms behind, %.3f corrected", name, w, raw[name], got[name])
		if math.Abs(got[name]-w) > 0.01 {
			t.Errorf("%s: corrected p50 %.3f ms, want %.3f", name, got[name], w)
		}
	}
	// prio is sent by the server: 40 ms longer uncorrected.
	if w := want["prio"]; math.Abs(raw["prio"]-(w+40)) > 0.01 {
		t.Errorf("prio uncorrected: p50 %.3f ms, want %.3f", raw["prio"], w+40)
	}
}
