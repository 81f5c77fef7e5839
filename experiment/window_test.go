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
