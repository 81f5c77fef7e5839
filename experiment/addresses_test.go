package experiment

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

const addrFile = `name = "addrs"
[[path]]
rate = "10Mbit"
%s
[[path]]
rate = "10Mbit"
%s
[[source]]
name = "s"
kind = "bulk"
`

func parseAddrs(t *testing.T, p0, p1 string) (*Experiment, error) {
	t.Helper()
	doc := strings.Replace(strings.Replace(addrFile, "%s", p0, 1), "%s", p1, 1)
	runs, err := Parse("a.toml", []byte(doc), nil)
	if err != nil {
		return nil, err
	}
	return &runs[0], nil
}

// Paths default to the simulator's 10.i.0.1/24 and 10.i.0.2/24; explicit
// addresses replace them, survive the resolved file, and bad ones are
// reported at their key.
func TestAddresses(t *testing.T) {
	e, err := parseAddrs(t, "", "")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]string{{"10.0.0.1/24", "10.0.0.2/24"}, {"10.1.0.1/24", "10.1.0.2/24"}} {
		c, s := e.Addrs(i)
		if c.String() != want[0] || s.String() != want[1] {
			t.Errorf("path %d: %v %v, want %v", i, c, s, want)
		}
	}
	e, err = parseAddrs(t, `client_address = "192.168.7.1/30"`+"\n"+`server_address = "192.168.7.2/30"`, "")
	if err != nil {
		t.Fatal(err)
	}
	if c, s := e.Addrs(0); c != netip.MustParsePrefix("192.168.7.1/30") || s != netip.MustParsePrefix("192.168.7.2/30") {
		t.Errorf("path 0: %v %v", c, s)
	}
	runs, err := Parse("r.toml", e.ResolvedTOML(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(runs[0].Paths, e.Paths) {
		t.Errorf("resolved file gives %+v", runs[0].Paths)
	}

	bad := []struct{ p0, p1, want string }{
		{`client_address = "10.9.0.1/24"`, "", "a.toml:4: path.0.client_address: give server_address too"},
		{`server_address = "10.9.0.2/24"`, "", "path.0.server_address: give client_address too"},
		{`client_address = "10.9.0.1/24"` + "\n" + `server_address = "10.8.0.2/24"`, "", "not in one subnet"},
		{`client_address = "10.9.0.1/24"` + "\n" + `server_address = "10.9.0.1/24"`, "", "is the client's address too"},
		{`client_address = "10.9.0.0/24"` + "\n" + `server_address = "10.9.0.2/24"`, "", "not the subnet itself"},
		{`client_address = "10.9.0.1"` + "\n" + `server_address = "10.9.0.2/24"`, "", `bad address "10.9.0.1"`},
		{`client_address = 1` + "\n" + `server_address = "10.9.0.2/24"`, "", "want an address"},
		{`client_address = "10.1.0.5/16"` + "\n" + `server_address = "10.1.0.6/16"`, "", "paths 0 and 1 have overlapping subnets"},
	}
	for _, tt := range bad {
		_, err := parseAddrs(t, tt.p0, tt.p1)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want %q", tt.p0, err, tt.want)
		}
	}
}
