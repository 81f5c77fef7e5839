package names

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"cwr", "cwr-red", "lowrtt", "redundant", "round-robin", "sr"}
	for _, tc := range []struct{ in, want string }{
		{"lowrt", "lowrtt"},
		{"LowRTT", ""},
		{"cwr-reed", "cwr-red"},
		{"round", "round-robin"},
		{"r", ""}, // begins several
		{"quic", ""},
	} {
		if got := Closest(tc.in, known); got != tc.want {
			t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	known := []string{"newreno", "newreno-cwl"}
	if msg := Check("congestion controller", "newreno", known); msg != "" {
		t.Fatalf("known name refused: %s", msg)
	}
	want := `unknown congestion controller "cubic" (known: newreno, newreno-cwl)`
	if msg := Check("congestion controller", "cubic", known); msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
	want = `unknown congestion controller "newrenno" (known: newreno, newreno-cwl); did you mean "newreno"?`
	if msg := Check("congestion controller", "newrenno", known); msg != want {
		t.Fatalf("got %q, want %q", msg, want)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"lowrt", "lowrtt", 1}, {"cwr", "crw", 2}} {
		if d := editDistance(tc.a, tc.b); d != tc.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, d, tc.d)
		}
	}
}
