package cloudlab

import (
	"encoding/xml"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// python returns the Python with geni-lib: $MPQ_GENILIB_PYTHON (CI's
// virtual environment, see .ci/run) or python3. Without geni-lib the
// tests skip, unless MPQ_REQUIRE_GENILIB=1 (CI) makes that a failure.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("MPQ_GENILIB_PYTHON")
	if py == "" {
		py = "python3"
	}
	out, err := exec.Command(py, "-c", "import geni.rspec.pg").CombinedOutput()
	if err != nil {
		msg := "geni-lib is not installed for " + py + " (pip install geni-lib==0.9.9.4 six, or set MPQ_GENILIB_PYTHON): " + strings.TrimSpace(string(out))
		if os.Getenv("MPQ_REQUIRE_GENILIB") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

type rspec struct {
	Nodes []struct {
		ID    string `xml:"client_id,attr"`
		Image struct {
			Name string `xml:"name,attr"`
		} `xml:"sliver_type>disk_image"`
		Interfaces []struct {
			ID string `xml:"client_id,attr"`
			IP struct {
				Address string `xml:"address,attr"`
				Netmask string `xml:"netmask,attr"`
			} `xml:"ip"`
		} `xml:"interface"`
		Execute []struct {
			Command string `xml:"command,attr"`
		} `xml:"services>execute"`
	} `xml:"node"`
	Links []struct {
		ID         string `xml:"client_id,attr"`
		Interfaces []struct {
			ID string `xml:"client_id,attr"`
		} `xml:"interface_ref"`
		Properties []struct {
			Source   string `xml:"source_id,attr"`
			Dest     string `xml:"dest_id,attr"`
			Capacity string `xml:"capacity,attr"`
			Latency  string `xml:"latency,attr"`
			Loss     string `xml:"packet_loss,attr"`
		} `xml:"property"`
	} `xml:"link"`
}

func render(t *testing.T, py string, args ...string) rspec {
	t.Helper()
	cmd := exec.Command(py, append([]string{"profile.py"}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 profile.py %v: %v", args, err)
	}
	var r rspec
	if err := xml.Unmarshal(out, &r); err != nil {
		t.Fatalf("the rendered RSpec: %v\n%s", err, out)
	}
	return r
}

// link is what a test expects of one shaped link, each way.
type link struct {
	rate, delay, loss string
}

// checkTopology checks the two nodes (their addresses on each link and
// their startup script) and the two links (both directions' capacity in
// kbit/s, one-way latency in ms and loss).
func checkTopology(t *testing.T, r rspec, want [2]link) {
	t.Helper()
	if len(r.Nodes) != 2 || r.Nodes[0].ID != "server" || r.Nodes[1].ID != "client" {
		t.Fatalf("nodes %+v", r.Nodes)
	}
	for _, n := range r.Nodes {
		host := map[string]string{"client": "1", "server": "2"}[n.ID]
		if len(n.Interfaces) != 2 {
			t.Fatalf("%s: %d interfaces", n.ID, len(n.Interfaces))
		}
		for i, ifc := range n.Interfaces {
			if ifc.ID != n.ID+":if"+strconv.Itoa(i) || ifc.IP.Address != "10."+strconv.Itoa(i)+".0."+host || ifc.IP.Netmask != "255.255.255.0" {
				t.Errorf("%s interface %d: %+v", n.ID, i, ifc)
			}
		}
		if !strings.HasSuffix(n.Image.Name, "//UBUNTU22-64-STD") {
			t.Errorf("%s: image %q", n.ID, n.Image.Name)
		}
		if len(n.Execute) != 1 || !strings.Contains(n.Execute[0].Command, "/local/repository/deploy/cloudlab/setup.sh") {
			t.Errorf("%s: startup %+v", n.ID, n.Execute)
		}
	}
	if len(r.Links) != 2 {
		t.Fatalf("%d links", len(r.Links))
	}
	for i, l := range r.Links {
		c, s := "client:if"+strconv.Itoa(i), "server:if"+strconv.Itoa(i)
		var ends []string
		for _, ifc := range l.Interfaces {
			ends = append(ends, ifc.ID)
		}
		sort.Strings(ends)
		if l.ID != "path"+strconv.Itoa(i) || strings.Join(ends, " ") != c+" "+s {
			t.Errorf("link %d: %s between %v", i, l.ID, ends)
		}
		dirs := map[string]bool{}
		for _, p := range l.Properties {
			dirs[p.Source+">"+p.Dest] = true
			if p.Capacity != want[i].rate || p.Latency != want[i].delay || p.Loss != want[i].loss {
				t.Errorf("link %d %s->%s: capacity %s latency %s loss %s, want %+v", i, p.Source, p.Dest, p.Capacity, p.Latency, p.Loss, want[i])
			}
		}
		if len(l.Properties) != 2 || !dirs[c+">"+s] || !dirs[s+">"+c] {
			t.Errorf("link %d shaped in %v, want both directions", i, dirs)
		}
	}
}

// The profile renders, outside the portal, the RSpec of its defaults: the
// two nodes and the two links of the reference paper's setup (100 Mbit/s,
// 25 ms each way, 0.05 % loss), and parameters change one link only.
func TestProfileRSpec(t *testing.T) {
	py := python(t)
	paper := link{"100000", "25", "0.0005"}
	checkTopology(t, render(t, py), [2]link{paper, paper})
	checkTopology(t, render(t, py, "rate1=20000", "delay1=40", "loss1=0.01"), [2]link{paper, {"20000", "40", "0.01"}})
	if err := exec.Command(py, "profile.py", "nokey=1").Run(); err == nil {
		t.Error("an unknown parameter was accepted")
	}
}

// The Emulab NS file is the profile's topology: the same nodes, links,
// rates, delays, losses and addresses as the profile's defaults.
func TestNSFileMatchesProfile(t *testing.T) {
	b, err := os.ReadFile("mpq.ns")
	if err != nil {
		t.Fatal(err)
	}
	ns := string(b)
	links := regexp.MustCompile(`set (path\d) \[\$ns duplex-link \$client \$server (\d+)Mb (\d+)ms DropTail\]`).FindAllStringSubmatch(ns, -1)
	if len(links) != 2 {
		t.Fatalf("%d duplex links", len(links))
	}
	for i, l := range links {
		if l[1] != "path"+strconv.Itoa(i) || l[2] != "100" || l[3] != "25" {
			t.Errorf("link %v, want path%d of 100Mb and 25ms", l[1:], i)
		}
		if !strings.Contains(ns, "tb-set-link-loss $"+l[1]+" 0.0005\n") {
			t.Errorf("%s: no loss of 0.0005", l[1])
		}
		for host, end := range map[string]string{"client": "1", "server": "2"} {
			if !strings.Contains(ns, "tb-set-ip-link $"+host+" $"+l[1]+" 10."+strconv.Itoa(i)+".0."+end+"\n") {
				t.Errorf("%s: no address 10.%d.0.%s for the %s", l[1], i, end, host)
			}
		}
	}
	for _, want := range []string{"set server [$ns node]", "set client [$ns node]", "deploy/cloudlab/setup.sh"} {
		if !strings.Contains(ns, want) {
			t.Errorf("mpq.ns lacks %q", want)
		}
	}
	// The profile's defaults say the same.
	py, err := os.ReadFile("profile.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"rate0": 100000`, `"delay0": 25`, `"loss0": 0.0005`, `"rate1": 100000`, `"delay1": 25`, `"loss1": 0.0005`} {
		if !strings.Contains(string(py), want) {
			t.Errorf("profile.py's defaults lack %s", want)
		}
	}
}
