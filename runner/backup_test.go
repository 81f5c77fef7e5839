package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// TestBackupPath runs experiments/backup.toml in the simulator with every
// scheduler of its sweep: path 1, the shorter one, is marked backup = true
// and path 0 is down from 10 s to 15 s. While path 0 works (before 10 s and
// from 16 s on) the backup path must carry under 1 % of the server's
// stream bytes; while path 0 is down and found failed (10.5 s to 15 s) it
// must carry at least 90 % of them; every priority message must arrive. It
// logs the shares of docs/results/beyond-the-paper.md's "Backup paths" (go test
// ./runner/ -run TestBackupPath -v).
func TestBackupPath(t *testing.T) {
	if testing.Short() {
		t.Skip("eight 20 s simulated runs")
	}
	runs, err := experiment.Load("../experiments/backup.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 8 {
		t.Fatalf("%d runs, want one per scheduler", len(runs))
	}
	for i := range runs {
		e := &runs[i]
		t.Run(e.Transport.PathScheduler, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res, err := Run(context.Background(), e, dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range res.Summary.Paths {
				if p.ID == 1 && (p.Client == nil || p.Client.Status != "backup" || p.Server == nil || p.Server.PeerStatus != "backup") {
					t.Errorf("path 1's status: client %+v, server %+v; want the client's backup, sent to the server", p.Client, p.Server)
				}
			}
			src := res.Summary.Sources[0]
			if src.Failed != 0 || src.Completed != src.Messages {
				t.Errorf("%d of %d priority messages failed (%v)", src.Failed, src.Messages, src.Failures)
			}
			// The server's stream bytes per path while path 0 is up and
			// while it is down.
			var up, down [2]float64
			for _, r := range readCSV(t, filepath.Join(dir, "throughput.csv")) {
				at := num(t, r["time_ms"])
				if r["what"] != "sent" || r["sender"] != "server" {
					continue
				}
				id := int(num(t, r["path_id"]))
				switch {
				case at < 10000 || at >= 16000:
					up[id] += num(t, r["bytes"])
				case at >= 10500 && at < 15000:
					down[id] += num(t, r["bytes"])
				}
			}
			upShare := up[1] / (up[0] + up[1])
			downShare := down[1] / (down[0] + down[1])
			t.Logf("%s: the backup path carried %.3f %% of the server's stream bytes while path 0 was up (%.0f of %.0f), %.1f %% while it was down",
				e.Transport.PathScheduler, 100*upShare, up[1], up[0]+up[1], 100*downShare)
			if upShare >= 0.01 {
				t.Errorf("the backup path carried %.2f %% of the bytes while path 0 was up, want under 1 %%", 100*upShare)
			}
			if downShare < 0.9 {
				t.Errorf("the backup path carried %.1f %% of the bytes while path 0 was down, want at least 90 %%", 100*downShare)
			}
		})
	}
}

// TestReceiveWindowConfig: transport.receive_window fixes both ends'
// stream and connection windows; without it the core's defaults apply.
func TestReceiveWindowConfig(t *testing.T) {
	runs, err := experiment.Load("../experiments/heterogeneous.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	if c := coreConfig(&e); c.InitialConnWindow != 0 || c.MaxConnWindow != 0 || c.InitialStreamWindow != 0 || c.MaxStreamWindow != 0 {
		t.Fatalf("windows %+v without receive_window, want the core's defaults (0)", c)
	}
	e.Transport.ReceiveWindow = 200000
	c := coreConfig(&e)
	for _, w := range []uint64{c.InitialConnWindow, c.MaxConnWindow, c.InitialStreamWindow, c.MaxStreamWindow} {
		if w != 200000 {
			t.Fatalf("windows conn %d..%d, stream %d..%d; want 200000 each", c.InitialConnWindow, c.MaxConnWindow, c.InitialStreamWindow, c.MaxStreamWindow)
		}
	}
}

// TestInitialReceiveWindowConfig: transport.initial_receive_window sets
// where the windows start (the connection's at 1.5 times the stream's)
// and leaves their maxima to the core's defaults, so that they grow.
func TestInitialReceiveWindowConfig(t *testing.T) {
	runs, err := experiment.Load("../experiments/heterogeneous.toml", nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	e.Transport.InitialReceiveWindow = 32 << 10
	e.Transport.ConnWindowFollowsStream = true
	c := coreConfig(&e)
	if !c.ConnWindowFollowsStream {
		t.Fatal("conn_window_follows_stream did not reach the core's configuration")
	}
	if c.InitialStreamWindow != 32<<10 || c.InitialConnWindow != 48<<10 || c.MaxStreamWindow != 0 || c.MaxConnWindow != 0 {
		t.Fatalf("windows conn %d..%d, stream %d..%d; want 49152..default, 32768..default", c.InitialConnWindow, c.MaxConnWindow, c.InitialStreamWindow, c.MaxStreamWindow)
	}
}
