package plots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadGroupsRepetitions: runs are grouped by grid point, in the order
// of the grid, their repetitions in order.
func TestLoadGroupsRepetitions(t *testing.T) {
	points := loadFixtures(t,
		fixture{point: 1, rep: 1, sched: "lowrtt", vary: []string{"transport.path_scheduler=lowrtt"}, times: []float64{1}},
		fixture{point: 0, rep: 0, sched: "cwr", vary: []string{"transport.path_scheduler=cwr"}, times: []float64{1}},
		fixture{point: 1, rep: 0, sched: "lowrtt", vary: []string{"transport.path_scheduler=lowrtt"}, times: []float64{1}},
	)
	if len(points) != 2 || points[0].Scheduler != "cwr" || len(points[1].Runs) != 2 ||
		points[1].Runs[0].Summary.Repetition != 0 || points[1].Runs[1].Summary.Repetition != 1 {
		t.Fatalf("points %+v", points)
	}
}

// TestLabels: by default the keys whose values differ, the scheduler by
// its name; --label chooses keys (by their last part too); the group is
// the label without the scheduler.
func TestLabels(t *testing.T) {
	vary := func(s, size string) []string {
		return []string{"transport.path_scheduler=" + s, "source.s1.size=" + size, "duration=10s"}
	}
	fs := []fixture{
		{point: 0, sched: "cwr", vary: vary("cwr", "10kB"), times: []float64{1}},
		{point: 1, sched: "cwr", vary: vary("cwr", "25kB"), times: []float64{1}},
		{point: 2, sched: "lowrtt", vary: vary("lowrtt", "10kB"), times: []float64{1}},
	}
	points := loadFixtures(t, fs...)
	var got []string
	for _, p := range points {
		got = append(got, p.Label+"/"+p.Group)
	}
	if want := "cwr s1.size=10kB/s1.size=10kB,cwr s1.size=25kB/s1.size=25kB,lowrtt s1.size=10kB/s1.size=10kB"; strings.Join(got, ",") != want {
		t.Fatalf("labels %q, want %q", strings.Join(got, ","), want)
	}
	if err := SetLabels(points, []string{"size"}); err != nil || points[0].Label != "s1.size=10kB" {
		t.Fatalf("--label size: %q, %v", points[0].Label, err)
	}
	if err := SetLabels(points, []string{"rtt"}); err == nil || !strings.Contains(err.Error(), "not a key the runs vary") {
		t.Fatalf("--label rtt: %v", err)
	}
	kept, err := Filter(points, []string{"source.s1.size=10kB", "path_scheduler=lowrtt"})
	if err != nil || len(kept) != 1 || kept[0].Scheduler != "lowrtt" {
		t.Fatalf("filter: %v %v", kept, err)
	}
	either, err := Filter(points, []string{"source.s1.size=50kB,25kB"})
	if err != nil || len(either) != 1 || either[0].Value("source.s1.size") != "25kB" {
		t.Fatalf("--where source.s1.size=50kB,25kB: %v %v", either, err)
	}
	if both, err := Filter(points, []string{"source.s1.size=10kB,25kB", "path_scheduler=cwr,lowrtt"}); err != nil || len(both) != 3 {
		t.Fatalf("--where with a value of each point: %d points, %v", len(both), err)
	}
	if _, err := Filter(points, []string{"source.s1.size=50kB"}); err == nil || !strings.Contains(err.Error(), "no run matches") {
		t.Fatalf("filter that keeps nothing: %v", err)
	}
	two := loadFixtures(t, fixture{sched: "cwr", times: []float64{1}}, fixture{rep: 1, sched: "cwr", times: []float64{2}})
	rep, err := Filter(two, []string{"repetition=1"})
	if err != nil || len(rep) != 1 || len(rep[0].Runs) != 1 || rep[0].Runs[0].Summary.Repetition != 1 || len(two[0].Runs) != 2 {
		t.Fatalf("--where repetition=1: %v %v", rep, err)
	}
	if _, err := Filter(two, []string{"repetition=2"}); err == nil {
		t.Fatal("a missing repetition passed")
	}
	if _, err := Filter(points, []string{"size"}); err == nil {
		t.Fatal("a malformed --where passed")
	}
}

// TestLabelsWarmup: a sweep of output.warmup changes every statistic,
// so its points are told apart like those of any key; other output
// options are not.
func TestLabelsWarmup(t *testing.T) {
	points := loadFixtures(t,
		fixture{point: 0, sched: "cwr", vary: []string{"output.warmup=0s", "output.qlog=true"}, times: []float64{1}},
		fixture{point: 1, sched: "cwr", vary: []string{"output.warmup=1s", "output.qlog=false"}, times: []float64{1}})
	if a, b := points[0].Label, points[1].Label; a != "output.warmup=0s" || b != "output.warmup=1s" {
		t.Fatalf("labels %q and %q", a, b)
	}
}

// TestLoadBadDirectories: a missing, empty or wrong directory, a file,
// and a malformed summary are input errors that name the path.
func TestLoadBadDirectories(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	wrong := filepath.Join(dir, "wrong")
	file := filepath.Join(dir, "file.txt")
	bad := filepath.Join(dir, "bad")
	for _, d := range []string{empty, wrong, bad} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{file: "x", filepath.Join(wrong, "notes.txt"): "x", filepath.Join(bad, "summary.json"): "{"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct{ dir, msg string }{
		{filepath.Join(dir, "missing"), "no such directory"},
		{empty, "no runs in it"},
		{wrong, "no runs in it"},
		{file, "not a directory"},
		{bad, "summary.json: unexpected end of JSON input"},
	} {
		_, err := Load([]string{tc.dir})
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.dir) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Load(%s): %v, want an input error naming it: %s", tc.dir, err, tc.msg)
		}
	}
}

// TestLoadRefusesTwoInvocations: runs of one configuration from two
// invocations of mpq run in one directory (another base seed, other
// varied keys, the same repetition twice) are refused, not pooled.
func TestLoadRefusesTwoInvocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    fixture
		want string
	}{
		{"base seed", fixture{point: 0, rep: 1, sched: "cwr", times: []float64{2}, baseSeed: 7}, "different base seeds, 1 and 7"},
		{"same repetition", fixture{point: 0, rep: 0, sched: "cwr", times: []float64{2}, baseSeed: 1}, "the same repetition 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFixture(t, filepath.Join(dir, "a"), fixture{point: 0, rep: 0, sched: "cwr", times: []float64{1}, baseSeed: 1})
			writeFixture(t, filepath.Join(dir, "b"), tc.b)
			_, err := Load([]string{dir})
			var ie *InputError
			if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want an input error about %s", err, tc.want)
			}
		})
	}
	// Repetitions of one invocation load as one point.
	dir := t.TempDir()
	writeFixture(t, dir, fixture{point: 0, rep: 0, sched: "cwr", times: []float64{1}, baseSeed: 1})
	writeFixture(t, dir, fixture{point: 0, rep: 1, sched: "cwr", times: []float64{2}, baseSeed: 1})
	if points, err := Load([]string{dir}); err != nil || len(points) != 1 || len(points[0].Runs) != 2 {
		t.Fatalf("one invocation: %v", err)
	}
}

// TestLoadSeedSweep: a sweep that varies the seed (--sweep seed=1,2)
// has a point per seed although the configuration's hash, which leaves
// the seed out, is the same; labelled by the seed. With the seed out of
// the grouping the two points were one, refused as two invocations.
func TestLoadSeedSweep(t *testing.T) {
	dir := t.TempDir()
	for i, seed := range []uint64{1, 2} {
		for rep := range 2 {
			writeFixture(t, dir, fixture{point: i, rep: rep, sched: "cwr", times: []float64{1}, baseSeed: seed, sha: "same",
				vary: []string{fmt.Sprintf("seed=%d", seed)}})
		}
	}
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLabels(points, nil); err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || len(points[0].Runs) != 2 || points[0].Label != "seed=1" || points[1].Label != "seed=2" {
		t.Fatalf("%d points: %+v", len(points), points)
	}
}

// TestLoadSameHashOtherValues: points whose configurations hash alike
// but whose varied values differ (lowrtt in a sweep of a cwr-plus
// option it does not have; another invocation that sets a key to its
// default) are points of their own, each labelled by its values, "(not
// set)" for a key it does not vary.
func TestLoadSameHashOtherValues(t *testing.T) {
	dir := t.TempDir()
	for i, v := range [][]string{{"transport.scheduler_options.careful_start=true"}, {"transport.scheduler_options.careful_start=false"}, nil} {
		writeFixture(t, filepath.Join(dir, fmt.Sprint(i)), fixture{point: i, sched: "lowrtt", times: []float64{1}, baseSeed: 1, sha: "same", vary: v})
	}
	labels := loadLabels(t, dir)
	want := []string{"scheduler_options.careful_start=true", "scheduler_options.careful_start=false", "scheduler_options.careful_start=(not set)"}
	if !slices.Equal(labels, want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
}

// loadLabels loads the runs below dir and returns their points' default
// labels.
func loadLabels(t *testing.T, dir string) []string {
	t.Helper()
	points, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetLabels(points, nil); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, p := range points {
		labels = append(labels, p.Label)
	}
	return labels
}

// TestLabelBackend: a point of the file's backend beside one of
// --backend loopback is labelled by the backend its runs record, not
// "(not set)"; runs of one configuration on the namespace backend with
// netem and with the forwarder (two invocations, --emulator) are two
// points, labelled by their emulators.
func TestLabelBackend(t *testing.T) {
	dir := t.TempDir()
	netns := []string{"backend=netns"}
	for i, f := range []fixture{{backend: "sim"}, {backend: "loopback", vary: []string{"backend=loopback"}, emulator: "linkemu"},
		{backend: "netns", vary: netns, emulator: "forwarder", sha: "ns"}, {backend: "netns", vary: netns, emulator: "netem", sha: "ns"}} {
		f.sched, f.times, f.baseSeed = "cwr", []float64{1}, 1
		f.point = min(i, 2)
		writeFixture(t, filepath.Join(dir, fmt.Sprint(i)), f)
	}
	labels := loadLabels(t, dir)
	want := []string{"backend=sim emulator=(not set)", "backend=loopback emulator=linkemu", "backend=netns emulator=forwarder", "backend=netns emulator=netem"}
	if !slices.Equal(labels, want) {
		t.Fatalf("labels %q, want %q", labels, want)
	}
}

// TestLoadVariants: the same sweep run twice with different settings of
// a key it does not vary (two --set), into grid-a and grid-b, plotted
// together. Each scenario's single path and multipath points must pair
// within their own run: grid-a's ratio 200/100 = 2, grid-b's 300/100 =
// 3, each named after its directory. Under one name, grid-b's points
// would replace grid-a's and leave one ratio.
func TestLoadVariants(t *testing.T) {
	dir := t.TempDir()
	for _, g := range []struct {
		sub, sha string
		single   float64
	}{{"grid-a", "a", 200}, {"grid-b", "b", 300}} {
		d := filepath.Join(dir, g.sub, "fix")
		for rep := range 2 {
			writeFixture(t, d, fixture{point: 0, rep: rep, sched: "cwr", vary: []string{"scenario=s1", "mode=single"}, times: []float64{g.single}, baseSeed: 1, sha: g.sha + "0"})
			writeFixture(t, d, fixture{point: 1, rep: rep, sched: "cwr", vary: []string{"scenario=s1", "mode=multi"}, times: []float64{100}, baseSeed: 1, sha: g.sha + "1"})
		}
	}
	points, err := Load([]string{filepath.Join(dir, "grid-a", "fix"), filepath.Join(dir, "grid-b", "fix")})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ratioLine(t, points), "fix (grid-a) 2, fix (grid-b) 3"; got != want {
		t.Fatalf("ratios %q, want %q", got, want)
	}
	if points[0].Experiment != "fix" || points[0].Variant != "grid-a" {
		t.Fatalf("point 0: experiment %q, variant %q", points[0].Experiment, points[0].Variant)
	}
	// Without another configuration of the same points, no variant.
	points, err = Load([]string{filepath.Join(dir, "grid-a", "fix")})
	if err != nil || points[0].Name != "fix" || points[0].Variant != "" {
		t.Fatalf("one run: %v, name %q, variant %q", err, points[0].Name, points[0].Variant)
	}
}

// TestLoadSetApart: the same sweep run twice with --set KEY=A and
// --set KEY=B (the values in each point's varied keys, so no point has
// the same name and values as another) into grid-a and grid-b: each
// directory is a sweep of its own, not one pooled: grid-a's ratio 2,
// grid-b's 3.
func TestLoadSetApart(t *testing.T) {
	dir := t.TempDir()
	for _, g := range []struct {
		sub, set string
		single   float64
	}{{"grid-a", "transport.x=A", 200}, {"grid-b", "transport.x=B", 300}} {
		d := filepath.Join(dir, g.sub, "fix")
		for rep := range 2 {
			writeFixture(t, d, fixture{point: 0, rep: rep, sched: "cwr", vary: []string{g.set, "scenario=s1", "mode=single"}, times: []float64{g.single}, baseSeed: 1, sha: g.sub + "0"})
			writeFixture(t, d, fixture{point: 1, rep: rep, sched: "cwr", vary: []string{g.set, "scenario=s1", "mode=multi"}, times: []float64{100}, baseSeed: 1, sha: g.sub + "1"})
		}
	}
	points, err := Load([]string{filepath.Join(dir, "grid-a", "fix"), filepath.Join(dir, "grid-b", "fix")})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := RatioTable(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.MD) != 7 || tb.MD[1][0] != "fix (grid-a)" || tb.MD[1][6] != "2.00" || tb.MD[4][0] != "fix (grid-b)" || tb.MD[4][6] != "3.00" {
		t.Fatalf("ratio table %q", tb.MD)
	}
}

// TestLoadRefusesTwoConfigurationsInOneDirectory: one directory holding
// runs of one grid point in two configurations (an edited file rerun
// beside the old runs' leftovers) is refused, not pooled, whatever other
// directory beside it.
func TestLoadRefusesTwoConfigurationsInOneDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFixture(t, filepath.Join(dir, "a", "fix"), fixture{point: 0, rep: 0, sched: "cwr", times: []float64{1}, baseSeed: 1, sha: "x"})
	writeFixture(t, filepath.Join(dir, "b", "fix"), fixture{point: 0, rep: 0, sched: "cwr", times: []float64{1}, baseSeed: 1, sha: "y"})
	writeFixture(t, filepath.Join(dir, "b", "fix"), fixture{point: 0, rep: 1, sched: "cwr", times: []float64{1}, baseSeed: 1, sha: "z"})
	_, err := Load([]string{filepath.Join(dir, "a", "fix"), filepath.Join(dir, "b", "fix")})
	if err == nil || !strings.Contains(err.Error(), "different configurations in one directory") {
		t.Fatalf("%v, want a refusal", err)
	}
}

func TestDistinctParts(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		want []string
	}{
		{[]string{"grid-a/fix", "grid-b/fix"}, []string{"grid-a", "grid-b"}},
		{[]string{"/tmp/x/five/c-lowbdp", "/tmp/x/windows/c-lowbdp", "/tmp/x/all/c-lowbdp"}, []string{"five", "windows", "all"}},
		{[]string{"a/b/c", "a/d/c/e"}, []string{"b/c", "d/c/e"}},
		{[]string{"more/a", "more/a/b"}, []string{"a", "a/b"}},
	} {
		got := distinctParts(tc.dirs)
		for i, d := range tc.dirs {
			if got[d] != tc.want[i] {
				t.Errorf("%q: %q is %q, want %q", tc.dirs, d, got[d], tc.want[i])
			}
		}
	}
}

// TestLoadBaselines: runs of a baseline transport (tcp: no path
// scheduler in summary.json) load, named and styled by their kind, beside
// mpq's; a summary with neither is still refused.
func TestLoadBaselines(t *testing.T) {
	points := loadFixtures(t,
		fixture{point: 0, sched: "lowrtt", kind: "mpq", vary: []string{"cc=mpq-cubic"}, times: []float64{1}},
		fixture{point: 1, kind: "tcp", vary: []string{"cc=tcp-cubic"}, times: []float64{1}},
	)
	if len(points) != 2 || points[0].Scheduler != "lowrtt" || points[1].Scheduler != "tcp" {
		t.Fatalf("points %+v", points)
	}
	dir := t.TempDir()
	writeFixture(t, dir, fixture{point: 0, kind: "mpq", vary: []string{"x=1"}, times: []float64{1}})
	if _, err := Load([]string{dir}); err == nil || !strings.Contains(err.Error(), "no name or path_scheduler") {
		t.Errorf("a summary of mpq without a path scheduler: %v", err)
	}
}

// TestLoadSweepsApart: two invocations of one sweep into grid-a and
// grid-b that share a grid point's configuration, because what differs
// between them changes one mode only (a file edited in its multi mode;
// a --set of a key that only the single mode's case sets, which puts it
// among grid-a's varied keys). LoadSweeps gives each directory its own
// points, so that each scenario pairs within its invocation: single
// path time over multipath time, computed by hand. Load refuses the
// shared configuration as one grid point run twice where the varied
// values are the same too.
func TestLoadSweepsApart(t *testing.T) {
	type sweep struct {
		set                 string // a --set in the varied keys ("": none)
		single, multi       float64
		singleSHA, multiSHA string
	}
	for _, tc := range []struct {
		name    string
		a, b    sweep
		want    string // the ratios
		loadErr string // Load's refusal
	}{
		{"the single mode the same, multi edited",
			sweep{"", 200, 100, "s", "m-a"}, sweep{"", 200, 50, "s", "m-b"},
			"fix (grid-a) 2, fix (grid-b) 4", "the same repetition 0"},
		{"the multi mode the same, single set",
			sweep{"transport.x=false", 200, 100, "s-a", "m"}, sweep{"", 300, 100, "s-b", "m"},
			"fix (grid-a) 2, fix (grid-b) 3", ""}, // Load: apart by their varied values
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for sub, g := range map[string]sweep{"grid-a": tc.a, "grid-b": tc.b} {
				d := filepath.Join(dir, sub, "fix")
				var vary []string
				if g.set != "" {
					vary = []string{g.set}
				}
				for rep := range 2 {
					writeFixture(t, d, fixture{point: 0, rep: rep, sched: "cwr", vary: append(slices.Clone(vary), "scenario=s1", "mode=single"),
						times: []float64{g.single}, baseSeed: 1, sha: g.singleSHA})
					writeFixture(t, d, fixture{point: 1, rep: rep, sched: "cwr", vary: append(slices.Clone(vary), "scenario=s1", "mode=multi"),
						times: []float64{g.multi}, baseSeed: 1, sha: g.multiSHA})
				}
			}
			dirs := []string{filepath.Join(dir, "grid-a", "fix"), filepath.Join(dir, "grid-b", "fix")}
			if _, err := Load(dirs); tc.loadErr == "" && err != nil {
				t.Errorf("Load: %v", err)
			} else if tc.loadErr != "" && (err == nil || !strings.Contains(err.Error(), tc.loadErr)) {
				t.Errorf("Load: %v, want a refusal: %s", err, tc.loadErr)
			}
			points, err := LoadKind("ratio", dirs)
			if err != nil {
				t.Fatal(err)
			}
			if got := ratioLine(t, points); got != tc.want {
				t.Fatalf("ratios %q, want %q", got, tc.want)
			}
		})
	}
}

// ratioLine is the points' single path over multipath ratios, "NAME
// RATIO, ...".
func ratioLine(t *testing.T, points []*Point) string {
	t.Helper()
	rs, err := Ratios(points, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, fmt.Sprintf("%s %g", r.Name, r.Ratio))
	}
	return strings.Join(got, ", ")
}
