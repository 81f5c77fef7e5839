package experiment

import (
	"strings"
	"testing"
)

func TestReceiveWindow(t *testing.T) {
	tests := []struct {
		set  string // the [transport] line
		want int64
		err  string
	}{
		{"", 0, ""},
		{`receive_window = "200kB"`, 200000, ""},
		{"receive_window = 65536", 65536, ""},
		{`receive_window = "1kB"`, 0, "b.toml:10: transport.receive_window: 1000 bytes is below the least a run admits, 16384"},
		{`receive_window = true`, 0, "b.toml:10: transport.receive_window: want a size"},
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
			if got := runs[0].Transport.ReceiveWindow; got != tc.want {
				t.Fatalf("receive window %d, want %d", got, tc.want)
			}
			checkRoundTrip(t, runs[0])
		})
	}
}

func TestInitialReceiveWindow(t *testing.T) {
	tests := []struct {
		set  string // the [transport] lines
		want int64
		err  string
	}{
		{"", 0, ""},
		{`initial_receive_window = "32KiB"`, 32768, ""},
		{"initial_receive_window = 65536", 65536, ""},
		{`initial_receive_window = "16MiB"`, 16 << 20, ""},
		{`initial_receive_window = "8KiB"`, 0, "b.toml:10: transport.initial_receive_window: 8192 bytes is below the least a run admits, 16384"},
		{`initial_receive_window = "17MiB"`, 0, "b.toml:10: transport.initial_receive_window: 17825792 bytes is above the windows' default maximum, 16777216"},
		{"initial_receive_window = \"32KiB\"\nreceive_window = \"1MB\"", 0, "transport.initial_receive_window: set with receive_window"},
		{`initial_receive_window = "a lot"`, 0, "b.toml:10: transport.initial_receive_window:"},
		{"initial_receive_window = \"32KiB\"\nconn_window_follows_stream = true", 32768, ""},
		{"receive_window = \"1MB\"\nconn_window_follows_stream = true", 0, "transport.conn_window_follows_stream: set with receive_window"},
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
			if got := runs[0].Transport.InitialReceiveWindow; got != tc.want {
				t.Fatalf("initial receive window %d, want %d", got, tc.want)
			}
			if follow := strings.Contains(tc.set, "conn_window_follows_stream = true"); runs[0].Transport.ConnWindowFollowsStream != follow {
				t.Fatalf("conn_window_follows_stream %v, want %v", runs[0].Transport.ConnWindowFollowsStream, follow)
			}
			checkRoundTrip(t, runs[0])
		})
	}
}
