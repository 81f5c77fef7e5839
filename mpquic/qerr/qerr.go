// Package qerr defines the errors of the QUIC transport: transport error codes
// (RFC 9000 Section 20.1), the multipath path-abandon codes
// (draft-ietf-quic-multipath-21 Section 7.3), and the error values a
// connection reports when it closes.
package qerr

import (
	"crypto/tls"
	"fmt"
)

// TransportErrorCode is a QUIC transport error code (RFC 9000 Section 20.1).
type TransportErrorCode uint64

// Transport error codes of RFC 9000 Section 20.1.
const (
	NoError                 TransportErrorCode = 0x00
	InternalError           TransportErrorCode = 0x01
	ConnectionRefused       TransportErrorCode = 0x02
	FlowControlError        TransportErrorCode = 0x03
	StreamLimitError        TransportErrorCode = 0x04
	StreamStateError        TransportErrorCode = 0x05
	FinalSizeError          TransportErrorCode = 0x06
	FrameEncodingError      TransportErrorCode = 0x07
	TransportParameterError TransportErrorCode = 0x08
	ConnectionIDLimitError  TransportErrorCode = 0x09
	ProtocolViolation       TransportErrorCode = 0x0a
	InvalidToken            TransportErrorCode = 0x0b
	ApplicationErrorCode    TransportErrorCode = 0x0c
	CryptoBufferExceeded    TransportErrorCode = 0x0d
	KeyUpdateError          TransportErrorCode = 0x0e
	AEADLimitReached        TransportErrorCode = 0x0f
	NoViablePath            TransportErrorCode = 0x10
	// CryptoErrorBase is the first of the 256 codes 0x0100-0x01ff that carry
	// a TLS alert (RFC 9001 Section 4.8).
	CryptoErrorBase TransportErrorCode = 0x0100
)

// Path abandon reasons of draft-ietf-quic-multipath-21 Section 7.3, carried
// in PATH_ABANDON frames.
const (
	ApplicationAbandonPath   TransportErrorCode = 0x3e
	PathResourceLimitReached TransportErrorCode = 0x3e75
	PathUnstableOrPoor       TransportErrorCode = 0x3e76
	NoCIDAvailableForPath    TransportErrorCode = 0x3e77
)

var codeNames = map[TransportErrorCode]string{
	NoError:                  "NO_ERROR",
	InternalError:            "INTERNAL_ERROR",
	ConnectionRefused:        "CONNECTION_REFUSED",
	FlowControlError:         "FLOW_CONTROL_ERROR",
	StreamLimitError:         "STREAM_LIMIT_ERROR",
	StreamStateError:         "STREAM_STATE_ERROR",
	FinalSizeError:           "FINAL_SIZE_ERROR",
	FrameEncodingError:       "FRAME_ENCODING_ERROR",
	TransportParameterError:  "TRANSPORT_PARAMETER_ERROR",
	ConnectionIDLimitError:   "CONNECTION_ID_LIMIT_ERROR",
	ProtocolViolation:        "PROTOCOL_VIOLATION",
	InvalidToken:             "INVALID_TOKEN",
	ApplicationErrorCode:     "APPLICATION_ERROR",
	CryptoBufferExceeded:     "CRYPTO_BUFFER_EXCEEDED",
	KeyUpdateError:           "KEY_UPDATE_ERROR",
	AEADLimitReached:         "AEAD_LIMIT_REACHED",
	NoViablePath:             "NO_VIABLE_PATH",
	ApplicationAbandonPath:   "APPLICATION_ABANDON_PATH",
	PathResourceLimitReached: "PATH_RESOURCE_LIMIT_REACHED",
	PathUnstableOrPoor:       "PATH_UNSTABLE_OR_POOR",
	NoCIDAvailableForPath:    "NO_CID_AVAILABLE_FOR_PATH",
}

// String returns the code's name as the RFC spells it, CRYPTO_ERROR(alert)
// for TLS alerts, or the number in hexadecimal.
func (c TransportErrorCode) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	if c.IsCryptoError() {
		return fmt.Sprintf("CRYPTO_ERROR(%s)", tls.AlertError(c-CryptoErrorBase))
	}
	return fmt.Sprintf("0x%x", uint64(c))
}

// IsCryptoError reports whether c carries a TLS alert.
func (c TransportErrorCode) IsCryptoError() bool {
	return c >= CryptoErrorBase && c < CryptoErrorBase+0x100
}

// CryptoError returns the transport error code for a TLS alert.
func CryptoError(alert uint8) TransportErrorCode {
	return CryptoErrorBase + TransportErrorCode(alert)
}

// TransportError is a connection error signalled with a CONNECTION_CLOSE
// frame of type 0x1c, by us (Remote false) or by the peer (Remote true).
type TransportError struct {
	Code TransportErrorCode
	// FrameType is the type of the frame that triggered the error, 0 if
	// unknown or not frame-related.
	FrameType uint64
	Reason    string
	Remote    bool
}

// New returns a local transport error with a formatted reason.
func New(code TransportErrorCode, format string, args ...any) *TransportError {
	return &TransportError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// NewFrame returns a local transport error attributed to a frame type.
func NewFrame(code TransportErrorCode, frameType uint64, format string, args ...any) *TransportError {
	return &TransportError{Code: code, FrameType: frameType, Reason: fmt.Sprintf(format, args...)}
}

func (e *TransportError) Error() string {
	side := "local"
	if e.Remote {
		side = "remote"
	}
	s := fmt.Sprintf("quic: %s transport error %s", side, e.Code)
	if e.FrameType != 0 {
		s += fmt.Sprintf(" (frame 0x%x)", e.FrameType)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is match any *TransportError with the same code.
func (e *TransportError) Is(target error) bool {
	t, ok := target.(*TransportError)
	return ok && t.Code == e.Code
}

// ApplicationError is a connection closed by an application with a
// CONNECTION_CLOSE frame of type 0x1d, or a stream reset or stopped by one.
type ApplicationError struct {
	Code   uint64
	Reason string
	Remote bool
}

func (e *ApplicationError) Error() string {
	side := "local"
	if e.Remote {
		side = "remote"
	}
	if e.Reason == "" {
		return fmt.Sprintf("quic: %s application error 0x%x", side, e.Code)
	}
	return fmt.Sprintf("quic: %s application error 0x%x: %s", side, e.Code, e.Reason)
}

// IdleTimeoutError reports that a connection was closed silently because no
// packet arrived within the idle timeout (RFC 9000 Section 10.1).
type IdleTimeoutError struct{ Handshake bool }

func (e *IdleTimeoutError) Error() string {
	if e.Handshake {
		return "quic: handshake did not complete before the idle timeout"
	}
	return "quic: idle timeout: no recent network activity"
}

// StatelessResetError reports that the peer reset the connection with a
// stateless reset (RFC 9000 Section 10.3).
type StatelessResetError struct{}

func (StatelessResetError) Error() string { return "quic: received a stateless reset" }

// VersionNegotiationError reports that the server supports none of our
// versions (RFC 9000 Section 6).
type VersionNegotiationError struct{ Offered []uint32 }

func (e *VersionNegotiationError) Error() string {
	return fmt.Sprintf("quic: no compatible version, server offers %#x", e.Offered)
}

// StreamError reports that a stream direction was aborted: the peer reset it
// with RESET_STREAM (reading) or asked us to stop with STOP_SENDING
// (writing), or we did so ourselves (Remote false).
type StreamError struct {
	StreamID uint64
	Code     uint64
	Remote   bool
}

func (e *StreamError) Error() string {
	side := "local"
	if e.Remote {
		side = "remote"
	}
	return fmt.Sprintf("quic: stream %d aborted by %s with error 0x%x", e.StreamID, side, e.Code)
}
