package experiment

import (
	"strings"
	"testing"
)

// TestSchedulerOptionsCheckedAtLoad: transport.scheduler_options are
// checked against the options of the file's path scheduler when the file
// loads, every problem with its file, line and key.
func TestSchedulerOptionsCheckedAtLoad(t *testing.T) {
	tests := []struct {
		name, replace string
		over          []string
		want          []string
	}{
		{"unknown option", "[transport.scheduler_options]\nwait_for_fast_pat = true\n", nil,
			[]string{`e.toml:21: transport.scheduler_options.wait_for_fast_pat: unknown option of cwr-red "wait_for_fast_pat"`}},
		{"bad value and bad type", "[transport.scheduler_options]\nreservation = \"most\"\nwait_for_fast_path = \"yes\"\n", nil,
			[]string{`e.toml:21: transport.scheduler_options.reservation: "most" is not one of "partial", "whole"`,
				`e.toml:22: transport.scheduler_options.wait_for_fast_path: want true or false, got yes`}},
		{"inline table", "scheduler_options = { horizon = 3 }\n", nil,
			[]string{`e.toml:20: transport.scheduler_options.horizon: 3 is not one of "srtt", "next"`}},
		{"option of another scheduler", "[transport.scheduler_options]\nequal_rtt = \"alternate\"\n", nil,
			[]string{`e.toml:21: transport.scheduler_options.equal_rtt: path scheduler "cwr-red" has no option "equal_rtt" (cwr has it)`}},
		{"from --set", "", []string{"transport.scheduler_options.resend_lost_copy_on=slow"},
			[]string{`e.toml: transport.scheduler_options.resend_lost_copy_on (from --set transport.scheduler_options.resend_lost_copy_on=slow): "slow" is not one of "any", "fast"`}},
		{"lowrtt has none", "[transport.scheduler_options]\nwait_for_fast_path = true\n", []string{"transport.path_scheduler=lowrtt"},
			[]string{`e.toml:21: transport.scheduler_options.wait_for_fast_path: path scheduler "lowrtt" has no option "wait_for_fast_path" (cwr-red, cwr-red-fast have it)`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "cwr-red"`, 1)
			doc = strings.Replace(doc, "stream_scheduler = \"priority-fifo\"\n", "stream_scheduler = \"priority-fifo\"\n"+tc.replace, 1)
			_, err := Parse("e.toml", []byte(doc), overrides(t, tc.over...))
			checkProblems(t, err, tc.want)
		})
	}
}

// TestSchedulerOptionsResolvedAndSwept: options resolve with every
// default, are echoed in config.resolved.toml (which reads back to the
// same options), and can be swept; a sweep over schedulers leaves each
// scheduler the options it has.
func TestSchedulerOptionsResolvedAndSwept(t *testing.T) {
	doc := strings.Replace(paperFile, `path_scheduler = "cwr"`, `path_scheduler = "cwr-red"`, 1) + `
[sweep]
"transport.path_scheduler" = ["cwr-red", "lowrtt", "cwr"]
"transport.scheduler_options.wait_for_fast_path" = [false, true]
`
	runs, err := Parse("e.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 6 {
		t.Fatalf("%d runs", len(runs))
	}
	red := runs[1].Transport
	if red.PathScheduler != "cwr-red" || red.SchedulerOptions["wait_for_fast_path"] != "true" || red.SchedulerOptions["reservation"] != "partial" {
		t.Fatalf("cwr-red run: %+v", red)
	}
	if o := runs[2].Transport.SchedulerOptions; runs[2].Transport.PathScheduler != "lowrtt" || len(o) != 0 {
		t.Fatalf("lowrtt run: options %v", o)
	}
	if o := runs[5].Transport.SchedulerOptions; o["wait_for_fast_path"] != "" || o["equal_rtt"] != "first" {
		t.Fatalf("cwr run: options %v", o)
	}
	if runs[0].PointSHA256() == runs[1].PointSHA256() {
		t.Fatal("an option does not change the point's identity")
	}
	toml := string(runs[1].ResolvedTOML())
	const line = `scheduler_options = { credit = false, credit_rtts = "1", hold_unwritten = true, horizon = "srtt", idle_escape = true, path_choice = "packet", resend_lost_copy_on = "any", reservation = "partial", retransmission_size = "full", skip_held_back = false, stagger_clear = false, stagger_startup = false, wait_for_fast_path = true }`
	if !strings.Contains(toml, line+"\n") {
		t.Fatalf("resolved TOML without\n%s:\n%s", line, toml)
	}
	back, err := Parse("r.toml", []byte(toml), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := back[0].Transport.SchedulerOptions.String(); got != red.SchedulerOptions.String() {
		t.Fatalf("read back %s, want %s", got, red.SchedulerOptions)
	}
	if strings.Contains(string(runs[2].ResolvedTOML()), "\nscheduler_options = ") {
		t.Fatal("lowrtt run echoes scheduler options")
	}
}

// overrides parses --set values.
func overrides(t *testing.T, sets ...string) []Override {
	t.Helper()
	var over []Override
	for _, s := range sets {
		o, err := ParseOverride(s)
		if err != nil {
			t.Fatal(err)
		}
		over = append(over, o)
	}
	return over
}

// TestSchedulerOptionSetBesideSweptSchedulers: --set of an option of one
// scheduler beside --sweep transport.path_scheduler of several applies
// to those that have it and is left out for the others, as for a file's
// [sweep]; a scheduler alone without it is still refused.
func TestSchedulerOptionSetBesideSweptSchedulers(t *testing.T) {
	over := overrides(t, "transport.scheduler_options.avoid_silent=true")
	sw, err := ParseSweep("transport.path_scheduler=lowrtt,cwr-plus")
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Parse("e.toml", []byte(paperFile), append(over, sw))
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || len(runs[0].Transport.SchedulerOptions) != 0 || runs[1].Transport.SchedulerOptions["avoid_silent"] != "true" {
		t.Fatalf("%d runs: options %v and %v", len(runs), runs[0].Transport.SchedulerOptions, runs[1].Transport.SchedulerOptions)
	}
	_, err = Parse("e.toml", []byte(paperFile), overrides(t, "transport.path_scheduler=lowrtt", "transport.scheduler_options.avoid_silent=true"))
	if err == nil || !strings.Contains(err.Error(), `path scheduler "lowrtt" has no option "avoid_silent" (cwr-plus has it)`) {
		t.Fatalf("lowrtt alone: %v", err)
	}
}
