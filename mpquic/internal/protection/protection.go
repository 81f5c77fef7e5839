// Package protection implements QUIC packet protection (RFC 9001 Section 5):
// the initial secrets, AEAD payload protection, header protection, key
// updates (Section 6) and the Retry integrity tag (Section 5.8), plus the
// multipath nonce of draft-ietf-quic-multipath-21 Section 2.4. It works on
// byte slices; the caller knows where the packet number is.
package protection

import (
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"golang.org/x/crypto/chacha20"
	"golang.org/x/crypto/chacha20poly1305"
)

// Suite is a TLS 1.3 cipher suite as QUIC uses it.
type Suite struct {
	id     uint16
	hash   crypto.Hash
	keyLen int
	// confidentiality and integrity limits in packets (RFC 9001 Section 6.6).
	confLimit, intLimit uint64
	chacha              bool
}

var suites = map[uint16]*Suite{
	tls.TLS_AES_128_GCM_SHA256:       {id: tls.TLS_AES_128_GCM_SHA256, hash: crypto.SHA256, keyLen: 16, confLimit: 1 << 23, intLimit: 1 << 52},
	tls.TLS_AES_256_GCM_SHA384:       {id: tls.TLS_AES_256_GCM_SHA384, hash: crypto.SHA384, keyLen: 32, confLimit: 1 << 23, intLimit: 1 << 52},
	tls.TLS_CHACHA20_POLY1305_SHA256: {id: tls.TLS_CHACHA20_POLY1305_SHA256, hash: crypto.SHA256, keyLen: 32, confLimit: 1 << 62, intLimit: 1 << 36, chacha: true},
}

// SuiteByID returns the suite with a TLS cipher suite ID.
func SuiteByID(id uint16) (*Suite, error) {
	s, ok := suites[id]
	if !ok {
		return nil, fmt.Errorf("protection: unsupported cipher suite 0x%04x", id)
	}
	return s, nil
}

// ID is the TLS cipher suite ID.
func (s *Suite) ID() uint16 { return s.id }

// ConfidentialityLimit is how many packets one key may protect
// (RFC 9001 Section 6.6).
func (s *Suite) ConfidentialityLimit() uint64 { return s.confLimit }

// IntegrityLimit is how many forged packets may fail authentication before
// the connection must close (RFC 9001 Section 6.6).
func (s *Suite) IntegrityLimit() uint64 { return s.intLimit }

func (s *Suite) newHash() func() hash.Hash {
	if s.hash == crypto.SHA384 {
		return sha512.New384
	}
	return sha256.New
}

// HKDFExpandLabel is HKDF-Expand-Label of TLS 1.3 (RFC 8446 Section 7.1).
func HKDFExpandLabel(h func() hash.Hash, secret []byte, label string, context []byte, length int) []byte {
	info := make([]byte, 0, 4+6+len(label)+len(context))
	info = binary.BigEndian.AppendUint16(info, uint16(length))
	info = append(info, byte(6+len(label)))
	info = append(info, "tls13 "...)
	info = append(info, label...)
	info = append(info, byte(len(context)))
	info = append(info, context...)
	out, err := hkdf.Expand(h, secret, string(info), length)
	if err != nil {
		// Only lengths beyond 255 hash blocks fail; ours are tiny.
		panic("protection: HKDF-Expand: " + err.Error())
	}
	return out
}

// initialSaltV1 is the QUIC version 1 initial salt (RFC 9001 Section 5.2).
var initialSaltV1 = []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}

// InitialSecrets derives the client and server Initial secrets from the
// client's first Destination Connection ID (RFC 9001 Section 5.2).
func InitialSecrets(dcid []byte) (clientSecret, serverSecret []byte) {
	initial, err := hkdf.Extract(sha256.New, dcid, initialSaltV1)
	if err != nil {
		panic("protection: HKDF-Extract: " + err.Error())
	}
	clientSecret = HKDFExpandLabel(sha256.New, initial, "client in", nil, 32)
	serverSecret = HKDFExpandLabel(sha256.New, initial, "server in", nil, 32)
	return
}

// NextSecret derives the secret of the next key phase (RFC 9001 Section 6.1).
func NextSecret(s *Suite, secret []byte) []byte {
	return HKDFExpandLabel(s.newHash(), secret, "quic ku", nil, s.hash.Size())
}

// HeaderProtector applies and removes header protection
// (RFC 9001 Section 5.4).
type HeaderProtector struct {
	block  cipher.Block // AES suites
	chacha []byte       // ChaCha20 key
	mask   [16]byte
}

// NewHeaderProtector derives the header protection key ("quic hp") of a
// secret.
func NewHeaderProtector(s *Suite, secret []byte) (*HeaderProtector, error) {
	key := HKDFExpandLabel(s.newHash(), secret, "quic hp", nil, s.keyLen)
	if s.chacha {
		return &HeaderProtector{chacha: key}, nil
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("protection: %w", err)
	}
	return &HeaderProtector{block: b}, nil
}

// errShort is returned for packets too short to carry a header
// protection sample.
var errShort = errors.New("protection: packet too short for the header protection sample")

// computeMask fills h.mask from the 16-byte sample (Sections 5.4.3, 5.4.4).
func (h *HeaderProtector) computeMask(sample []byte) {
	if h.block != nil {
		h.block.Encrypt(h.mask[:], sample)
		return
	}
	counter := binary.LittleEndian.Uint32(sample[:4])
	c, err := chacha20.NewUnauthenticatedCipher(h.chacha, sample[4:16])
	if err != nil {
		panic("protection: chacha20: " + err.Error())
	}
	c.SetCounter(counter)
	clear(h.mask[:5])
	c.XORKeyStream(h.mask[:5], h.mask[:5])
}

// Protect applies header protection in place: pkt[pnOff:pnOff+pnLen] holds
// the packet number and the ciphertext follows it.
func (h *HeaderProtector) Protect(pkt []byte, pnOff, pnLen int) error {
	if pnOff+4+16 > len(pkt) || pnLen < 1 || pnLen > 4 {
		return errShort
	}
	h.computeMask(pkt[pnOff+4 : pnOff+20])
	if pkt[0]&0x80 != 0 {
		pkt[0] ^= h.mask[0] & 0x0f
	} else {
		pkt[0] ^= h.mask[0] & 0x1f
	}
	for i := 0; i < pnLen; i++ {
		pkt[pnOff+i] ^= h.mask[1+i]
	}
	return nil
}

// Unprotect removes header protection in place and returns the packet
// number length read from the now clear first byte.
func (h *HeaderProtector) Unprotect(pkt []byte, pnOff int) (int, error) {
	if pnOff < 1 || pnOff+4+16 > len(pkt) {
		return 0, errShort
	}
	h.computeMask(pkt[pnOff+4 : pnOff+20])
	if pkt[0]&0x80 != 0 {
		pkt[0] ^= h.mask[0] & 0x0f
	} else {
		pkt[0] ^= h.mask[0] & 0x1f
	}
	pnLen := int(pkt[0]&0x03) + 1
	for i := 0; i < pnLen; i++ {
		pkt[pnOff+i] ^= h.mask[1+i]
	}
	return pnLen, nil
}

// AEAD protects packet payloads (RFC 9001 Section 5.3).
type AEAD struct {
	aead  cipher.AEAD
	iv    [12]byte
	nonce [12]byte
}

// NewAEAD derives the packet protection key ("quic key") and IV
// ("quic iv") of a secret.
func NewAEAD(s *Suite, secret []byte) (*AEAD, error) {
	h := s.newHash()
	key := HKDFExpandLabel(h, secret, "quic key", nil, s.keyLen)
	iv := HKDFExpandLabel(h, secret, "quic iv", nil, 12)
	var a cipher.AEAD
	var err error
	if s.chacha {
		a, err = chacha20poly1305.New(key)
	} else {
		var b cipher.Block
		if b, err = aes.NewCipher(key); err == nil {
			a, err = cipher.NewGCM(b)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("protection: %w", err)
	}
	out := &AEAD{aead: a}
	copy(out.iv[:], iv)
	return out, nil
}

// makeNonce XORs the IV with the 96-bit path-and-packet-number: path ID in
// the top 32 bits, two zero bits, the 62-bit packet number
// (draft-ietf-quic-multipath-21 Section 2.4; with path 0 it is RFC 9001's
// nonce).
func (a *AEAD) makeNonce(pathID uint32, pn uint64) []byte {
	// The IV XORed with the path ID (4 bytes) and the packet number (8
	// bytes), both big-endian, a word at a time.
	binary.BigEndian.PutUint32(a.nonce[:4], binary.BigEndian.Uint32(a.iv[:4])^pathID)
	binary.BigEndian.PutUint64(a.nonce[4:], binary.BigEndian.Uint64(a.iv[4:])^(pn&(1<<62-1)))
	return a.nonce[:]
}

// Overhead is the tag size.
func (a *AEAD) Overhead() int { return a.aead.Overhead() }

// Seal encrypts plaintext with aad and appends the result to dst
// (dst may be plaintext[:0]).
func (a *AEAD) Seal(dst, plaintext, aad []byte, pathID uint32, pn uint64) []byte {
	return a.aead.Seal(dst, a.makeNonce(pathID, pn), plaintext, aad)
}

// Open decrypts ciphertext with aad and appends the plaintext to dst
// (dst may be ciphertext[:0]).
func (a *AEAD) Open(dst, ciphertext, aad []byte, pathID uint32, pn uint64) ([]byte, error) {
	return a.aead.Open(dst, a.makeNonce(pathID, pn), ciphertext, aad)
}

// Keys bundle the payload and header protection of one direction.
type Keys struct {
	AEAD *AEAD
	HP   *HeaderProtector
}

// NewKeys derives both keys of a secret.
func NewKeys(s *Suite, secret []byte) (Keys, error) {
	a, err := NewAEAD(s, secret)
	if err != nil {
		return Keys{}, err
	}
	hp, err := NewHeaderProtector(s, secret)
	if err != nil {
		return Keys{}, err
	}
	return Keys{AEAD: a, HP: hp}, nil
}

// NewInitialKeys returns the Initial keys of an endpoint: the client seals
// with the client secret and opens with the server's.
func NewInitialKeys(dcid []byte, isClient bool) (seal, open Keys) {
	cs, ss := InitialSecrets(dcid)
	s := suites[tls.TLS_AES_128_GCM_SHA256]
	c, _ := NewKeys(s, cs)
	v, _ := NewKeys(s, ss)
	if isClient {
		return c, v
	}
	return v, c
}

// SealPacket encrypts a packet in place: pkt[:hdrLen] is the header ending
// with the packet number (at pnOff, pnLen bytes), pkt[hdrLen:] the payload.
// The tag is appended (in pkt's spare capacity when there is room) and
// header protection applied.
func SealPacket(a *AEAD, hp *HeaderProtector, pkt []byte, hdrLen, pnOff, pnLen int, pathID uint32, pn uint64) ([]byte, error) {
	if hdrLen > len(pkt) || pnOff+pnLen != hdrLen {
		return nil, errors.New("protection: bad header layout")
	}
	if len(pkt)-pnOff+a.Overhead() < 20 {
		return nil, errShort
	}
	if need := len(pkt) + a.Overhead(); cap(pkt) < need {
		grown := make([]byte, len(pkt), need)
		copy(grown, pkt)
		pkt = grown
	}
	sealed := a.Seal(pkt[hdrLen:hdrLen], pkt[hdrLen:], pkt[:hdrLen], pathID, pn)
	pkt = pkt[:hdrLen+len(sealed)]
	if err := hp.Protect(pkt, pnOff, pnLen); err != nil {
		return nil, err
	}
	return pkt, nil
}

// UnprotectHeader removes header protection and returns the packet number
// length and its truncated value.
func UnprotectHeader(hp *HeaderProtector, pkt []byte, pnOff int) (pnLen int, truncated uint64, err error) {
	pnLen, err = hp.Unprotect(pkt, pnOff)
	if err != nil {
		return 0, 0, err
	}
	for i := 0; i < pnLen; i++ {
		truncated = truncated<<8 | uint64(pkt[pnOff+i])
	}
	return pnLen, truncated, nil
}

// OpenPacket decrypts pkt[hdrLen:] in place with pkt[:hdrLen] as associated
// data and returns the payload.
func OpenPacket(a *AEAD, pkt []byte, hdrLen int, pathID uint32, pn uint64) ([]byte, error) {
	if hdrLen > len(pkt) || len(pkt)-hdrLen < a.Overhead() {
		return nil, errShort
	}
	return a.Open(pkt[hdrLen:hdrLen], pkt[hdrLen:], pkt[:hdrLen], pathID, pn)
}

// Retry integrity key and nonce of QUIC version 1 (RFC 9001 Section 5.8).
var (
	retryKey   = []byte{0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e}
	retryNonce = []byte{0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb}
	retryAEAD  = func() cipher.AEAD {
		b, _ := aes.NewCipher(retryKey)
		a, _ := cipher.NewGCM(b)
		return a
	}()
)

// RetryIntegrityTag computes the tag of a Retry packet (without its tag)
// for the client's original DCID.
func RetryIntegrityTag(odcid, retryWithoutTag []byte) [16]byte {
	pseudo := make([]byte, 0, 1+len(odcid)+len(retryWithoutTag))
	pseudo = append(pseudo, byte(len(odcid)))
	pseudo = append(pseudo, odcid...)
	pseudo = append(pseudo, retryWithoutTag...)
	var tag [16]byte
	copy(tag[:], retryAEAD.Seal(nil, retryNonce, nil, pseudo))
	return tag
}

// VerifyRetryIntegrity checks the tag at the end of a Retry packet.
func VerifyRetryIntegrity(odcid, retryPacket []byte) bool {
	if len(retryPacket) < 16 {
		return false
	}
	tag := RetryIntegrityTag(odcid, retryPacket[:len(retryPacket)-16])
	return hmacEqual(tag[:], retryPacket[len(retryPacket)-16:])
}

func hmacEqual(a, b []byte) bool {
	var v byte
	for i := range a {
		v |= a[i] ^ b[i]
	}
	return v == 0
}
