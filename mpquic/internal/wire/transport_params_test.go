package wire

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// tpCase is a set of transport parameters and who sends it.
type tpCase struct {
	name       string
	p          TransportParameters
	fromServer bool
}

func tpCases() []tpCase {
	full := TransportParameters{
		OriginalDestinationConnectionID:    testDCID,
		HasOriginalDestinationConnectionID: true,
		MaxIdleTimeout:                     30 * time.Second,
		StatelessResetToken:                &testReset,
		MaxUDPPayloadSize:                  1452,
		InitialMaxData:                     1 << 24,
		InitialMaxStreamDataBidiLocal:      1 << 20,
		InitialMaxStreamDataBidiRemote:     1 << 21,
		InitialMaxStreamDataUni:            1 << 19,
		InitialMaxStreamsBidi:              100,
		InitialMaxStreamsUni:               MaxStreamCount,
		AckDelayExponent:                   20,
		MaxAckDelay:                        (1<<14 - 1) * time.Millisecond,
		DisableActiveMigration:             true,
		PreferredAddress: &PreferredAddress{
			IPv4: [4]byte{192, 0, 2, 1}, IPv4Port: 4433,
			IPv6: [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}, IPv6Port: 443,
			ConnID: testCID, ResetToken: testReset,
		},
		ActiveConnectionIDLimit:      8,
		InitialSourceConnectionID:    testSCID,
		HasInitialSourceConnectionID: true,
		RetrySourceConnectionID:      bytes.Repeat([]byte{3}, 20),
		HasRetrySourceConnectionID:   true,
		MaxDatagramFrameSize:         1200,
		InitialMaxPathID:             MaxPathIDLimit,
		HasInitialMaxPathID:          true,
	}
	client := DefaultTransportParameters()
	client.MaxIdleTimeout = time.Minute
	client.InitialMaxData = 1000
	client.InitialMaxStreamsBidi = 10
	client.InitialSourceConnectionID, client.HasInitialSourceConnectionID = []byte{}, true
	client.InitialMaxPathID, client.HasInitialMaxPathID = 0, true
	client.AckDelayExponent = 0
	client.MaxAckDelay = 0
	zeroLenCIDs := DefaultTransportParameters()
	zeroLenCIDs.OriginalDestinationConnectionID, zeroLenCIDs.HasOriginalDestinationConnectionID = []byte{}, true
	zeroLenCIDs.RetrySourceConnectionID, zeroLenCIDs.HasRetrySourceConnectionID = []byte{}, true
	return []tpCase{
		{"defaults", DefaultTransportParameters(), false},
		{"full server", full, true},
		{"client", client, false},
		{"zero-length connection IDs", zeroLenCIDs, true},
	}
}

func TestTransportParametersRoundTrip(t *testing.T) {
	for _, tt := range tpCases() {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.p.Append([]byte{0xff})
			if b[0] != 0xff {
				t.Fatal("prefix overwritten")
			}
			p, err := ParseTransportParameters(b[1:], tt.fromServer)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p, tt.p) {
				t.Errorf("parsed\n%+v\nwant\n%+v", p, tt.p)
			}
		})
	}
	if b := (&TransportParameters{}).Append(nil); len(b) == 0 {
		t.Error("zero values that differ from defaults were not written")
	}
	def := DefaultTransportParameters()
	if b := def.Append(nil); len(b) != 0 {
		t.Errorf("defaults encoded as %x", b)
	}
}

func TestTransportParametersCopy(t *testing.T) {
	p := DefaultTransportParameters()
	p.InitialSourceConnectionID, p.HasInitialSourceConnectionID = []byte{1, 2, 3}, true
	b := p.Append(nil)
	got, err := ParseTransportParameters(b, false)
	if err != nil {
		t.Fatal(err)
	}
	clear(b)
	if !bytes.Equal(got.InitialSourceConnectionID, []byte{1, 2, 3}) {
		t.Error("connection ID aliases the input")
	}
}

func TestTransportParametersDurations(t *testing.T) {
	tests := []struct {
		name    string
		idle    time.Duration
		ackDel  time.Duration
		wantIdl time.Duration
		wantAck time.Duration
	}{
		{"sub-millisecond rounds up", 1500 * time.Microsecond, time.Microsecond, 2 * time.Millisecond, time.Millisecond},
		{"negative is zero", -time.Second, -time.Second, 0, 0},
		{"largest", time.Duration(1<<63 - 1), 25 * time.Millisecond, time.Duration(maxDurationMillis) * time.Millisecond, 25 * time.Millisecond},
	}
	for _, tt := range tests {
		p := DefaultTransportParameters()
		p.MaxIdleTimeout, p.MaxAckDelay = tt.idle, tt.ackDel
		got, err := ParseTransportParameters(p.Append(nil), false)
		if err != nil || got.MaxIdleTimeout != tt.wantIdl || got.MaxAckDelay != tt.wantAck {
			t.Errorf("%s: idle %v ack delay %v, %v", tt.name, got.MaxIdleTimeout, got.MaxAckDelay, err)
		}
	}
	// An idle timeout beyond what a Duration holds saturates.
	b := appendIntParam(nil, tpMaxIdleTimeout, MaxVarint)
	got, err := ParseTransportParameters(b, true)
	if err != nil || got.MaxIdleTimeout != time.Duration(maxDurationMillis)*time.Millisecond {
		t.Errorf("huge idle timeout: %v, %v", got.MaxIdleTimeout, err)
	}
}

func TestTransportParametersIgnored(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	b := cat(
		appendBytesParam(nil, 27, []byte("grease")),           // 31*0+27
		appendBytesParam(nil, 31*1000+27, nil),                // reserved
		appendBytesParam(nil, 0x11, []byte{0, 0, 0, 1}),       // version_information
		appendBytesParam(nil, 0xff04de1b, []byte{1, 2, 3, 4}), // unknown
		appendBytesParam(nil, MaxVarint, []byte{9}),
		appendIntParam(nil, tpInitialMaxData, 77),
	)
	p, err := ParseTransportParameters(b, false)
	want := DefaultTransportParameters()
	want.InitialMaxData = 77
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v, %v", p, err)
	}
	// Non-minimal integer encodings are fine.
	b = cat(AppendVarint(nil, tpInitialMaxData), []byte{8}, appendVarintN(nil, 5, 8))
	if p, err := ParseTransportParameters(b, false); err != nil || p.InitialMaxData != 5 {
		t.Errorf("8-byte integer: %v, %v", p.InitialMaxData, err)
	}
}

func TestTransportParametersErrors(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	i := func(id, v uint64) []byte { return appendIntParam(nil, id, v) }
	raw := func(id uint64, v []byte) []byte { return appendBytesParam(nil, id, v) }
	pa := func(cidLen, extra int) []byte {
		v := make([]byte, 24)
		v = append(v, byte(cidLen))
		v = append(v, make([]byte, max(cidLen, 0)+16+extra)...)
		return raw(tpPreferredAddress, v)
	}
	tests := []struct {
		name       string
		b          []byte
		fromServer bool
	}{
		{"truncated ID", []byte{0x40}, true},
		{"truncated length", []byte{0x04, 0x40}, true},
		{"value beyond data", []byte{0x04, 0x04, 0x80, 0x00}, true},
		{"duplicate", cat(i(tpInitialMaxData, 1), i(tpInitialMaxData, 2)), true},
		{"duplicate flag", cat(raw(tpDisableActiveMigration, nil), raw(tpDisableActiveMigration, nil)), true},
		{"duplicate known after others", cat(i(tpInitialMaxPathID, 1), i(tpMaxAckDelay, 2), i(tpInitialMaxPathID, 1)), true},
		{"original_destination_connection_id from client", raw(tpOriginalDestinationConnectionID, testDCID), false},
		{"stateless_reset_token from client", raw(tpStatelessResetToken, testReset[:]), false},
		{"preferred_address from client", pa(8, 0), false},
		{"retry_source_connection_id from client", raw(tpRetrySourceConnectionID, testDCID), false},
		{"max_udp_payload_size 1199", i(tpMaxUDPPayloadSize, 1199), true},
		{"ack_delay_exponent 21", i(tpAckDelayExponent, 21), true},
		{"max_ack_delay 2^14", i(tpMaxAckDelay, 1<<14), true},
		{"active_connection_id_limit 1", i(tpActiveConnectionIDLimit, 1), true},
		{"active_connection_id_limit 0", i(tpActiveConnectionIDLimit, 0), true},
		{"initial_max_streams_bidi above 2^60", i(tpInitialMaxStreamsBidi, MaxStreamCount+1), true},
		{"initial_max_streams_uni above 2^60", i(tpInitialMaxStreamsUni, MaxStreamCount+1), true},
		{"initial_max_path_id above 2^32-1", i(tpInitialMaxPathID, MaxPathIDLimit+1), true},
		{"original_destination_connection_id of 21 bytes", raw(tpOriginalDestinationConnectionID, make([]byte, 21)), true},
		{"initial_source_connection_id of 21 bytes", raw(tpInitialSourceConnectionID, make([]byte, 21)), true},
		{"retry_source_connection_id of 21 bytes", raw(tpRetrySourceConnectionID, make([]byte, 21)), true},
		{"stateless_reset_token of 15 bytes", raw(tpStatelessResetToken, make([]byte, 15)), true},
		{"stateless_reset_token of 17 bytes", raw(tpStatelessResetToken, make([]byte, 17)), true},
		{"disable_active_migration with a value", raw(tpDisableActiveMigration, []byte{0}), true},
		{"integer with trailing byte", raw(tpInitialMaxData, []byte{1, 2}), true},
		{"empty integer", raw(tpMaxIdleTimeout, nil), true},
		{"integer cut short", raw(tpInitialMaxData, []byte{0x80, 1}), true},
		{"preferred_address too short", raw(tpPreferredAddress, make([]byte, 40)), true},
		{"preferred_address connection ID of 0 bytes", pa(0, 0), true},
		{"preferred_address connection ID of 21 bytes", pa(21, 0), true},
		{"preferred_address with a trailing byte", pa(8, 1), true},
		{"preferred_address one byte short", pa(8, -1), true},
	}
	for _, tt := range tests {
		_, err := ParseTransportParameters(tt.b, tt.fromServer)
		var te *qerr.TransportError
		if !errors.As(err, &te) || te.Code != qerr.TransportParameterError {
			t.Errorf("%s: error %v", tt.name, err)
		}
	}
}

func TestTransportParametersLimitsAccepted(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	b := cat(
		appendIntParam(nil, tpMaxUDPPayloadSize, 1200),
		appendIntParam(nil, tpInitialMaxStreamsBidi, MaxStreamCount),
		appendIntParam(nil, tpInitialMaxStreamsUni, MaxStreamCount),
		appendIntParam(nil, tpAckDelayExponent, 20),
		appendIntParam(nil, tpMaxAckDelay, 1<<14-1),
		appendIntParam(nil, tpActiveConnectionIDLimit, 2),
		appendBytesParam(nil, tpInitialSourceConnectionID, make([]byte, 20)),
		appendIntParam(nil, tpInitialMaxPathID, MaxPathIDLimit),
	)
	if _, err := ParseTransportParameters(b, false); err != nil {
		t.Error(err)
	}
}
