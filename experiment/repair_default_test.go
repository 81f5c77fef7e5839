package experiment

import (
	"fmt"
	"testing"
)

// TestRepairDefault: transport.repair is on by default exactly when the
// path scheduler sends parity (cwr-plus with parity), and a written
// value wins.
func TestRepairDefault(t *testing.T) {
	for _, tc := range []struct {
		transport string
		want      bool
	}{
		{`path_scheduler = "cwr-plus"`, true},
		{`path_scheduler = "cwr-plus"` + "\nscheduler_options = { parity = false }", false},
		{`path_scheduler = "cwr-plus"` + "\nrepair = false", false},
		{`path_scheduler = "lowrtt"`, false},
		{`path_scheduler = "lowrtt"` + "\nrepair = true", true},
	} {
		doc := fmt.Sprintf("name = \"r\"\nduration = \"1s\"\n[[path]]\n[[path]]\n[transport]\n%s\n[[source]]\nkind = \"bulk\"\n", tc.transport)
		runs, err := Parse("r.toml", []byte(doc), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.transport, err)
		}
		if got := runs[0].Transport.Repair; got != tc.want {
			t.Errorf("%q: repair %v, want %v", tc.transport, got, tc.want)
		}
	}
}
