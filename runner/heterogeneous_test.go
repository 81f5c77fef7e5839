package runner

import (
	"context"
	"fmt"
	"testing"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/resultset"
)

// TestHeterogeneous runs experiments/heterogeneous.toml in the simulator
// for lowrtt, ecf and blest (1 MB downloads over 50 Mbit/s, 10 ms RTT
// and 5 Mbit/s, 100 ms RTT, 10 repetitions, both receive windows) and
// checks the criterion: ecf's and blest's mean completion time no
// worse than lowrtt's. "No worse" is on the means over the repetitions,
// with lowrtt's 95 % interval as the margin: ecf and blest are
// indistinguishable from lowrtt where the windows never bind (blest's
// rule then never waits), so their mean may sit within lowrtt's
// interval. It logs the numbers of docs/results/beyond-the-paper.md's "Heterogeneous
// paths: ECF and BLEST" (go test ./runner/ -run TestHeterogeneous
// -v).
func TestHeterogeneous(t *testing.T) {
	if testing.Short() {
		t.Skip("60 simulated runs of 60 s")
	}
	runs, err := experiment.Load("../experiments/heterogeneous.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Per receive window, per scheduler: each repetition's mean completion.
	means := map[int64]map[string][]float64{}
	for i := range runs {
		e := &runs[i]
		s := e.Transport.PathScheduler
		if s != "lowrtt" && s != "ecf" && s != "blest" {
			continue
		}
		res, err := Run(context.Background(), e, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		src := res.Summary.Sources[0]
		if src.Failed != 0 || src.Completed != src.Messages || src.Messages < 30 {
			t.Fatalf("%s window %d rep %d: %d of %d downloads completed, want all 30", s, e.Transport.ReceiveWindow, e.Repetition, src.Completed, src.Messages)
		}
		w := e.Transport.ReceiveWindow
		if means[w] == nil {
			means[w] = map[string][]float64{}
		}
		means[w][s] = append(means[w][s], float64(src.ResponseMS.Mean))
	}
	if len(means) != 2 {
		t.Fatalf("%d receive windows, want 2", len(means))
	}
	for w, by := range means {
		sum := map[string]resultset.Summary{}
		line := fmt.Sprintf("receive_window %d:", w)
		for _, s := range []string{"lowrtt", "ecf", "blest"} {
			if len(by[s]) != 10 {
				t.Fatalf("window %d: %d repetitions of %s, want 10", w, len(by[s]), s)
			}
			sum[s] = resultset.Summarise(by[s])
			line += fmt.Sprintf(" %s %.1f ms [%.1f, %.1f]", s, sum[s].Mean, sum[s].CI95[0], sum[s].CI95[1])
		}
		t.Log(line)
		for _, s := range []string{"ecf", "blest"} {
			if sum[s].Mean > sum["lowrtt"].CI95[1] {
				t.Errorf("window %d: %s's mean completion %.1f ms is above lowrtt's interval [%.1f, %.1f]", w, s, sum[s].Mean, sum["lowrtt"].CI95[0], sum["lowrtt"].CI95[1])
			}
		}
	}
}
