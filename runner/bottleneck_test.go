package runner

import (
	"context"
	"fmt"
	"testing"
)

const bottleneckRun = `name = "bn"
duration = "6s"
%s
[[path]]
rate = "20Mbit"
rtt = "30ms"
%s
[[path]]
rate = "20Mbit"
rtt = "30ms"
%s
[[source]]
name = "bg"
kind = "bulk"
`

// In the simulator two paths of 20 Mbit/s through a shared 10 Mbit/s
// bottleneck carry at most 10 Mbit/s between them (the goodput from 2 s
// on: 9 to 10 Mbit/s), where without it they carry about 40; the
// bottleneck's delay adds to the paths' round trip.
func TestSimBottleneck(t *testing.T) {
	shared := "[[bottleneck]]\nname = \"b\"\nrate = \"10Mbit\"\ndelay = \"10ms\""
	via := "bottleneck = \"b\""
	for _, tc := range []struct {
		name          string
		doc           string
		lo, hi, minRT float64
	}{
		{"shared", fmt.Sprintf(bottleneckRun, shared, via, via), 9, 10, 50},
		{"disjoint", fmt.Sprintf(bottleneckRun, "", "", ""), 35, 40, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, err := Run(context.Background(), load(t, tc.doc), dir)
			if err != nil {
				t.Fatal(err)
			}
			if m := meanMbps(deliveredMbps(t, dir), 2000, 6000); m < tc.lo || m > tc.hi {
				t.Errorf("goodput %.2f Mbit/s from 2 s on, want %v to %v", m, tc.lo, tc.hi)
			}
			for _, p := range res.Summary.Paths {
				if p.Server == nil || p.Server.MinRTTMS < tc.minRT || p.RTTMS != tc.minRT {
					t.Errorf("path %d: configured RTT %v ms, server %+v; want %v ms", p.ID, p.RTTMS, p.Server, tc.minRT)
				}
			}
		})
	}
}
