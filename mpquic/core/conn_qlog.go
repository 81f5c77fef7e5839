package core

import (
	"time"

	"github.com/mpq/mpq/mpquic/internal/wire"
	"github.com/mpq/mpq/mpquic/qlog"
)

// qlogParams logs transport parameters as quic:parameters_set; initiator
// is "local" or "remote".
func (c *Conn) qlogParams(initiator string, p *wire.TransportParameters) {
	if c.qlog == nil {
		return
	}
	ps := []qlog.Param{
		{Key: "max_idle_timeout", Uint: uint64(p.MaxIdleTimeout / time.Millisecond)},
		{Key: "max_udp_payload_size", Uint: p.MaxUDPPayloadSize},
		{Key: "ack_delay_exponent", Uint: p.AckDelayExponent},
		{Key: "max_ack_delay", Uint: uint64(p.MaxAckDelay / time.Millisecond)},
		{Key: "active_connection_id_limit", Uint: p.ActiveConnectionIDLimit},
		{Key: "initial_max_data", Uint: p.InitialMaxData},
		{Key: "initial_max_stream_data_bidi_local", Uint: p.InitialMaxStreamDataBidiLocal},
		{Key: "initial_max_stream_data_bidi_remote", Uint: p.InitialMaxStreamDataBidiRemote},
		{Key: "initial_max_stream_data_uni", Uint: p.InitialMaxStreamDataUni},
		{Key: "initial_max_streams_bidi", Uint: p.InitialMaxStreamsBidi},
		{Key: "initial_max_streams_uni", Uint: p.InitialMaxStreamsUni},
		{Key: "disable_active_migration", IsBool: true, Bool: p.DisableActiveMigration},
	}
	if p.HasInitialSourceConnectionID {
		ps = append(ps, qlog.Param{Key: "initial_source_connection_id", Hex: true, Bytes: p.InitialSourceConnectionID})
	}
	if p.HasOriginalDestinationConnectionID {
		ps = append(ps, qlog.Param{Key: "original_destination_connection_id", Hex: true, Bytes: p.OriginalDestinationConnectionID})
	}
	if p.HasRetrySourceConnectionID {
		ps = append(ps, qlog.Param{Key: "retry_source_connection_id", Hex: true, Bytes: p.RetrySourceConnectionID})
	}
	if p.StatelessResetToken != nil {
		ps = append(ps, qlog.Param{Key: "stateless_reset_token", Hex: true, Bytes: p.StatelessResetToken[:]})
	}
	if p.HasInitialMaxPathID {
		ps = append(ps, qlog.Param{Key: "initial_max_path_id", Uint: p.InitialMaxPathID})
	}
	c.qlog.ParametersSet(c.now, initiator, ps)
}
