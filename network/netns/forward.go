package netns

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Files of the forwarder in a testbed's state directory.
const (
	forwardConfigFile = "forward.json"
	readyFile         = "forward.ready"
	// startFile holds the start of the run (Unix nanoseconds), from which
	// scheduled link changes count: the client end writes it (mpq run
	// --role client --start-file).
	startFile = "start"
	// StatsFile is the forwarder's statistics, in the format of the
	// loopback emulator's emulator.json (linkemu.WriteStats): rewritten
	// every second and when it exits.
	StatsFile = "emulator.json"
)

// ForwardConfig is what the forwarder reads from forward.json.
type ForwardConfig struct {
	// Seed seeds the links' random sources: path i's directions are the
	// links "path<i>/up" and "path<i>/down" of linkmodel.Rand, as in the
	// simulator.
	Seed  uint64        `json:"seed"`
	Paths []ForwardPath `json:"paths"`
	// Bottlenecks are the links shared by the paths that name them.
	Bottlenecks []experiment.Bottleneck `json:"bottlenecks,omitempty"`
}

// ForwardPath is one path between the router's interfaces Client (the
// veth towards the client) and Server.
type ForwardPath struct {
	Up   experiment.Link `json:"up"`
	Down experiment.Link `json:"down"`
	RTT  time.Duration   `json:"rtt_ns"`
	// Changes are the path's scheduled changes ([[path.change]]).
	Changes []experiment.LinkChange `json:"changes,omitempty"`
	// Bottleneck names the shared bottleneck the path passes after its
	// own links ("": none), of one-way delay BottleneckDelay.
	Bottleneck      string        `json:"bottleneck,omitempty"`
	BottleneckDelay time.Duration `json:"bottleneck_delay_ns,omitempty"`
	Client          string        `json:"client_if"`
	Server          string        `json:"server_if"`
}

// WriteForwardConfig writes the forwarder's configuration of t into dir.
func WriteForwardConfig(dir string, t *Topology) error {
	c := ForwardConfig{Seed: t.Seed, Bottlenecks: t.Bottlenecks}
	for i, p := range t.Paths {
		c.Paths = append(c.Paths, ForwardPath{Up: p.Up, Down: p.Down, RTT: p.RTT, Changes: p.Changes,
			Bottleneck: p.Bottleneck, BottleneckDelay: p.BottleneckDelay, Client: routerC(i), Server: routerS(i)})
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, forwardConfigFile), append(js, '\n'), 0o644)
}

// StartFile is where the client end of a run in testbed tag writes the
// run's start, from which the forwarder's scheduled changes count.
func StartFile(tag string) string { return filepath.Join(stateDir(tag), startFile) }

// ReadStart reads the start a client end wrote to a start file.
func ReadStart(name string) (time.Time, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return time.Time{}, err
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %w", name, err)
	}
	return time.Unix(0, ns), nil
}

// ReadForwardConfig reads the forwarder's configuration in dir.
func ReadForwardConfig(dir string) (*ForwardConfig, error) {
	b, err := os.ReadFile(filepath.Join(dir, forwardConfigFile))
	if err != nil {
		return nil, err
	}
	var c ForwardConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", forwardConfigFile, err)
	}
	if len(c.Paths) == 0 {
		return nil, fmt.Errorf("%s: no paths", forwardConfigFile)
	}
	return &c, nil
}

// ChargedBytes is what the forwarder's link model charges for an Ethernet
// frame: the payload of a UDP datagram (IPv4 or IPv6, without extension
// headers), the bytes the simulator and the loopback emulator charge for
// it, so that a link of the same rate carries the same datagrams per
// second on every emulator; for another IP packet its IP payload; for
// another frame its bytes after the Ethernet header. At least 1.
func ChargedBytes(frame []byte) int {
	const eth = ethernetHeader
	n := len(frame) - eth
	if len(frame) < eth {
		return max(1, len(frame))
	}
	switch binary.BigEndian.Uint16(frame[12:14]) {
	case 0x0800: // IPv4
		if len(frame) < eth+ipv4Header {
			break
		}
		ihl := int(frame[eth]&0x0f) * 4
		if ihl < ipv4Header || len(frame) < eth+ihl {
			break
		}
		n -= ihl
		if frame[eth+9] == 17 && n >= udpHeader {
			n -= udpHeader
		}
	case 0x86dd: // IPv6
		if len(frame) < eth+ipv6Header {
			break
		}
		n -= ipv6Header
		if frame[eth+6] == 17 && n >= udpHeader {
			n -= udpHeader
		}
	}
	return max(1, n)
}
