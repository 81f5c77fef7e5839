package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// networkFile has what the netns backend builds in the forwarder beyond
// independent paths: a bottleneck both paths share, path 0 down from 2 to
// 4 s, and a competitor on path 1.
const networkFile = `name = "netns-network"
duration = "6s"
seed = 2
[[bottleneck]]
name = "b"
rate = "20Mbit"
[[path]]
rate = "50Mbit"
rtt = "40ms"
bottleneck = "b"
[[path.change]]
at = "2s"
down = true
[[path.change]]
at = "4s"
down = false
[[path]]
rate = "50Mbit"
rtt = "40ms"
bottleneck = "b"
[[competitor]]
name = "reno"
path = 1
[[source]]
name = "bg"
kind = "bulk"
`

// A netns run applies the scheduled change (the forwarder drops path 0's
// packets as down: it learnt the run's start from the client), passes
// both paths through the shared bottleneck, and runs the competitor beside
// the connection, reporting its goodput and how far its time zero was
// from the connection's.
func TestNetnsNetwork(t *testing.T) {
	needRoot(t)
	t.Setenv("MPQ_TEST_AS_MPQ", "1")
	dir := t.TempDir()
	file := writeFile(t, dir, "network.toml", networkFile)
	code, stdout, stderr := runCmd(t, "run", file, "--backend", "netns", "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("netns run: exit %d\n%s%s", code, stdout, stderr)
	}
	t.Log(strings.TrimSpace(stdout))
	m, _ := filepath.Glob(filepath.Join(dir, "out", "netns-network", "*", "summary.json"))
	if len(m) != 1 {
		t.Fatalf("runs: %v", m)
	}
	run := filepath.Dir(m[0])
	var sum struct {
		Competitors []struct {
			Name          string   `json:"name"`
			GoodputMbps   float64  `json:"goodput_mbps"`
			StartOffsetMS *float64 `json:"start_offset_ms"`
			Problems      []string `json:"problems"`
		} `json:"competitors"`
		LinkChanges []struct{} `json:"link_changes"`
	}
	readJSON(t, filepath.Join(run, "summary.json"), &sum)
	if len(sum.Competitors) != 1 || sum.Competitors[0].GoodputMbps < 1 || sum.Competitors[0].StartOffsetMS == nil || len(sum.Competitors[0].Problems) > 0 {
		t.Errorf("competitors %+v", sum.Competitors)
	} else {
		t.Logf("competitor %+v, start offset %v ms", sum.Competitors[0], *sum.Competitors[0].StartOffsetMS)
	}
	if len(sum.LinkChanges) != 2 {
		t.Errorf("%d link changes", len(sum.LinkChanges))
	}
	type link struct {
		Delivered   uint64 `json:"delivered"`
		DroppedDown uint64 `json:"dropped_down"`
	}
	var emu []struct {
		Path       *int   `json:"path"`
		Bottleneck string `json:"bottleneck"`
		Up, Down   link
	}
	readJSON(t, filepath.Join(run, "emulator.json"), &emu)
	if len(emu) != 3 || emu[2].Bottleneck != "b" || emu[2].Down.Delivered == 0 {
		t.Fatalf("emulator.json %+v", emu)
	}
	if emu[0].Up.DroppedDown+emu[0].Down.DroppedDown == 0 || emu[1].Up.DroppedDown+emu[1].Down.DroppedDown != 0 {
		t.Errorf("dropped while down: path 0 %+v, path 1 %+v", emu[0], emu[1])
	}
	// The bottleneck carried every packet both paths delivered.
	if d := emu[0].Down.Delivered + emu[1].Down.Delivered; emu[2].Down.Delivered > d {
		t.Errorf("bottleneck delivered %d of the paths' %d", emu[2].Down.Delivered, d)
	}
}

// A two-host run (--role outside the netns backend) refuses what only an
// emulated network carries out, which it would leave out without a word.
func TestRolesRefuseEmulatedNetworks(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ doc, want string }{
		{networkFile, "[[bottleneck]]"},
		{strings.Replace(strings.Replace(networkFile, "bottleneck = \"b\"\n", "", 2), "[[bottleneck]]\nname = \"b\"\nrate = \"20Mbit\"\n", "", 1), "[[competitor]]"},
	} {
		file := writeFile(t, dir, "n.toml", tc.doc)
		code, _, stderr := runCmd(t, "run", file, "--role", "server", "--listen", "127.0.0.1:9999", "--out", filepath.Join(dir, "out"))
		if code != 2 || !strings.Contains(stderr, tc.want+": a two-host run has the hosts' network") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	}
}
