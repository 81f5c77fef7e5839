package core

import (
	"github.com/mpq/mpq/mpquic/qerr"
)

// TLS alerts (RFC 8446 Section 6) the connection raises itself, before
// crypto/tls sees the data.
const (
	alertUnexpectedMessage = 10
	alertDecodeError       = 50
)

// TLS 1.3 handshake message limits: the largest message crypto/tls accepts,
// and the larger one it allows for certificate chains.
const (
	hsTypeClientHello   = 1
	maxHandshakeMsg     = 1 << 16
	maxCertificateMsg   = 1 << 18
	hsTypeCertificate   = 11
	hsTypeCompressedCrt = 25
)

// hsFramer follows the handshake message framing of one encryption level's
// CRYPTO stream (a 1-byte type and a 3-byte length before each message,
// RFC 8446 Section 4) so that data crypto/tls would reject with an
// internal_error alert, because a length is beyond what it accepts, or that
// is not a TLS 1.3 handshake message at all, closes the connection with the
// alert that says what is wrong: decode_error or unexpected_message
// (RFC 9001 Section 4.8).
type hsFramer struct {
	hdr  [4]byte
	hdrN int
	// body is how many bytes of the current message's body are still to
	// come.
	body int
}

// check follows data, the next bytes of the stream in order, and returns
// the CRYPTO_ERROR to close with, nil if the framing is sound so far.
func (f *hsFramer) check(data []byte) error {
	for len(data) > 0 {
		if f.body > 0 {
			n := min(f.body, len(data))
			f.body -= n
			data = data[n:]
			continue
		}
		n := copy(f.hdr[f.hdrN:], data)
		f.hdrN += n
		data = data[n:]
		if f.hdrN < 4 {
			return nil
		}
		f.hdrN = 0
		typ := f.hdr[0]
		length := int(f.hdr[1])<<16 | int(f.hdr[2])<<8 | int(f.hdr[3])
		if !knownHandshakeType(typ) {
			return qerr.New(qerr.CryptoError(alertUnexpectedMessage), "not a TLS 1.3 handshake message (type %d)", typ)
		}
		limit := maxHandshakeMsg
		if typ == hsTypeCertificate || typ == hsTypeCompressedCrt {
			limit = maxCertificateMsg
		}
		if length > limit {
			return qerr.New(qerr.CryptoError(alertDecodeError), "TLS handshake message of %d bytes, above %d", length, limit)
		}
		f.body = length
	}
	return nil
}

// knownHandshakeType reports whether t is a TLS 1.3 handshake message type
// (RFC 8446 Section 4, RFC 8879 for compressed certificates); which one is
// expected when is crypto/tls's to check.
func knownHandshakeType(t byte) bool {
	switch t {
	case 1, 2, 4, 5, 8, 11, 13, 15, 20, 24, 25, 254:
		return true
	}
	return false
}
