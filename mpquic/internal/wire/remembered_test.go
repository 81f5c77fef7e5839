package wire

import (
	"testing"
	"time"
)

func sampleRemembered() Remembered {
	return Remembered{
		MaxIdleTimeout: 30 * time.Second, MaxUDPPayloadSize: 1452, InitialMaxData: 1 << 20,
		InitialMaxStreamDataBidiLocal: 1000, InitialMaxStreamDataBidiRemote: 2000,
		InitialMaxStreamDataUni: 3000, InitialMaxStreamsBidi: 100, InitialMaxStreamsUni: 7,
		ActiveConnectionIDLimit: 4, MaxDatagramFrameSize: 1200, DisableActiveMigration: true,
	}
}

func TestRememberedRoundTrip(t *testing.T) {
	r := sampleRemembered()
	b := r.Append(nil)
	got, err := ParseRemembered(b)
	if err != nil || got != r {
		t.Fatalf("ParseRemembered = %+v, %v; want %+v", got, err, r)
	}
	// Found among foreign entries.
	if got, ok := FindRemembered([][]byte{[]byte("quic-go"), b}); !ok || got != r {
		t.Fatalf("FindRemembered = %+v, %v", got, ok)
	}
	if _, ok := FindRemembered([][]byte{[]byte("quic-go")}); ok {
		t.Fatal("FindRemembered found a foreign entry")
	}
	// Every transport parameter goes through RememberedOf and Apply.
	var p TransportParameters
	r.Apply(&p)
	if RememberedOf(&p) != r {
		t.Fatalf("Apply/RememberedOf = %+v", RememberedOf(&p))
	}
}

func TestParseRememberedRejects(t *testing.T) {
	r := sampleRemembered()
	good := r.Append(nil)
	for name, b := range map[string][]byte{
		"empty":     nil,
		"foreign":   []byte("mpq-0rtt-tp-v2:\x00"),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte(nil), good...), 0),
		"flag 2":    append(append([]byte(nil), good[:len(good)-1]...), 2),
	} {
		if _, err := ParseRemembered(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRememberedReduced(t *testing.T) {
	then := sampleRemembered()
	tests := []struct {
		name   string
		change func(*Remembered)
		want   string
	}{
		{"same", func(*Remembered) {}, ""},
		{"larger", func(r *Remembered) { r.InitialMaxData++; r.InitialMaxStreamsBidi++ }, ""},
		{"idle shorter is allowed", func(r *Remembered) { r.MaxIdleTimeout = time.Second }, ""},
		{"cid limit", func(r *Remembered) { r.ActiveConnectionIDLimit-- }, "active_connection_id_limit"},
		{"max data", func(r *Remembered) { r.InitialMaxData-- }, "initial_max_data"},
		{"bidi local", func(r *Remembered) { r.InitialMaxStreamDataBidiLocal-- }, "initial_max_stream_data_bidi_local"},
		{"bidi remote", func(r *Remembered) { r.InitialMaxStreamDataBidiRemote-- }, "initial_max_stream_data_bidi_remote"},
		{"uni", func(r *Remembered) { r.InitialMaxStreamDataUni-- }, "initial_max_stream_data_uni"},
		{"streams bidi", func(r *Remembered) { r.InitialMaxStreamsBidi-- }, "initial_max_streams_bidi"},
		{"streams uni", func(r *Remembered) { r.InitialMaxStreamsUni-- }, "initial_max_streams_uni"},
		{"udp payload", func(r *Remembered) { r.MaxUDPPayloadSize-- }, "max_udp_payload_size"},
	}
	for _, tt := range tests {
		now := then
		tt.change(&now)
		if got := now.Reduced(&then); got != tt.want {
			t.Errorf("%s: Reduced = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func FuzzParseRemembered(f *testing.F) {
	r := sampleRemembered()
	f.Add(r.Append(nil))
	f.Add([]byte("mpq-0rtt-tp-v1:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRemembered(b)
		if err != nil {
			return
		}
		again, err := ParseRemembered(r.Append(nil))
		if err != nil || again != r {
			t.Fatalf("re-encoding of %+v parsed as %+v, %v", r, again, err)
		}
	})
}
