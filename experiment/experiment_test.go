package experiment

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/scheduler"
)

const paperFile = `name = "paper"
duration = "60s"
seed = 7

[[path]]
rate = "100Mbit"
rtt = "50ms"
loss = "0.05%"

[[path]]
rate = "100Mbit"
rtt = "50ms"
loss = "0.05%"
[path.down]
rate = "10Mbit"

[transport]
path_scheduler = "cwr"
stream_scheduler = "priority-fifo"

[[source]]
name = "s1"
kind = "periodic"
interval = "50ms"
size = "10kB"

[[source]]
name = "background"
kind = "bulk"
`

func TestParsePaperSetup(t *testing.T) {
	runs, err := Parse("paper.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	e := runs[0]
	if e.Name != "paper" || e.Duration != time.Minute || e.Seed != 7 || e.Backend != BackendSim {
		t.Fatalf("header %+v", e)
	}
	want := Link{Rate: 100e6, Delay: 25 * time.Millisecond, Loss: 0.0005, LossModel: "bernoulli", BurstLength: 1, QueueBDP: 1}
	if e.Paths[0].Up != want || e.Paths[0].Down != want || e.Paths[1].Up != want {
		t.Fatalf("path 0 %+v", e.Paths[0])
	}
	if e.Paths[1].Down.Rate != 10e6 || e.Paths[1].Down.Delay != 25*time.Millisecond {
		t.Fatalf("down override %+v", e.Paths[1].Down)
	}
	if e.Paths[0].RTT() != 50*time.Millisecond {
		t.Fatalf("rtt %v", e.Paths[0].RTT())
	}
	// One BDP of 100 Mbit/s over 50 ms is 625 kB.
	if q := e.Paths[0].Up.QueueLimit(e.Paths[0].RTT()); q != 625000 {
		t.Fatalf("queue %d", q)
	}
	tr := Transport{Kind: KindMPQ, Connection: ConnectionShared, PathScheduler: "cwr", StreamScheduler: "priority-fifo", Congestion: "newreno", NewRenoGrowth: "per-ack", SlowStart: "standard", MaxPacketSize: 1350, Multipath: true, InitialRTT: 333 * time.Millisecond, PathFailure: true, SimNullProtection: true,
		SchedulerOptions: scheduler.Options{"reservation": "partial", "horizon": "srtt", "equal_rtt": "first", "hold_unwritten": "true", "idle_escape": "true", "path_choice": "packet", "skip_held_back": "false", "credit": "false", "credit_rtts": "1", "stagger_startup": "false", "stagger_clear": "false", "stagger_hold_rtts": "32"}}
	if !reflect.DeepEqual(e.Transport, tr) {
		t.Fatalf("transport %+v", e.Transport)
	}
	s := e.Sources[0]
	if s.Kind != KindPeriodic || !s.Priority || !s.Announce || s.Interval != 50*time.Millisecond || s.Size != 10000 {
		t.Fatalf("source %+v", s)
	}
	if b := e.Sources[1]; b.Kind != KindBulk || b.Priority {
		t.Fatalf("bulk %+v", b)
	}
}

func TestSweepAndOverrides(t *testing.T) {
	doc := paperFile + `
[sweep]
"transport.path_scheduler" = ["lowrtt", "cwr", "cwr-red"]
"source.s1.size" = ["10kB", "25kB"]
`
	set, err := ParseOverride("path.0.rtt=\"20ms\"")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Parse("s.toml", []byte(doc), []Override{set})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 6", len(runs))
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Transport.PathScheduler+"/"+strings.TrimSuffix(strings.TrimSuffix(FormatRate(float64(r.Sources[0].Size)), "kbit"), "bit"))
		if r.Paths[0].RTT() != 20*time.Millisecond || r.Paths[1].RTT() != 50*time.Millisecond {
			t.Fatalf("override not applied: %v %v", r.Paths[0].RTT(), r.Paths[1].RTT())
		}
	}
	want := []string{"lowrtt/10", "lowrtt/25", "cwr/10", "cwr/25", "cwr-red/10", "cwr-red/25"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if v := runs[3].Vary; !reflect.DeepEqual(v, []string{"path.0.rtt=20ms", "transport.path_scheduler=cwr", "source.s1.size=25kB"}) {
		t.Fatalf("vary %v", v)
	}
}

func TestOverrideFixesSweptKey(t *testing.T) {
	doc := paperFile + `
[sweep]
"transport.path_scheduler" = ["lowrtt", "cwr", "cwr-red"]
"source.s1.size" = ["10kB", "25kB"]
`
	set, _ := ParseOverride("transport.path_scheduler=cwr")
	runs, err := Parse("s.toml", []byte(doc), []Override{set})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	for _, r := range runs {
		if r.Transport.PathScheduler != "cwr" {
			t.Fatalf("scheduler %s", r.Transport.PathScheduler)
		}
	}
}

func TestResolvedRoundTrip(t *testing.T) {
	doc := paperFile + `
[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 512
stop = "30s"
[[source]]
name = "saw"
kind = "stop-and-wait"
count = 10
[[path]]
rate = "10Mbit"
delay = "5ms"
loss = 0.01
loss_model = "gilbert"
burst = 3
queue = "64KiB"
jitter = "2ms"
[output]
qlog = true
`
	runs, err := Parse("r.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	checkRoundTrip(t, e)
}

func TestErrorsNameFileLineKey(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		set  string
		want []string
	}{
		{"unknown key", "colour = \"red\"\n" + paperFile, "", []string{"e.toml:1: colour: unknown key"}},
		{"misspelt key", "duratoin = \"10s\"\n" + paperFile, "", []string{`e.toml:1: duratoin: unknown key; did you mean "duration"?`}},
		{"misspelt path key", strings.Replace(paperFile, `rtt = "50ms"`+"\nloss", `rtt = "50ms"`+"\njiter = \"1ms\"\nloss", 1), "", []string{`e.toml:8: path.0.jiter: unknown key; did you mean "jitter"?`}},
		{"unknown path key", strings.Replace(paperFile, `rtt = "50ms"`+"\nloss", `rtt = "50ms"`+"\nbandwidth = 3\nloss", 1), "", []string{"e.toml:8: path.0.bandwidth: unknown key"}},
		{"bad rate unit", strings.Replace(paperFile, `"100Mbit"`, `"100 furlongs"`, 1), "", []string{"e.toml:6: path.0.rate: bad rate unit"}},
		{"bad duration", strings.Replace(paperFile, `duration = "60s"`, `duration = "sixty"`, 1), "", []string{"e.toml:2: duration: bad duration"}},
		{"duration without unit", strings.Replace(paperFile, `duration = "60s"`, `duration = 60`, 1), "", []string{"e.toml:2: duration: want a duration with a unit"}},
		{"loss above one", strings.Replace(paperFile, `loss = "0.05%"`, `loss = "150%"`, 1), "", []string{"e.toml:8: path.0.loss: fraction"}},
		{"bad scheduler value type", strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = 3`, 1), "", []string{"e.toml:18: transport.path_scheduler: want a string"}},
		{"unknown table", paperFile + "[transport.x]\n", "", []string{"e.toml:30: transport.x: unknown key"}},
		{"kind key mismatch", strings.Replace(paperFile, `kind = "bulk"`, "kind = \"bulk\"\ninterval = \"1s\"", 1), "", []string{"e.toml:30: source.1.interval: not a key of bulk sources"}},
		{"missing interval", strings.Replace(paperFile, `interval = "50ms"`+"\n", "", 1), "", []string{"source.0.interval: missing"}},
		{"unknown kind", strings.Replace(paperFile, `kind = "bulk"`, `kind = "torrent"`, 1), "", []string{"e.toml:29: source.1.kind: unknown source kind \"torrent\" (known: periodic, bulk"}},
		{"bad backend", "backend = \"mars\"\n" + paperFile, "", []string{"e.toml:1: backend: unknown backend \"mars\" (known: loopback, sim)"}},
		{"negative start", strings.Replace(paperFile, `kind = "bulk"`, "kind = \"bulk\"\nstart = \"-1s\"", 1), "", []string{"source.1.start: duration \"-1s\" is negative"}},
		{"start after end", strings.Replace(paperFile, `kind = "bulk"`, "kind = \"bulk\"\nstart = \"61s\"", 1), "", []string{"source.1.start: 1m1s is not before the end"}},
		{"warmup at the end", paperFile + "[output]\nwarmup = \"60s\"\n", "", []string{"e.toml:31: output.warmup: 1m0s is not in [0, duration = 1m0s)"}},
		{"negative warmup", paperFile + "[output]\nwarmup = \"-1s\"\n", "", []string{"output.warmup: duration \"-1s\" is negative"}},
		{"misspelled base under a sweep", strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "cwrr"`, 1) + "[sweep]\n\"transport.path_scheduler\" = [\"lowrtt\", \"cwr\"]\n", "",
			[]string{"e.toml:18: transport.path_scheduler: unknown path scheduler \"cwrr\""}},
		{"misspelled base under an override", strings.Replace(paperFile, `stream_scheduler = "priority-fifo"`, `stream_scheduler = "priority-fifoo"`, 1), "transport.stream_scheduler=priority-fifo",
			[]string{"e.toml:19: transport.stream_scheduler: unknown stream scheduler \"priority-fifoo\""}},
		{"toml syntax", "name = \n", "", []string{"e.toml:1"}},
		{"no paths", "name = \"x\"\n[[source]]\nkind = \"bulk\"\n", "", []string{"path: missing"}},
		{"override bad value", paperFile, "transport.max_packet_size=100", []string{"transport.max_packet_size (from --set transport.max_packet_size=100): 100 outside [1200, 65527]"}},
		{"override unknown source", paperFile, "source.nope.size=1", []string{"source.nope.size (from --set source.nope.size=1): no source \"nope\""}},
		{"override misspelt table", paperFile, "tranport.congestion=cubic", []string{`tranport (from --set tranport.congestion=cubic): unknown key; did you mean "transport"?`}},
		{"sweep not an array", paperFile + "[sweep]\n\"duration\" = \"1s\"\n", "", []string{"sweep.duration: must be a non-empty array"}},
		// An empty sweep list empties the grid; the rest of the file is
		// still checked.
		{"empty sweep list and more", strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "lowrt"`, 1) + "[sweep]\n\"duration\" = []\n", "",
			[]string{"sweep.duration: must be a non-empty array", "e.toml:18: transport.path_scheduler: unknown path scheduler \"lowrt\""}},
		{"sweep bad value", paperFile + "[sweep]\n\"path.1.rate\" = [\"1Mbit\", \"fast\"]\n", "", []string{"e.toml:31: path.1.rate (from [sweep]): bad rate"}},
		{"negative path_abandon_after", strings.Replace(paperFile, `path_scheduler = "cwr"`, "path_scheduler = \"cwr\"\npath_abandon_after = \"-2s\"", 1), "", []string{"e.toml:19: transport.path_abandon_after: duration \"-2s\" is negative"}},
		{"path_abandon_after without unit", strings.Replace(paperFile, `path_scheduler = "cwr"`, "path_scheduler = \"cwr\"\npath_abandon_after = 3", 1), "", []string{"e.toml:19: transport.path_abandon_after: want a duration with a unit"}},
		{"both rtt and delay", strings.Replace(paperFile, `rtt = "50ms"`, "rtt = \"50ms\"\ndelay = \"10ms\"", 1), "", []string{"path.0.delay: give either rtt"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var over []Override
			if tc.set != "" {
				o, err := ParseOverride(tc.set)
				if err != nil {
					t.Fatal(err)
				}
				over = append(over, o)
			}
			_, err := Parse("e.toml", []byte(tc.doc), over)
			if err == nil {
				t.Fatal("no error")
			}
			var e *Error
			var es Errors
			if !errors.As(err, &e) && !errors.As(err, &es) {
				t.Fatalf("error of type %T", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error\n%v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

// TestSweptBaseAccepted: a correct base value the sweep replaces, and a
// key only the sweep gives, are no problems.
func TestSweptBaseAccepted(t *testing.T) {
	doc := paperFile + "[sweep]\n\"transport.path_scheduler\" = [\"lowrtt\", \"cwr\"]\n\"source.s1.interval\" = [\"50ms\", \"100ms\"]\n"
	if runs, err := Parse("e.toml", []byte(doc), nil); err != nil || len(runs) != 4 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	noInterval := strings.Replace(doc, "interval = \"50ms\"\n", "", 1)
	if runs, err := Parse("e.toml", []byte(noInterval), nil); err != nil || len(runs) != 4 {
		t.Fatalf("interval from the sweep only: %d runs, %v", len(runs), err)
	}
}

func TestUnits(t *testing.T) {
	rates := map[string]float64{"100Mbit": 100e6, "1Gbit": 1e9, "10 Mbps": 10e6, "500kbit/s": 500e3, "0": 0, "unlimited": 0, "1.5Mbit": 1.5e6}
	for s, want := range rates {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	sizes := map[string]int64{"10kB": 10000, "1MiB": 1 << 20, "1350": 1350, "2.5MB": 2500000, "64KiB": 65536, "1B": 1}
	for s, want := range sizes {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "kB", "1.5B", "-3kB", "3 parsecs"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
	fr := map[string]float64{"0.05%": 0.0005, "1%": 0.01, "0.3": 0.3, "0": 0}
	for s, want := range fr {
		if got, err := ParseFraction(s); err != nil || got != want {
			t.Errorf("ParseFraction(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
}

// TestRepeat: every grid point runs repeat times in a row, the first with
// the file's seed and the others with seeds derived from it; --repeat
// (an override of repeat) changes the count without becoming a varied
// key; repeat cannot be swept.
func TestRepeat(t *testing.T) {
	doc := "repeat = 3\n" + paperFile + `[sweep]
"transport.path_scheduler" = ["lowrtt", "cwr"]
`
	runs, err := Parse("r.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs, want 2 points x 3 repetitions", len(runs))
	}
	seeds := map[uint64]bool{}
	for i, r := range runs {
		if r.Point != i/3 || r.Repetition != i%3 || r.Repeat != 3 || r.BaseSeed != 7 {
			t.Fatalf("run %d: point %d repetition %d/%d base seed %d", i, r.Point, r.Repetition, r.Repeat, r.BaseSeed)
		}
		if r.Seed != RepetitionSeed(7, r.Repetition) || r.Seed >= 1<<63 {
			t.Fatalf("run %d: seed %d", i, r.Seed)
		}
		seeds[r.Seed] = true
		if r.PointSHA256() != runs[i/3*3].PointSHA256() {
			t.Fatalf("repetitions of a point with different configurations")
		}
	}
	if len(seeds) != 3 || runs[0].Seed != 7 {
		t.Fatalf("seeds %v: want 3 different ones, the first the file's", seeds)
	}
	if runs[0].PointSHA256() == runs[3].PointSHA256() {
		t.Fatal("two grid points with the same configuration hash")
	}
	// The resolved file of a repetition reruns that repetition alone.
	again, err := Parse("resolved.toml", runs[4].ResolvedTOML(), nil)
	if err != nil || len(again) != 1 || again[0].Seed != runs[4].Seed || !SameRun(again[0].ResolvedTOML(), runs[4].ResolvedTOML()) {
		t.Fatalf("resolved repetition: %v\n%s", err, runs[4].ResolvedTOML())
	}
	runs, err = Parse("r.toml", []byte(doc), []Override{{Key: "repeat", Value: int64(2), Origin: "--repeat"}})
	if err != nil || len(runs) != 4 || len(runs[0].Vary) != 1 {
		t.Fatalf("--repeat 2: %d runs, vary %v, %v", len(runs), runs[0].Vary, err)
	}
	_, err = Parse("r.toml", []byte(paperFile+"[sweep]\nrepeat = [1, 2]\n"), nil)
	line := strings.Count(paperFile, "\n") + 2
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("r.toml:%d: sweep.repeat: cannot be swept", line)) {
		t.Fatalf("swept repeat: %v", err)
	}
}

// TestResultKeys: drain (default from the slowest path), reply_priority
// (default: the source's priority, except for periodic sources' one-byte
// replies), [output] path_interval.
func TestResultKeys(t *testing.T) {
	runs, err := Parse("k.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	e := runs[0]
	if e.Drain != 2*time.Second || e.Output.PathInterval != 10*time.Millisecond || e.Sources[0].ReplyPriority {
		t.Fatalf("defaults: drain %v, path_interval %v, periodic reply priority %v", e.Drain, e.Output.PathInterval, e.Sources[0].ReplyPriority)
	}
	doc := paperFile + `[[path]]
rtt = "400ms"
[[source]]
name = "ar"
kind = "frames"
size = "30kB"
priority = true
[[source]]
name = "rr"
kind = "request-response"
interval = "1s"
size = 100
priority = true
reply_priority = false
`
	runs, err = Parse("k.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	e = runs[0]
	if e.Drain != 4*time.Second || !e.Sources[2].ReplyPriority || e.Sources[3].ReplyPriority {
		t.Fatalf("drain %v (want ten 400 ms round trips), reply priorities %v %v", e.Drain, e.Sources[2].ReplyPriority, e.Sources[3].ReplyPriority)
	}
	runs, err = Parse("k.toml", []byte("drain = \"0s\"\n"+paperFile+"[output]\npath_interval = 0\n"), nil)
	if err != nil || runs[0].Drain != 0 || runs[0].Output.PathInterval != 0 {
		t.Fatalf("explicit drain 0 and path_interval 0: %v %+v", err, runs)
	}
	// output.warmup: 0 by default, and then absent from the resolved
	// configuration (whose hash earlier runs carry); written when set.
	if runs[0].Output.Warmup != 0 || strings.Contains(string(runs[0].ResolvedTOML()), "warmup") {
		t.Fatalf("default warmup %v, resolved:\n%s", runs[0].Output.Warmup, runs[0].ResolvedTOML())
	}
	runs, err = Parse("k.toml", []byte(paperFile+"[output]\nwarmup = \"2s\"\n"), nil)
	if err != nil || runs[0].Output.Warmup != 2*time.Second || !strings.Contains(string(runs[0].ResolvedTOML()), "warmup = \"2s\"") {
		t.Fatalf("warmup 2s: %v %+v", err, runs)
	}
	_, err = Parse("k.toml", []byte("reply_priority = true\n"+paperFile), nil)
	if err == nil {
		t.Fatal("reply_priority accepted at the top level")
	}
	bad := strings.Replace(paperFile, `kind = "bulk"`, "kind = \"bulk\"\nreply_priority = true", 1)
	if _, err = Parse("k.toml", []byte(bad), nil); err == nil || !strings.Contains(err.Error(), "source.1.reply_priority: bulk sources get no replies") {
		t.Fatalf("reply_priority on bulk: %v", err)
	}
}

func TestPathAbandonAfter(t *testing.T) {
	doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, "path_scheduler = \"cwr\"\npath_abandon_after = \"2s\"", 1)
	es, err := Parse("e.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := es[0].Transport.PathAbandonAfter; got != 2*time.Second {
		t.Fatalf("path_abandon_after %v, want 2s", got)
	}
	// Unset: never.
	es, err = Parse("e.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := es[0].Transport.PathAbandonAfter; got != 0 {
		t.Fatalf("default path_abandon_after %v, want 0", got)
	}
}

// TestResolvedPathFailureKeys: the path failure keys survive the resolved
// configuration when set, and leave it unchanged when not.
func TestResolvedPathFailureKeys(t *testing.T) {
	doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, "path_scheduler = \"cwr\"\npath_failure = false\npath_abandon_after = \"3s\"", 1)
	es, err := Parse("e.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := string(es[0].ResolvedTOML())
	back, err := Parse("r.toml", []byte(res), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	if tr := back[0].Transport; tr.PathFailure || tr.PathAbandonAfter != 3*time.Second {
		t.Fatalf("round trip gave path_failure %v, path_abandon_after %v", tr.PathFailure, tr.PathAbandonAfter)
	}
	plain, err := Parse("e.toml", []byte(paperFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := string(plain[0].ResolvedTOML()); strings.Contains(r, "path_failure") || strings.Contains(r, "path_abandon_after") {
		t.Fatalf("defaults written:\n%s", r)
	}
}

// TestSimNullProtectionKey: transport.sim_null_protection is on by
// default in the simulator and off elsewhere, may be turned off, is
// refused on any other backend, survives the resolved configuration only
// when it is not its backend's default (so that config_sha256 of runs from
// before the key stays the same).
func TestSimNullProtectionKey(t *testing.T) {
	parse := func(doc string) (Experiment, error) {
		es, err := Parse("e.toml", []byte(doc), nil)
		if err != nil {
			return Experiment{}, err
		}
		return es[0], nil
	}
	on, err := parse(paperFile)
	if err != nil {
		t.Fatal(err)
	}
	if !on.Transport.SimNullProtection {
		t.Fatalf("simulator default: %v", on.Transport.SimNullProtection)
	}
	r := string(on.ResolvedTOML())
	if !strings.Contains(r, "\n# sim_null_protection = true") || strings.Contains(r, "\nsim_null_protection") {
		t.Fatalf("default written as a key, or not noted:\n%s", r)
	}
	off, err := parse(strings.Replace(paperFile, `path_scheduler = "cwr"`, "path_scheduler = \"cwr\"\nsim_null_protection = false", 1))
	if err != nil {
		t.Fatal(err)
	}
	if off.Transport.SimNullProtection {
		t.Fatal("sim_null_protection = false ignored")
	}
	if off.PointSHA256() == on.PointSHA256() {
		t.Fatal("the non-default is not in config_sha256")
	}
	checkRoundTrip(t, off)
	checkRoundTrip(t, on)
	loop, err := parse("backend = \"loopback\"\n" + paperFile)
	if err != nil {
		t.Fatal(err)
	}
	if loop.Transport.SimNullProtection || strings.Contains(string(loop.ResolvedTOML()), "sim_null_protection") {
		t.Fatalf("loopback: %v\n%s", loop.Transport.SimNullProtection, loop.ResolvedTOML())
	}
	_, err = parse("backend = \"loopback\"\n" + strings.Replace(paperFile, "[transport]", "[transport]\nsim_null_protection = true", 1))
	if err == nil || !strings.Contains(err.Error(), "transport.sim_null_protection: the null packet protection is for backend = \"sim\" only") {
		t.Fatalf("loopback with sim_null_protection: %v", err)
	}
}

// checkRoundTrip checks that e's resolved file reads back as e.
func checkRoundTrip(t *testing.T, e Experiment) {
	t.Helper()
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

// TestValueString: an inline table's value in a label, keys in order,
// nested tables likewise (Go's "map[k:v]" before).
func TestValueString(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{"whole", "whole"}, {int64(2), "2"}, {map[string]any{}, "{}"},
		{map[string]any{"reservation": "whole", "horizon": "next"}, "{horizon=next,reservation=whole}"},
		{map[string]any{"a": map[string]any{"b": true}}, "{a={b=true}}"},
	} {
		if got := valueString(c.v); got != c.want {
			t.Errorf("valueString(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestSweepFromCommandLine: mpq run --sweep KEY=V1,V2 adds a dimension
// to the grid after the file's, replaces the file's sweep of the same
// key, forms a grid when given twice, and its problems name it (issue
// 37: five --set runs into one --out could not be aggregated).
func TestSweepFromCommandLine(t *testing.T) {
	fileSweep := paperFile + `
[sweep]
"transport.path_scheduler" = ["lowrtt", "cwr"]
`
	for _, c := range []struct {
		name   string
		doc    string
		sweeps []string
		labels []string
		err    string
	}{
		{"a dimension after the file's", fileSweep, []string{"transport.congestion=newreno,cubic"},
			[]string{"transport.path_scheduler=lowrtt,transport.congestion=newreno", "transport.path_scheduler=lowrtt,transport.congestion=cubic",
				"transport.path_scheduler=cwr,transport.congestion=newreno", "transport.path_scheduler=cwr,transport.congestion=cubic"}, ""},
		{"replaces the file's sweep of the key", fileSweep, []string{"transport.path_scheduler=cwr-red"},
			[]string{"transport.path_scheduler=cwr-red"}, ""},
		{"a grid", paperFile, []string{"duration=10s,20s", "seed=1,2"},
			[]string{"duration=10s,seed=1", "duration=10s,seed=2", "duration=20s,seed=1", "duration=20s,seed=2"}, ""},
		{"inline tables", paperFile, []string{`transport.scheduler_options={},{reservation="whole"},{idle_escape=false}`},
			[]string{"transport.scheduler_options={}", "transport.scheduler_options={reservation=whole}",
				"transport.scheduler_options={idle_escape=false}"}, ""},
		{"a bad value", paperFile, []string{"transport.congestion=newreno,cubc"}, nil,
			`transport.congestion (from --sweep transport.congestion=newreno,cubc): unknown congestion controller "cubc"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var overrides []Override
			for _, s := range c.sweeps {
				o, err := ParseSweep(s)
				if err != nil {
					t.Fatal(err)
				}
				overrides = append(overrides, o)
			}
			runs, err := Parse("s.toml", []byte(c.doc), overrides)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				got = append(got, strings.Join(r.Label, ","))
			}
			if !reflect.DeepEqual(got, c.labels) {
				t.Errorf("runs %q, want %q", got, c.labels)
			}
		})
	}
	for _, bad := range []string{"transport.congestion", "=cubic", "transport.congestion=", "transport.congestion=newreno,,cubic"} {
		if _, err := ParseSweep(bad); err == nil {
			t.Errorf("ParseSweep(%q) accepted it", bad)
		}
	}
}
