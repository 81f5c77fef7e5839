package experiment

import (
	"strings"
	"testing"
)

// TestReceiveWindows: transport.receive_window (fixed windows),
// initial_receive_window (where growing windows start) and
// conn_window_follows_stream are read, bounded, exclusive where they
// contradict each other, and read back from the resolved file.
func TestReceiveWindows(t *testing.T) {
	tests := []struct {
		set          string // the [transport] lines
		fixed, start int64
		err          string
	}{
		{"", 0, 0, ""},
		{`receive_window = "200kB"`, 200000, 0, ""},
		{"receive_window = 65536", 65536, 0, ""},
		{`receive_window = "1kB"`, 0, 0, "b.toml:10: transport.receive_window: 1000 bytes is below the least a run admits, 16384"},
		{`receive_window = true`, 0, 0, "b.toml:10: transport.receive_window: want a size"},
		{`initial_receive_window = "32KiB"`, 0, 32768, ""},
		{"initial_receive_window = 65536", 0, 65536, ""},
		{`initial_receive_window = "16MiB"`, 0, 16 << 20, ""},
		{`initial_receive_window = "8KiB"`, 0, 0, "b.toml:10: transport.initial_receive_window: 8192 bytes is below the least a run admits, 16384"},
		{`initial_receive_window = "17MiB"`, 0, 0, "b.toml:10: transport.initial_receive_window: 17825792 bytes is above the windows' default maximum, 16777216"},
		{"initial_receive_window = \"32KiB\"\nreceive_window = \"1MB\"", 0, 0, "transport.initial_receive_window: set with receive_window"},
		{`initial_receive_window = "a lot"`, 0, 0, "b.toml:10: transport.initial_receive_window:"},
		{"initial_receive_window = \"32KiB\"\nconn_window_follows_stream = true", 0, 32768, ""},
		{"receive_window = \"1MB\"\nconn_window_follows_stream = true", 0, 0, "transport.conn_window_follows_stream: set with receive_window"},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			doc := backupFile + "[transport]\n" + tc.set + "\n"
			runs, err := Parse("b.toml", []byte(doc), nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tr := runs[0].Transport
			follow := strings.Contains(tc.set, "conn_window_follows_stream = true")
			if tr.ReceiveWindow != tc.fixed || tr.InitialReceiveWindow != tc.start || tr.ConnWindowFollowsStream != follow {
				t.Fatalf("receive_window %d, initial_receive_window %d, conn_window_follows_stream %v; want %d, %d, %v",
					tr.ReceiveWindow, tr.InitialReceiveWindow, tr.ConnWindowFollowsStream, tc.fixed, tc.start, follow)
			}
			checkRoundTrip(t, runs[0])
		})
	}
}

// TestConnWindowFollowsScheduler: transport.conn_window_follows_stream
// defaults to true where the path scheduler relies on it
// (scheduler.FollowsStreamWindow: cwr-plus with its credit rule), on
// mpq's own transport with windows that grow, and to false elsewhere; a
// value given wins, and fixed windows leave it off without an error.
func TestConnWindowFollowsScheduler(t *testing.T) {
	tests := []struct {
		set    string // the [transport] lines
		follow bool
	}{
		{`path_scheduler = "lowrtt"`, false},
		{`path_scheduler = "cwr-plus"`, true},
		{"path_scheduler = \"cwr-plus\"\nscheduler_options = { credit = false }", false},
		{"path_scheduler = \"cwr-plus\"\nconn_window_follows_stream = false", false},
		{"path_scheduler = \"cwr-plus\"\nreceive_window = \"1MB\"", false},
		{"path_scheduler = \"lowrtt\"\nconn_window_follows_stream = true", true},
	}
	for _, tc := range tests {
		t.Run(tc.set, func(t *testing.T) {
			doc := backupFile + "[transport]\n" + tc.set + "\n"
			runs, err := Parse("b.toml", []byte(doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := runs[0].Transport.ConnWindowFollowsStream; got != tc.follow {
				t.Fatalf("conn_window_follows_stream %v, want %v", got, tc.follow)
			}
			checkRoundTrip(t, runs[0])
		})
	}
}
