package experiment

import (
	"github.com/mpq/mpq/mpquic/congestion"
	"strings"
	"testing"
)

// TestNamesCheckedAtLoad: every name in a file is checked against its
// registry when the file loads, and every problem is reported at once,
// each with its line (issue 14: misspelt schedulers passed the load that
// reported seven other errors, and failed run by run).
func TestNamesCheckedAtLoad(t *testing.T) {
	doc := strings.NewReplacer(
		`path_scheduler = "cwr"`, "path_scheduler = \"lowrt\"\ncongestion = \"vegas\"",
		`stream_scheduler = "priority-fifo"`, `stream_scheduler = "priority"`,
		`kind = "bulk"`, `kind = "torrent"`,
		`seed = 7`, "seed = 7\nbackend = \"mars\"",
		`rate = "10Mbit"`, `rate = "fast"`,
	).Replace(paperFile)
	_, err := Parse("e.toml", []byte(doc), nil)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`e.toml:4: backend: unknown backend "mars" (known: loopback, sim)`,
		`e.toml:16: path.1.down.rate: bad rate "fast"`,
		`e.toml:19: transport.path_scheduler: unknown path scheduler "lowrt" (known: blest, cwr, cwr-plus, cwr-red, cwr-red-fast, ecf, lowrtt, redundant, round-robin, sr); did you mean "lowrtt"?`,
		`e.toml:20: transport.congestion: unknown congestion controller "vegas" (known: balia, bbr, cubic, lia, newreno, newreno-cwl, newreno-cwl-ss, olia)`,
		`e.toml:21: transport.stream_scheduler: unknown stream scheduler "priority" (known: priority-fifo, round-robin); did you mean "priority-fifo"?`,
		`e.toml:31: source.1.kind: unknown source kind "torrent"`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d problems reported, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d:\n%s\nwant\n%s", i, lines[i], w)
		}
	}
}

// TestBadOverridesAllReported: of several bad --set values, every one is
// reported, naming the --set, together with the file's own problems.
func TestBadOverridesAllReported(t *testing.T) {
	doc := strings.Replace(paperFile, `duration = "60s"`, `duration = "sixty"`, 1)
	over := overrides(t,
		"transport.congestion=vegas",
		"transport.path_scheduler=lowrt",
		"source.nope.size=1",
		"path.0.rate=fast",
		"backend=netns",
		"transport.colour=red",
	)
	_, err := Parse("e.toml", []byte(doc), over)
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`e.toml:2: duration: bad duration`,
		`source.nope.size (from --set source.nope.size=1): no source "nope"`,
		`backend (from --set backend=netns): backend "netns" is not available yet`,
		`path.0.rate (from --set path.0.rate=fast): bad rate "fast"`,
		`transport.path_scheduler (from --set transport.path_scheduler=lowrt): unknown path scheduler "lowrt"`,
		`transport.congestion (from --set transport.congestion=vegas): unknown congestion controller "vegas"`,
		`transport.colour (from --set transport.colour=red): unknown key`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error\n%v\ndoes not contain %q", err, w)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != len(want) {
		t.Errorf("%d problems reported, want %d:\n%v", n, len(want), err)
	}
}

// TestSweptNamesChecked: a misspelt name among a sweep's values is
// reported at the [sweep] line.
func TestSweptNamesChecked(t *testing.T) {
	doc := paperFile + "[sweep]\n\"transport.path_scheduler\" = [\"lowrtt\", \"cwr-reed\"]\n"
	_, err := Parse("e.toml", []byte(doc), nil)
	want := `e.toml:31: transport.path_scheduler (from [sweep]): unknown path scheduler "cwr-reed"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestBackendList: netns is refused with a clear message until its
// backend registers; a registered backend is accepted.
func TestBackendList(t *testing.T) {
	_, err := Parse("e.toml", []byte("backend = \"netns\"\n"+paperFile), nil)
	if err == nil || !strings.Contains(err.Error(), `e.toml:1: backend: backend "netns" is not available yet`) {
		t.Fatalf("netns: %v", err)
	}
	RegisterBackend("test-only")
	defer func() {
		backendsMu.Lock()
		delete(backends, "test-only")
		backendsMu.Unlock()
	}()
	runs, err := Parse("e.toml", []byte("backend = \"test-only\"\n"+paperFile), nil)
	if err != nil || runs[0].Backend != "test-only" {
		t.Fatalf("registered backend refused: %v", err)
	}
}

// TestNewRenoGrowthAtLoad: transport.newreno_growth is a checked name,
// taken by newreno, newreno-cwl and newreno-cwl-ss only, and resolved into the file.
func TestNewRenoGrowthAtLoad(t *testing.T) {
	for _, tc := range []struct{ transport, err string }{
		{"congestion = \"newreno\"\nnewreno_growth = \"per-rtt\"", ""},
		{"congestion = \"newreno-cwl\"\nnewreno_growth = \"per-rtt\"", ""},
		{"congestion = \"cubic\"\nnewreno_growth = \"per-ack\"", ""},
		{"congestion = \"cubic\"\nnewreno_growth = \"per-rtt\"", `transport.newreno_growth: "per-rtt" applies to newreno, newreno-cwl and newreno-cwl-ss, not congestion = "cubic"`},
		{"newreno_growth = \"per-sec\"", `transport.newreno_growth: unknown NewReno growth "per-sec" (known: per-ack, per-rtt)`},
	} {
		doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "cwr"`+"\n"+tc.transport, 1)
		es, err := Parse("e.toml", []byte(doc), nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.transport, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %s", tc.transport, err, tc.err)
		case tc.err == "" && strings.Contains(tc.transport, "per-rtt"):
			e := &es[0]
			if e.Transport.NewRenoGrowth != "per-rtt" || !strings.Contains(string(e.ResolvedTOML()), `newreno_growth = "per-rtt"`) {
				t.Errorf("%q: growth %q not resolved", tc.transport, e.Transport.NewRenoGrowth)
			}
		}
	}
}

// TestSlowStartAtLoad: transport.slow_start is a checked name (error with
// file, line and key), defaults to the controller's own (standard for
// newreno, hystart++ for cubic), is refused with bbr, sweeps, and is
// written into the resolved file only when not the default, so that the
// configurations (and hashes) of runs without it stay the same.
func TestSlowStartAtLoad(t *testing.T) {
	base, err := Parse("e.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ transport, want, err string }{
		{"", "standard", ""},
		{"slow_start = \"standard\"", "standard", ""},
		{"slow_start = \"hystart++\"", "hystart++", ""},
		{"congestion = \"olia\"\nslow_start = \"hystart++\"", "hystart++", ""},
		{"congestion = \"cubic\"", "hystart++", ""},
		{"congestion = \"cubic\"\nslow_start = \"standard\"", "standard", ""},
		{"congestion = \"bbr\"", "", ""},
		{"congestion = \"bbr\"\nslow_start = \"standard\"", "", `e.toml:20: transport.slow_start: congestion = "bbr" has no slow start to choose`},
		{"slow_start = \"hystart\"", "", `e.toml:19: transport.slow_start: unknown slow start "hystart" (known: standard, hystart++)`},
	} {
		e := parseTransport(t, tc.transport, tc.err)
		if e == nil {
			continue
		}
		resolved := string(e.ResolvedTOML())
		written := strings.Contains(resolved, "slow_start")
		def := !strings.Contains(tc.transport, "slow_start") || !strings.Contains(tc.transport, "cubic") && tc.want == "standard" ||
			strings.Contains(tc.transport, "cubic") && tc.want == "hystart++"
		if e.Transport.SlowStart != tc.want || written == def {
			t.Errorf("%q: slow start %q (written %v), want %q (written %v)", tc.transport, e.Transport.SlowStart, written, tc.want, !def)
		}
		again, err := Parse("r.toml", []byte(resolved), nil)
		if err != nil || again[0].Transport.SlowStart != tc.want {
			t.Errorf("%q: resolved file reads back as %v, %v", tc.transport, again, err)
		}
		if tc.transport == "slow_start = \"standard\"" && e.PointSHA256() != base[0].PointSHA256() {
			t.Errorf("the default written out changes the configuration's hash")
		}
	}
	o, err := ParseOverride("transport.slow_start=hystart++")
	if err != nil {
		t.Fatal(err)
	}
	es, err := Parse("e.toml", []byte(paperFile), []Override{o})
	if err != nil || es[0].Transport.SlowStart != "hystart++" {
		t.Errorf("--set transport.slow_start=hystart++: %v", err)
	}
	es, err = Parse("e.toml", []byte(paperFile+"\n[sweep]\n\"transport.slow_start\" = [\"standard\", \"hystart++\"]\n"), nil)
	if err != nil || len(es) != 2 || es[0].Transport.SlowStart != "standard" || es[1].Transport.SlowStart != "hystart++" {
		t.Errorf("sweep over transport.slow_start: %d runs, %v", len(es), err)
	}
}

// TestCongestionReadingsAtLoad: MPQUIC's readings of the controllers
// (transport.initial_window, emulated_connections, loss_reduction,
// cwnd_limited, rto_collapse, cubic_target) and cubic's alpha readings
// (cubic_alpha; "wmax" is the default) are read into Transport.CongestionReadings,
// written into the resolved file only when set (the hashes of runs
// without them stay the same), read back from it, and refused where they
// do not apply with file, line and key.
func TestCongestionReadingsAtLoad(t *testing.T) {
	base, err := Parse("e.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	mpquic := congestion.Readings{InitialWindow: 32, EmulatedConnections: 2, LossReduction: 0.7, CwndLimited: true, RTOCollapse: true}
	for _, tc := range []struct {
		transport string
		want      congestion.Readings
		err       string
	}{
		{"", congestion.Readings{}, ""},
		{"emulated_connections = 1", congestion.Readings{}, ""},
		{"congestion = \"olia\"\ninitial_window = 32\nemulated_connections = 2\nloss_reduction = 0.7\ncwnd_limited = true\nrto_collapse = true", mpquic, ""},
		{"congestion = \"cubic\"\nemulated_connections = 2", congestion.Readings{EmulatedConnections: 2}, ""},
		{"congestion = \"bbr\"\ninitial_window = 20", congestion.Readings{InitialWindow: 20}, ""},
		{"congestion = \"bbr\"\nemulated_connections = 2", congestion.Readings{}, `e.toml:20: transport.emulated_connections: applies to the loss-based controllers, not congestion = "bbr"`},
		{"congestion = \"bbr\"\nrto_collapse = true", congestion.Readings{}, `e.toml:20: transport.rto_collapse: applies to the loss-based controllers`},
		{"congestion = \"balia\"\nloss_reduction = 0.7", congestion.Readings{}, `e.toml:20: transport.loss_reduction: balia's reduction on a loss is its own`},
		{"loss_reduction = 0", congestion.Readings{}, `e.toml:19: transport.loss_reduction: 0 is outside (0, 1)`},
		{"emulated_connections = 0", congestion.Readings{}, `e.toml:19: transport.emulated_connections`},
		{"congestion = \"cubic\"\ncubic_alpha = \"linux\"", congestion.Readings{CubicAlpha: congestion.CubicAlphaLinux}, ""},
		{"congestion = \"cubic\"\ncubic_alpha = \"rfc9438\"", congestion.Readings{CubicAlpha: congestion.CubicAlphaRFC9438}, ""},
		{"congestion = \"cubic\"\ncubic_alpha = \"wmax\"", congestion.Readings{}, ""},
		{"congestion = \"cubic\"\ncubic_alpha = \"kernel\"", congestion.Readings{}, `e.toml:20: transport.cubic_alpha: "kernel" is not one of wmax, rfc9438, linux`},
		{"cubic_alpha = \"linux\"", congestion.Readings{}, `e.toml:19: transport.cubic_alpha: applies to congestion = "cubic", not "newreno"`},
		{"congestion = \"cubic\"\ncubic_target = true", congestion.Readings{CubicTarget: true}, ""},
		{"congestion = \"cubic\"\ncubic_target = false", congestion.Readings{}, ""},
		{"congestion = \"olia\"\ncubic_target = true", congestion.Readings{}, `e.toml:20: transport.cubic_target: applies to congestion = "cubic", not "olia"`},
		{"congestion = \"olia\"\nolia_best_overflow = true", congestion.Readings{OLIABestOverflow: true}, ""},
		{"congestion = \"lia\"\nolia_best_overflow = true", congestion.Readings{}, `e.toml:20: transport.olia_best_overflow: applies to congestion = "olia", not "lia"`},
	} {
		e := parseTransport(t, tc.transport, tc.err)
		if e == nil {
			continue
		}
		if e.Transport.CongestionReadings != tc.want {
			t.Errorf("%q: readings %+v, want %+v", tc.transport, e.Transport.CongestionReadings, tc.want)
		}
		resolved := string(e.ResolvedTOML())
		again, err := Parse("r.toml", []byte(resolved), nil)
		if err != nil || again[0].Transport.CongestionReadings != tc.want {
			t.Errorf("%q: resolved file reads back as %v, %v", tc.transport, again, err)
		}
		if tc.want.IsZero() && (e.PointSHA256() != base[0].PointSHA256() && !strings.Contains(tc.transport, "congestion")) {
			t.Errorf("%q: the published algorithms change the configuration's hash", tc.transport)
		}
		for _, k := range []string{"initial_window", "emulated_connections", "loss_reduction", "cwnd_limited", "rto_collapse", "cubic_alpha", "cubic_target", "olia_best_overflow"} {
			if tc.want.IsZero() && strings.Contains(resolved, k) {
				t.Errorf("%q: %s written into the resolved file", tc.transport, k)
			}
		}
	}
}

// parseTransport parses the paper's file with transport lines added under
// [transport]: the experiment, or nil when it failed, as wantErr asks (an
// error containing it) or not (reported).
func parseTransport(t *testing.T, transport, wantErr string) *Experiment {
	t.Helper()
	doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "cwr"`+"\n"+transport, 1)
	es, err := Parse("e.toml", []byte(doc), nil)
	switch {
	case wantErr != "":
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%q: error %v, want %s", transport, err, wantErr)
		}
		return nil
	case err != nil:
		t.Errorf("%q: %v", transport, err)
		return nil
	}
	return &es[0]
}
