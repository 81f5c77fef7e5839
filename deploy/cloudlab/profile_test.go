package cloudlab

import (
	"encoding/xml"
	"fmt"
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

// profileDefaults reads the DEFAULTS of profile.py (its parameters'
// defaults) and LINKS.
func profileDefaults(t *testing.T) (map[string]string, int) {
	t.Helper()
	b, err := os.ReadFile("profile.py")
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	start := strings.Index(src, "DEFAULTS = {")
	end := strings.Index(src[max(start, 0):], "\n}")
	if start < 0 || end < 0 {
		t.Fatal("profile.py: no DEFAULTS = {...}")
	}
	d := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*"(\w+)": "?([^",]*)"?,`).FindAllStringSubmatch(src[start:start+end], -1) {
		d[m[1]] = m[2]
	}
	links := regexp.MustCompile(`(?m)^LINKS = (\d+)$`).FindStringSubmatch(src)
	if links == nil {
		t.Fatal("profile.py: no LINKS = N")
	}
	n, _ := strconv.Atoi(links[1])
	return d, n
}

// The Emulab NS file is valid Tcl that uses only the NS commands it
// should (run by tclsh with testdata/tb_compat.tcl, a stand-in for
// Emulab's, which prints the topology the file makes), and its topology
// is the profile's with the profile's defaults: the same nodes, image
// and startup script (setup.sh with the default Go version), LINKS links
// between client and server with each link's rate, one-way delay and
// loss, and the addresses 10.i.0.1 (client) and 10.i.0.2 (server) /24.
func TestNSFile(t *testing.T) {
	tclsh, err := exec.LookPath("tclsh")
	if err != nil {
		if os.Getenv("MPQ_REQUIRE_TCL") == "1" {
			t.Fatal("MPQ_REQUIRE_TCL=1 but tclsh is not installed (Debian: apt-get install tcl)")
		}
		t.Skip("tclsh is not installed (Debian: apt-get install tcl)")
	}
	cmd := exec.Command(tclsh)
	// tclsh reading its standard input goes on after an error: catch it.
	cmd.Stdin = strings.NewReader("source testdata/tb_compat.tcl\n" +
		"if {[catch {source mpq.ns}]} { puts stderr $::errorInfo; exit 1 }\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tclsh mpq.ns: %v\n%s", err, out)
	}
	got := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got[l] = true
	}
	d, links := profileDefaults(t)
	image := d["image"][strings.LastIndex(d["image"], "//")+2:]
	var want []string
	for _, n := range []string{"server", "client"} {
		want = append(want, "os\t"+n+"\t"+image)
	}
	for i := 0; i < links; i++ {
		p := "path" + strconv.Itoa(i)
		kbit, err := strconv.Atoi(d["rate"+strconv.Itoa(i)])
		if err != nil || kbit%1000 != 0 {
			t.Fatalf("profile.py: rate%d %q: want whole Mbit/s (in kbit/s)", i, d["rate"+strconv.Itoa(i)])
		}
		want = append(want,
			fmt.Sprintf("link\t%s\tclient\tserver\t%dMb\t%sms\tDropTail", p, kbit/1000, d["delay"+strconv.Itoa(i)]),
			fmt.Sprintf("loss\t%s\t%s", p, d["loss"+strconv.Itoa(i)]),
			fmt.Sprintf("ip\tclient\t%s\t10.%d.0.1", p, i),
			fmt.Sprintf("ip\tserver\t%s\t10.%d.0.2", p, i),
			fmt.Sprintf("netmask\t%s\t255.255.255.0", p))
	}
	for _, w := range want {
		if !got[w] {
			t.Errorf("mpq.ns does not make %q", strings.ReplaceAll(w, "\t", " "))
		}
	}
	nlinks, starts := 0, 0
	for l := range got {
		switch {
		case strings.HasPrefix(l, "link\t"):
			nlinks++
		case strings.HasPrefix(l, "startcmd\t"):
			starts++
			if !strings.HasSuffix(l, "/deploy/cloudlab/setup.sh "+d["go_version"]) {
				t.Errorf("startup %q: want setup.sh %s", l, d["go_version"])
			}
		}
	}
	if nlinks != links || starts != 2 {
		t.Errorf("%d links and %d startup commands, want %d and 2:\n%s", nlinks, starts, links, out)
	}
}
