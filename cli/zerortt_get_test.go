package cli

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGetZeroRTT: mpq get --session-cache keeps the server's ticket in
// the file between invocations, and with --0rtt the second get resumes
// and sends its request in 0-RTT, which the server (mpq serve --0rtt)
// accepts and counts; both downloads are the file. A corrupt or foreign
// cache file is refused with exit 2 before connecting.
func TestGetZeroRTT(t *testing.T) {
	root := t.TempDir()
	body := make([]byte, 200_000)
	rand.Read(body)
	if err := os.WriteFile(filepath.Join(root, "f"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	addr, serveErr, stop := startServe(t, root, "--0rtt")
	cache := filepath.Join(t.TempDir(), "tickets.json")
	get := func() getResult {
		t.Helper()
		code, stdout, stderr := runCmd(t, "get", "--addr", addr, "--path", "/f", "--session-cache", cache, "--0rtt")
		if code != 0 {
			t.Fatalf("get: exit %d\n%s%s", code, stdout, stderr)
		}
		var r getResult
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("get's output %q: %v", stdout, err)
		}
		return r
	}
	first := get()
	if !first.OK || first.SHA256 != want || first.Resumed || first.ZeroRTT != "" {
		t.Errorf("first get: %+v", first)
	}
	st, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("no session cache after the first get: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("session cache mode %v, want 0600", st.Mode().Perm())
	}
	var f sessionFile
	b, _ := os.ReadFile(cache)
	if err := json.Unmarshal(b, &f); err != nil || f.Format != sessionCacheFormat || f.Version != 1 || len(f.Sessions) != 1 {
		t.Fatalf("session cache %s: %v", b, err)
	}
	second := get()
	if !second.OK || second.SHA256 != want || !second.Resumed || second.ZeroRTT != "accepted" {
		t.Errorf("second get: %+v", second)
	}
	if second.Bytes != first.Bytes || second.Bytes != int64(len(body)) {
		t.Errorf("bytes %d and %d, want %d", first.Bytes, second.Bytes, len(body))
	}
	if c := stop(); c != 0 {
		t.Fatalf("serve exited %d", c)
	}
	if !strings.Contains(serveErr.String(), "0-RTT: connections resumed 1, with 0-RTT data accepted 1 (") {
		t.Errorf("the server's 0-RTT counters:\n%s", serveErr)
	}

	// Refused before connecting (the server is gone: a connection
	// attempt would fail with exit 1, not 2).
	for _, tc := range []struct {
		name, content, want string
	}{
		{"not JSON", "garbage", "is not a usable mpq session cache"},
		{"another format", `{"format": "x", "version": 1}`, `format "x", want "mpq-session-cache"`},
		{"another version", `{"format": "mpq-session-cache", "version": 2}`, "version 2, this mpq reads version 1"},
		{"bad state", `{"format": "mpq-session-cache", "version": 1, "sessions": [{"key": "k", "ticket": "AQ==", "state": "AQ=="}]}`, "session 0 (k)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "c.json")
			if err := os.WriteFile(bad, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCmd(t, "get", "--addr", addr, "--path", "/f", "--session-cache", bad, "--0rtt")
			if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "delete it") {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
	if code, _, stderr := runCmd(t, "get", "--addr", addr, "--path", "/f", "--0rtt"); code != 2 || !strings.Contains(stderr, "--0rtt needs --session-cache") {
		t.Errorf("--0rtt without a cache: exit %d, %q", code, stderr)
	}
}

// FuzzSessionCache: the session cache parser refuses what it cannot
// read with an error, never a panic.
func FuzzSessionCache(f *testing.F) {
	f.Add([]byte(`{"format": "mpq-session-cache", "version": 1, "sessions": []}`))
	f.Add([]byte(`{"format": "mpq-session-cache", "version": 1, "sessions": [{"key": "k", "ticket": "AQ==", "state": "AQ=="}]}`))
	f.Add([]byte(`garbage`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &fileSessionCache{sessions: map[string]sessionEntry{}}
		if c.parse(b) == nil {
			for k := range c.sessions {
				c.Get(k)
			}
		}
	})
}
