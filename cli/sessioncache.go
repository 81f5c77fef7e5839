package cli

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// The session cache file of mpq get --session-cache: the TLS session
// tickets a server sent, kept between invocations so that the next get
// resumes the session (and, with --0rtt, sends its request in 0-RTT).
// Its format is ours, JSON:
//
//	{"format": "mpq-session-cache", "version": 1,
//	 "sessions": [{"key": "localhost", "stored": "2026-11-26T01:02:03Z",
//	               "ticket": "<base64>", "state": "<base64>"}]}
//
// key is crypto/tls's cache key (the server name), ticket the server's
// opaque ticket and state the session (tls.SessionState.Bytes, with the
// server's transport parameters that 0-RTT must remember, RFC 9000
// Section 7.4.1). The file holds secrets (resumption keys): it is written
// with mode 0600, through a temporary file renamed over it.
const (
	sessionCacheFormat  = "mpq-session-cache"
	sessionCacheVersion = 1
	// sessionCacheMax bounds the sessions kept, the newest first.
	sessionCacheMax = 32
)

type sessionFile struct {
	Format   string         `json:"format"`
	Version  int            `json:"version"`
	Sessions []sessionEntry `json:"sessions"`
}

type sessionEntry struct {
	Key    string    `json:"key"`
	Stored time.Time `json:"stored"`
	Ticket []byte    `json:"ticket"` // base64 in JSON
	State  []byte    `json:"state"`
}

// fileSessionCache is a tls.ClientSessionCache loaded from and saved to a
// file; safe for concurrent use.
type fileSessionCache struct {
	name string

	mu       sync.Mutex
	sessions map[string]sessionEntry
	changed  bool
	stored   chan struct{} // receives (without blocking) when Put stores one
}

var _ tls.ClientSessionCache = (*fileSessionCache)(nil)

// loadSessionCache reads the cache file name; a file that does not exist
// is an empty cache, one that is not a cache of this format an error.
func loadSessionCache(name string) (*fileSessionCache, error) {
	c := &fileSessionCache{name: name, sessions: map[string]sessionEntry{}, stored: make(chan struct{}, 1)}
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.parse(b); err != nil {
		return nil, fmt.Errorf("%s is not a usable mpq session cache: %w (delete it to start a new one)", name, err)
	}
	return c, nil
}

// parse reads a cache file's contents.
func (c *fileSessionCache) parse(b []byte) error {
	var f sessionFile
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	if f.Format != sessionCacheFormat {
		return fmt.Errorf("format %q, want %q", f.Format, sessionCacheFormat)
	}
	if f.Version != sessionCacheVersion {
		return fmt.Errorf("version %d, this mpq reads version %d", f.Version, sessionCacheVersion)
	}
	for i, e := range f.Sessions {
		if e.Key == "" || len(e.Ticket) == 0 {
			return fmt.Errorf("session %d: no key or no ticket", i)
		}
		if _, err := tls.ParseSessionState(e.State); err != nil {
			return fmt.Errorf("session %d (%s): %w", i, e.Key, err)
		}
		c.sessions[e.Key] = e
	}
	return nil
}

// Get implements tls.ClientSessionCache.
func (c *fileSessionCache) Get(key string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	e, ok := c.sessions[key]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	st, err := tls.ParseSessionState(e.State)
	if err != nil {
		return nil, false
	}
	cs, err := tls.NewResumptionState(e.Ticket, st)
	if err != nil {
		return nil, false
	}
	return cs, true
}

// Put implements tls.ClientSessionCache (a nil cs removes the key's
// session).
func (c *fileSessionCache) Put(key string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs == nil {
		if _, ok := c.sessions[key]; ok {
			delete(c.sessions, key)
			c.changed = true
		}
		return
	}
	ticket, st, err := cs.ResumptionState()
	if err != nil || st == nil || len(ticket) == 0 {
		return
	}
	b, err := st.Bytes()
	if err != nil {
		return
	}
	c.sessions[key] = sessionEntry{Key: key, Stored: time.Now().UTC(), Ticket: ticket, State: b}
	c.changed = true
	select {
	case c.stored <- struct{}{}:
	default:
	}
}

// save writes the cache if it changed.
func (c *fileSessionCache) save() error {
	c.mu.Lock()
	if !c.changed {
		c.mu.Unlock()
		return nil
	}
	f := sessionFile{Format: sessionCacheFormat, Version: sessionCacheVersion, Sessions: []sessionEntry{}}
	for _, e := range c.sessions {
		f.Sessions = append(f.Sessions, e)
	}
	c.mu.Unlock()
	sort.Slice(f.Sessions, func(i, j int) bool { return f.Sessions[i].Stored.After(f.Sessions[j].Stored) })
	f.Sessions = f.Sessions[:min(len(f.Sessions), sessionCacheMax)]
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.name), "."+filepath.Base(c.name)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if err = errors.Join(err, tmp.Chmod(0o600), tmp.Close()); err == nil {
		err = os.Rename(tmp.Name(), c.name)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("session cache %s: %w", c.name, err)
	}
	return nil
}
