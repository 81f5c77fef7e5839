package scheduler

import (
	"strings"
	"testing"
)

// TestResolvePathOptions: every option of a scheduler resolves to its
// value, set or default; cwr-red-fast is cwr-red with other defaults; bad
// names, types and values are reported one per key, sorted.
func TestResolvePathOptions(t *testing.T) {
	red, errs := ResolvePathOptions("cwr-red", nil)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := "credit=false, credit_rtts=1, hold_unwritten=true, horizon=srtt, idle_escape=true, path_choice=packet, resend_lost_copy_on=any, reservation=partial, retransmission_size=full, skip_held_back=false, stagger_clear=false, stagger_hold_rtts=32, stagger_startup=false, wait_for_fast_path=false"
	if red.String() != want {
		t.Fatalf("cwr-red defaults %s, want %s", red, want)
	}
	fast, _ := ResolvePathOptions("cwr-red-fast", nil)
	want = "credit=false, credit_rtts=1, hold_unwritten=true, horizon=srtt, idle_escape=true, path_choice=packet, resend_lost_copy_on=fast, reservation=whole, retransmission_size=lost, skip_held_back=false, stagger_clear=false, stagger_hold_rtts=32, stagger_startup=false, wait_for_fast_path=true"
	if fast.String() != want {
		t.Fatalf("cwr-red-fast defaults %s, want %s", fast, want)
	}
	set, errs := ResolvePathOptions("cwr", map[string]any{"equal_rtt": "alternate", "idle_escape": false})
	if len(errs) != 0 || set["equal_rtt"] != "alternate" || set.Bool("idle_escape") || set["reservation"] != "partial" {
		t.Fatalf("cwr with options: %s %v", set, errs)
	}
	_, errs = ResolvePathOptions("cwr", map[string]any{"zeta": 1, "reservation": "all", "idle_escape": "no", "horizon": "srtt"})
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	wantErrs := []string{
		`idle_escape: want true or false, got no`,
		`reservation: "all" is not one of "partial", "whole"`,
		`zeta: unknown option of cwr "zeta"`,
	}
	if len(got) != len(wantErrs) {
		t.Fatalf("errors %q", got)
	}
	for i := range wantErrs {
		if !strings.HasPrefix(got[i], wantErrs[i]) {
			t.Fatalf("error %d: %q, want %q", i, got[i], wantErrs[i])
		}
	}
	if _, errs := ResolvePathOptions("lowrtt", map[string]any{"x": true}); len(errs) != 1 {
		t.Fatalf("lowrtt with an option: %v", errs)
	}
	if _, err := NewPathSchedulerWith("cwr-red", map[string]any{"reservation": "all"}); err == nil {
		t.Fatal("built with a bad option")
	}
	s, err := NewPathSchedulerWith("cwr-red-fast", map[string]any{"wait_for_fast_path": false})
	if err != nil || s.Name() != "cwr-red-fast" || s.(*CWRRed).waitFast || !s.(*CWRRed).resendFast {
		t.Fatalf("cwr-red-fast without waiting: %v %+v", err, s)
	}
	typed := fast.Typed("cwr-red-fast")
	if typed["wait_for_fast_path"] != true || typed["reservation"] != "whole" {
		t.Fatalf("typed %v", typed)
	}
}

// TestResolveNumericChoice checks that an option whose choices are
// numbers takes a TOML integer as well as a string (credit_rtts = 3), and
// refuses a number outside its choices.
func TestResolveNumericChoice(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
		ok   bool
	}{
		{int64(3), "3", true},
		{"2", "2", true},
		{3, "3", true},
		{int64(5), "", false},
		{3.0, "", false},
	} {
		o, errs := ResolvePathOptions("cwr-plus", map[string]any{OptCreditRTTs: tc.v})
		if ok := len(errs) == 0; ok != tc.ok || ok && o[OptCreditRTTs] != tc.want {
			t.Errorf("credit_rtts = %#v: %v, errors %v; want %q, ok %v", tc.v, o[OptCreditRTTs], errs, tc.want, tc.ok)
		}
	}
}

// TestWrittenOptions: stagger_hold_rtts, added after results with the
// stagger's options were published, is left out of a run's written
// configuration while it has its default and stagger_startup is off
// (configurations of runs it cannot affect stay the same), and written
// otherwise.
func TestWrittenOptions(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]any
		want string // the written value, "" when left out
	}{
		{nil, ""},
		{map[string]any{OptStaggerHoldRTTs: "none"}, "none"},
		{map[string]any{OptStaggerStartup: true}, "32"},
		{map[string]any{OptStaggerStartup: true, OptStaggerHoldRTTs: int64(8)}, "8"},
	} {
		o, errs := ResolvePathOptions("cwr", tc.set)
		if len(errs) != 0 {
			t.Fatal(errs)
		}
		w := o.Written("cwr")
		got, _ := w[OptStaggerHoldRTTs].(string)
		if got != tc.want || len(w) != len(o)-map[bool]int{true: 1, false: 0}[tc.want == ""] {
			t.Errorf("%v: written %v, want stagger_hold_rtts %q and every other option", tc.set, w, tc.want)
		}
	}
}
