package experiment

import (
	"strings"
	"testing"
)

// kindFile is a one-path request-response experiment on a backend that
// stands for the namespace backend (which package runner registers).
const kindFile = `name = "k"
duration = "2s"
backend = "test-kind"

[[path]]
rtt = "20ms"

[transport]
kind = "tcp"

[[source]]
name = "rr"
kind = "request-response"
interval = "100ms"
size = 128
reply_size = 128
`

// TestTransportKindChecked: transport.kind refuses, with file, line and
// key, the combinations that mean nothing: mpq's own keys, the simulator,
// the loopback emulator for kernel transports, several paths for a
// single-path transport, announcements, competitors, qlog.
func TestTransportKindChecked(t *testing.T) {
	backendsMu.Lock()
	had := backends["test-kind"]
	backends["test-kind"] = true
	backendsMu.Unlock()
	t.Cleanup(func() {
		backendsMu.Lock()
		backends["test-kind"] = had
		if !had {
			delete(backends, "test-kind")
		}
		backendsMu.Unlock()
	})
	tests := []struct {
		name    string
		edit    func(string) string
		over    []string
		want    []string
		wantErr bool
	}{
		{"tcp on netns", nil, nil, nil, false},
		{"tcp with a controller", nil, []string{"transport.tcp_congestion=cubic"}, nil, false},
		{"mptcp over two paths", func(s string) string {
			return strings.Replace(s, "[transport]", "[[path]]\nrtt = \"30ms\"\n\n[transport]", 1)
		},
			[]string{"transport.kind=mptcp"}, nil, false},
		{"unknown kind", nil, []string{"transport.kind=sctp"},
			[]string{`e.toml: transport.kind (from --set transport.kind=sctp): "sctp" is not one of mpq, quic-go, tcp, tls, mptcp`}, true},
		{"mpq key", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tcp\"\npath_scheduler = \"lowrtt\"", 1)
		}, nil,
			[]string{`e.toml:10: transport.path_scheduler: configures mpq; kind "tcp" has no such setting`}, true},
		{"simulator", nil, []string{"backend=sim"},
			[]string{`e.toml:9: transport.kind: "tcp" does not run in the simulator`}, true},
		{"quic-go in the simulator", nil, []string{"backend=sim", "transport.kind=quic-go"},
			[]string{`e.toml: transport.kind (from --set transport.kind=quic-go): "quic-go" does not run in the simulator`}, true},
		{"tls on loopback", nil, []string{"backend=loopback", "transport.kind=tls"},
			[]string{`e.toml: transport.kind (from --set transport.kind=tls): "tls" does not run on the loopback backend`}, true},
		{"quic-go on loopback", nil, []string{"backend=loopback", "transport.kind=quic-go"}, nil, false},
		{"tcp over two paths", func(s string) string {
			return strings.Replace(s, "[transport]", "[[path]]\nrtt = \"30ms\"\n\n[transport]", 1)
		}, nil,
			[]string{`e.toml:12: transport.kind: "tcp" is a single-path transport`}, true},
		{"tcp over two paths, multipath off", func(s string) string {
			return strings.Replace(s, "[transport]", "[[path]]\nrtt = \"30ms\"\n\n[transport]\nmultipath = false", 1)
		}, nil, nil, false},
		{"announce", func(s string) string {
			return s + "\n[[source]]\nname = \"p\"\nkind = \"periodic\"\npriority = true\nannounce = true\ninterval = \"10ms\"\nsize = 100\n"
		}, nil, []string{`e.toml:22: source.1.announce: announcements go to mpq's path scheduler`}, true},
		{"priority without announce", func(s string) string {
			return s + "\n[[source]]\nname = \"p\"\nkind = \"periodic\"\npriority = true\ninterval = \"10ms\"\nsize = 100\n"
		}, nil, nil, false},
		{"controller for mpq", nil, []string{"transport.kind=mpq", "backend=sim", "transport.tcp_congestion=cubic"},
			[]string{`e.toml: transport.tcp_congestion (from --set transport.tcp_congestion=cubic): the kernel's congestion controller applies to kind tcp, tls and mptcp, not "mpq"`}, true},
		{"bad controller name", nil, []string{"transport.tcp_congestion=Cubic!"},
			[]string{`e.toml: transport.tcp_congestion (from --set transport.tcp_congestion=Cubic!): "Cubic!" is not a kernel congestion controller's name`}, true},
		{"per-request over tcp", nil, []string{"transport.connection=per-request"}, nil, false},
		{"per-request over quic-go", nil, []string{"transport.connection=per-request", "transport.kind=quic-go"}, nil, false},
		{"per-request in the file", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tls\"\nconnection = \"per-request\"", 1)
		}, nil, nil, false},
		{"unknown connection mode", nil, []string{"transport.connection=pooled"},
			[]string{`e.toml: transport.connection (from --set transport.connection=pooled): "pooled" is not one of shared, per-request`}, true},
		{"per-request over mpq", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"mpq\"\nconnection = \"per-request\"", 1)
		}, []string{"backend=sim"},
			[]string{`e.toml:10: transport.connection: "per-request" is built for the baselines`}, true},
		{"per-request with periodic messages", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tcp\"\nconnection = \"per-request\"", 1) +
				"\n[[source]]\nname = \"p\"\nkind = \"periodic\"\ninterval = \"10ms\"\nsize = 100\n"
		}, nil, []string{`e.toml:10: transport.connection: "per-request" needs sources of a client's requests (request-response, file, stop-and-wait): source "p" is periodic`}, true},
		{"pool over tls", nil, []string{"transport.connection=pool", "transport.kind=tls"}, nil, false},
		{"pool with its keys", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tls\"\nconnection = \"pool\"\npool_idle_timeout = \"5s\"\npool_max_idle = 0", 1)
		}, nil, nil, false},
		{"pool over mpq", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"mpq\"\nconnection = \"pool\"", 1)
		}, []string{"backend=sim"},
			[]string{`e.toml:10: transport.connection: "pool" is built for the baselines`}, true},
		{"pool with periodic messages", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tcp\"\nconnection = \"pool\"", 1) +
				"\n[[source]]\nname = \"p\"\nkind = \"periodic\"\ninterval = \"10ms\"\nsize = 100\n"
		}, nil, []string{`e.toml:10: transport.connection: "pool" needs sources of a client's requests (request-response, file, stop-and-wait): source "p" is periodic`}, true},
		{"pool key without the pool", func(s string) string {
			return strings.Replace(s, `kind = "tcp"`, "kind = \"tcp\"\npool_idle_timeout = \"5s\"", 1)
		}, nil, []string{`e.toml:10: transport.pool_idle_timeout: configures transport.connection = "pool", not "shared"`}, true},
		{"pool max idle per request", nil, []string{"transport.connection=per-request", "transport.pool_max_idle=1"},
			[]string{`e.toml: transport.pool_max_idle (from --set transport.pool_max_idle=1): configures transport.connection = "pool", not "per-request"`}, true},
		{"negative idle timeout", nil, []string{"transport.connection=pool", "transport.pool_idle_timeout=-1s"},
			[]string{`e.toml: transport.pool_idle_timeout (from --set transport.pool_idle_timeout=-1s): duration "-1s" is negative`}, true},
		{"qlog", nil, []string{"output.qlog=true"},
			[]string{`e.toml: output.qlog (from --set output.qlog=true): qlog traces come from mpq`}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := kindFile
			if tc.edit != nil {
				doc = tc.edit(doc)
			}
			runs, err := Parse("e.toml", []byte(doc), overrides(t, tc.over...))
			if !tc.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				// The resolved configuration reads back to the same run.
				back, err := Parse("r.toml", runs[0].ResolvedTOML(), nil)
				if err != nil {
					t.Fatalf("resolved configuration: %v\n%s", err, runs[0].ResolvedTOML())
				}
				if !SameRun(back[0].ResolvedTOML(), runs[0].ResolvedTOML()) {
					t.Errorf("resolved configuration does not read back the same")
				}
				return
			}
			checkProblems(t, err, tc.want)
		})
	}
}

// checkProblems checks that err lists the problems want (prefixes of its
// lines), in order.
func checkProblems(t *testing.T, err error, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d:\n%s\nwant\n%s", i, lines[i], w)
		}
	}
}

// An mpq run's resolved configuration has no kind key: its hash is the
// one it had before the key existed.
func TestKindMPQNotWritten(t *testing.T) {
	doc := strings.Replace(strings.Replace(kindFile, `kind = "tcp"`, `kind = "mpq"`, 1), `"test-kind"`, `"sim"`, 1)
	runs, err := Parse("e.toml", []byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(runs[0].ResolvedTOML()), "\nkind = \"mpq\"") {
		t.Error("kind = \"mpq\" written")
	}
}
