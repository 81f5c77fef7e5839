package experiment

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// casesFile sweeps two scenarios (named) and two modes (unnamed keys
// would label them; here named) beside a plain key.
const casesFile = paperFile + `
[sweep]
"source.s1.size" = ["10kB", "20kB"]

[[sweep.scenario]]
name = "a"
"path.0.rate" = "10Mbit"
"path.1.rtt" = "5ms"

[[sweep.scenario]]
name = "b"
"path.0.rate" = "20Mbit"
"path.1.rtt" = "7ms"
"path.1.loss" = "1%"

[[sweep.mode]]
name = "single"
"transport.multipath" = false
"transport.congestion" = "cubic"

[[sweep.mode]]
name = "multi"
"transport.multipath" = true
"transport.congestion" = "olia"
`

func TestSweepCases(t *testing.T) {
	runs, err := Parse("c.toml", []byte(casesFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 8 {
		t.Fatalf("%d runs, want 2 sizes x 2 scenarios x 2 modes = 8", len(runs))
	}
	var got []string
	for _, r := range runs {
		got = append(got, strings.Join(r.Label, ","))
	}
	// Dimensions in the order of their first line: the [sweep] key, then
	// the scenarios, then the modes (fastest).
	want := []string{
		"source.s1.size=10kB,scenario=a,mode=single", "source.s1.size=10kB,scenario=a,mode=multi",
		"source.s1.size=10kB,scenario=b,mode=single", "source.s1.size=10kB,scenario=b,mode=multi",
		"source.s1.size=20kB,scenario=a,mode=single", "source.s1.size=20kB,scenario=a,mode=multi",
		"source.s1.size=20kB,scenario=b,mode=single", "source.s1.size=20kB,scenario=b,mode=multi",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("labels\n%v\nwant\n%v", got, want)
	}
	for i, r := range runs {
		if r.Point != i || !reflect.DeepEqual(r.Vary, r.Label) {
			t.Fatalf("run %d: point %d vary %v", i, r.Point, r.Vary)
		}
	}
	// Every key of a case applies together; the others keep the file's.
	b := runs[3]
	if b.Paths[0].Up.Rate != 20e6 || b.Paths[1].RTT() != 7*time.Millisecond || b.Paths[1].Down.Loss != 0.01 || b.Paths[0].Up.Loss != 0.0005 {
		t.Fatalf("scenario b: %+v", b.Paths)
	}
	if !b.Transport.Multipath || b.Transport.Congestion != "olia" {
		t.Fatalf("mode multi: %+v", b.Transport)
	}
	a := runs[0]
	if a.Paths[0].Up.Rate != 10e6 || a.Paths[1].Up.Loss != 0.0005 || a.Transport.Multipath || a.Transport.Congestion != "cubic" {
		t.Fatalf("scenario a, single: %+v %+v", a.Paths, a.Transport)
	}
}

// TestSweepCasesUnnamedAndOverride: an unnamed case is labelled by the keys
// it sets; --set of a key a case sets fixes it in every case.
func TestSweepCasesUnnamedAndOverride(t *testing.T) {
	doc := paperFile + `
[[sweep.link]]
"path.0.rate" = "10Mbit"
"path.0.rtt" = "20ms"

[[sweep.link]]
"path.0.rate" = "20Mbit"
"path.0.rtt" = "40ms"
`
	runs, err := Parse("c.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || strings.Join(runs[1].Label, ",") != "path.0.rate=20Mbit,path.0.rtt=40ms" {
		t.Fatalf("%d runs, label %v", len(runs), runs[len(runs)-1].Label)
	}
	set, _ := ParseOverride("path.0.rate=5Mbit")
	runs, err = Parse("c.toml", []byte(doc), []Override{set})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Paths[0].Up.Rate != 5e6 {
			t.Fatalf("override lost: %v", r.Paths[0].Up.Rate)
		}
	}
	if r := runs[1]; r.Paths[0].RTT() != 40*time.Millisecond || strings.Join(r.Label, ",") != "path.0.rate=5Mbit,path.0.rtt=40ms" /* the override, then the case without it */ {
		t.Fatalf("rtt %v label %v", r.Paths[0].RTT(), r.Label)
	}
}

// TestSweepCaseErrors: every problem of a case names the file, the line
// and the key (and the case), all at once.
func TestSweepCaseErrors(t *testing.T) {
	base := strings.Count(paperFile, "\n") + 1 // the line after paperFile
	tests := []struct {
		name, cases string
		want        []string
	}{
		{"bad value", "[[sweep.s]]\nname = \"x\"\n\"path.1.rate\" = \"fast\"\n",
			[]string{lineKey(base+2, "path.1.rate (from [[sweep.s]] x): bad rate")}},
		{"unknown key", "[[sweep.s]]\n\"path.0.rat\" = \"1Mbit\"\n",
			[]string{lineKey(base+1, "path.0.rat (from [[sweep.s]] 0)")}},
		{"no such path", "[[sweep.s]]\n\"path.5.rate\" = \"1Mbit\"\n",
			[]string{lineKey(base+1, "path.5.rate (from [[sweep.s]] 0): no path \"5\"")}},
		{"name twice", "[[sweep.s]]\nname = \"x\"\nduration = \"1s\"\n[[sweep.s]]\nname = \"x\"\nduration = \"2s\"\n",
			[]string{lineKey(base+4, "sweep.s.name: \"x\" names two cases (the other at line "+itoa(base+1)+")")}},
		{"name not a string", "[[sweep.s]]\nname = 3\nduration = \"1s\"\n",
			[]string{lineKey(base+1, "sweep.s.name: must be a non-empty string")}},
		{"name with a slash", "[[sweep.s]]\nname = \"a/b\"\nduration = \"1s\"\n",
			[]string{lineKey(base+1, "sweep.s.name: \"a/b\": a case name may not contain")}},
		{"sets nothing", "[[sweep.s]]\nname = \"x\"\n",
			[]string{lineKey(base, "sweep.s: case 0 sets no key")}},
		{"sets repeat", "[[sweep.s]]\nrepeat = 2\n",
			[]string{lineKey(base+1, "sweep.s.repeat: cannot be set by a case")}},
		{"two problems at once", "[[sweep.s]]\n\"duration\" = \"x\"\n[[sweep.s]]\n\"path.0.loss\" = \"200%\"\n",
			[]string{lineKey(base+1, "duration (from [[sweep.s]] 0): bad duration"), lineKey(base+3, "path.0.loss (from [[sweep.s]] 1)")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("e.toml", []byte(paperFile+tc.cases), nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error\n%v\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func lineKey(line int, rest string) string { return "e.toml:" + itoa(line) + ": " + rest }

func itoa(i int) string { return strconv.Itoa(i) }

// TestInlineTablesStayValues: an inline array of inline tables under
// [sweep] is still a key's list of values, as before case lists.
func TestInlineTablesStayValues(t *testing.T) {
	doc := paperFile + "[sweep]\n\"transport.scheduler_options\" = [{ horizon = \"next\" }, { horizon = \"srtt\" }]\n"
	runs, err := Parse("c.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Transport.SchedulerOptions["horizon"] != "next" || runs[1].Transport.SchedulerOptions["horizon"] != "srtt" {
		t.Fatalf("%d runs: %v", len(runs), runs)
	}
}

// TestSweepCasesChosen: --sweep NAME=a,b of a [[sweep.NAME]] list keeps
// the cases named, in that order, with their labels (the runs' directory
// names stay those of the whole grid); an unknown name is refused with
// the list's names and the closest one, a list without names and a name
// given twice too.
func TestSweepCasesChosen(t *testing.T) {
	parse := func(doc string, sweeps ...string) ([]Experiment, error) {
		var os []Override
		for _, s := range sweeps {
			o, err := ParseSweep(s)
			if err != nil {
				t.Fatal(err)
			}
			os = append(os, o)
		}
		return Parse("c.toml", []byte(doc), os)
	}
	runs, err := parse(casesFile, "mode=multi", "scenario=b,a")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, strings.Join(r.Label, ","))
	}
	want := []string{
		"source.s1.size=10kB,scenario=b,mode=multi", "source.s1.size=10kB,scenario=a,mode=multi",
		"source.s1.size=20kB,scenario=b,mode=multi", "source.s1.size=20kB,scenario=a,mode=multi",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("labels\n%v\nwant\n%v", got, want)
	}
	if r := runs[0]; r.Paths[0].Up.Rate != 20e6 || r.Transport.Congestion != "olia" {
		t.Fatalf("scenario b, mode multi: %+v %+v", r.Paths[0].Up, r.Transport)
	}
	unnamed := paperFile + "\n[[sweep.link]]\n\"path.0.rate\" = \"10Mbit\"\n\n[[sweep.link]]\n\"path.0.rate\" = \"20Mbit\"\n"
	for _, tc := range []struct {
		doc, sweep, want string
	}{
		{casesFile, "scenario=c", `c.toml: scenario (from --sweep scenario=c): no case of [[sweep.scenario]] is named "c" (its cases: a, b)`},
		{casesFile, "mode=mulit", `no case of [[sweep.mode]] is named "mulit" (its cases: single, multi); did you mean "multi"?`},
		{casesFile, "scenario=a,a", `case "a" named twice`},
		{unnamed, "link=x", `the cases of [[sweep.link]] have no names to choose them by`},
	} {
		_, err := parse(tc.doc, tc.sweep)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--sweep %s: %v, want %s", tc.sweep, err, tc.want)
		}
	}
}
