package scheduler_test

import (
	"testing"
	"time"
)

// builtinPathSchedulers are the path schedulers this package registers.
var builtinPathSchedulers = []string{"lowrtt", "round-robin", "ecf", "blest", "sr", "redundant", "cwr", "cwr-red"}

// TestBackupStatusFromPeer drives every built-in path scheduler on the
// server of the real core: path 1 is the shorter path (10 ms one way
// against 30 ms), so every scheduler would use it. The client marks it
// backup (PATH_STATUS_BACKUP) at 0 and available again
// (PATH_STATUS_AVAILABLE) at 1 s, while the server sends bulk data and a
// priority message every 50 ms. From 50 ms (the frame's one-way delay and
// margin) to 1 s no stream byte may go on path 1; from 1.05 s to 2 s path
// 1 must carry at least a fifth of them.
func TestBackupStatusFromPeer(t *testing.T) {
	for _, sched := range builtinPathSchedulers {
		t.Run(sched, func(t *testing.T) {
			r := newRig(t, sched, rigPath{delay: 30 * ms, window: 40 * mps}, rigPath{delay: 10 * ms, window: 40 * mps})
			status := func(backup bool) {
				if err := r.client.SetPathStatus(1, backup); err != nil {
					t.Fatal(err)
				}
				r.client.Kick()
			}
			r.at(0, func() { status(true) })
			r.at(1*time.Second, func() { status(false) })
			r.at(20*ms, func() { r.background(1 << 30) })
			for at := 20 * ms; at < 2*time.Second; at += 50 * ms {
				r.at(at, func() { r.message(10_000, true) })
			}
			r.run(2 * time.Second)
			var backup, available [2]int
			for _, s := range r.sends {
				switch {
				case s.at >= 50*ms && s.at < time.Second:
					backup[s.path] += s.bytes
				case s.at >= 1050*ms:
					available[s.path] += s.bytes
				}
			}
			share := float64(available[1]) / float64(available[0]+available[1])
			t.Logf("%s: stream bytes on path 0, 1: %v while path 1 was a backup, %v after it was available again (%.0f %% on path 1)",
				sched, backup, available, 100*share)
			if backup[1] != 0 || backup[0] == 0 {
				t.Errorf("stream bytes on paths 0, 1 while path 1 was a backup: %v, want some on path 0 and none on path 1", backup)
			}
			if share < 0.2 {
				t.Errorf("path 1 carried %.0f %% of the stream bytes after PATH_STATUS_AVAILABLE, want at least 20 %%", 100*share)
			}
		})
	}
}
