package protection

import (
	"bytes"
	"crypto/tls"
	"encoding/hex"
	"testing"
)

// The null protection keeps every packet's size and header protection
// layout, and refuses what AES-GCM refuses: another key, another path ID
// or packet number, a modified header or payload.
func TestNullAEAD(t *testing.T) {
	s, secret, real, null := nullTestKeys(t)
	if !null.IsNull() || real.AEAD.IsNull() {
		t.Fatal("IsNull wrong")
	}
	other, _ := NewNullAEAD(s, NextSecret(s, secret))
	hdr := []byte{0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, 0x34}
	payload := bytes.Repeat([]byte{0xab, 0xcd}, 60)
	seal := func(a *AEAD) []byte {
		pkt := make([]byte, 0, 200)
		pkt = append(append(pkt, hdr...), payload...)
		out, err := SealPacket(a, real.HP, pkt, len(hdr), 9, 2, 3, 0x1234)
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &pkt[0] {
			t.Fatal("sealing was not in place")
		}
		return out
	}
	want, got := seal(real.AEAD), seal(null)
	if len(got) != len(want) || null.Overhead() != real.AEAD.Overhead() {
		t.Fatalf("null packet %d bytes, AES-GCM %d", len(got), len(want))
	}
	cp := append([]byte(nil), got...)
	pnLen, trunc, err := UnprotectHeader(real.HP, cp, 9)
	if err != nil || pnLen != 2 || trunc != 0x1234 || !bytes.Equal(cp[:len(hdr)], hdr) {
		t.Fatalf("header %x %v", cp[:len(hdr)], err)
	}
	open, err := OpenPacket(null, cp, len(hdr), 3, 0x1234)
	if err != nil || !bytes.Equal(open, payload) {
		t.Fatalf("open: %v", err)
	}
	for name, mut := range map[string]func([]byte) (*AEAD, uint32, uint64){
		"other key":   func(b []byte) (*AEAD, uint32, uint64) { return other, 3, 0x1234 },
		"AES-GCM":     func(b []byte) (*AEAD, uint32, uint64) { return real.AEAD, 3, 0x1234 },
		"path ID":     func(b []byte) (*AEAD, uint32, uint64) { return null, 4, 0x1234 },
		"pn":          func(b []byte) (*AEAD, uint32, uint64) { return null, 3, 0x1235 },
		"payload bit": func(b []byte) (*AEAD, uint32, uint64) { b[len(hdr)+5] ^= 1; return null, 3, 0x1234 },
		"tag bit":     func(b []byte) (*AEAD, uint32, uint64) { b[len(b)-1] ^= 1; return null, 3, 0x1234 },
		"header bit":  func(b []byte) (*AEAD, uint32, uint64) { b[2] ^= 1; return null, 3, 0x1234 },
	} {
		c2 := append([]byte(nil), got...)
		UnprotectHeader(real.HP, c2, 9)
		a, pid, pn := mut(c2)
		if _, err := OpenPacket(a, c2, len(hdr), pid, pn); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	// A null packet is no AES-GCM packet either way.
	c3 := append([]byte(nil), want...)
	UnprotectHeader(real.HP, c3, 9)
	if _, err := OpenPacket(null, c3, len(hdr), 3, 0x1234); err == nil {
		t.Error("AES-GCM packet opened with the null protection")
	}
	// Seal and Open into fresh buffers too.
	a := null.aead
	nonce := make([]byte, 12)
	sealed := a.Seal([]byte{9}, nonce, payload, hdr)
	if len(sealed) != 1+len(payload)+16 || sealed[0] != 9 {
		t.Fatalf("Seal into a short dst: %d bytes", len(sealed))
	}
	opened, err := a.Open(nil, nonce, sealed[1:], hdr)
	if err != nil || !bytes.Equal(opened, payload) {
		t.Fatalf("Open into nil: %v", err)
	}
	if _, err := a.Open(nil, nonce, sealed[1:10], hdr); err == nil {
		t.Fatal("short packet opened")
	}
}

func BenchmarkNullSealAndOpenPacket(b *testing.B) {
	s, _ := SuiteByID(tls.TLS_AES_128_GCM_SHA256)
	secret := bytes.Repeat([]byte{7}, 32)
	k, _ := NewKeys(s, secret)
	a, _ := NewNullAEAD(s, secret)
	pkt := make([]byte, 1350)
	b.SetBytes(1334)
	for b.Loop() {
		pkt[0] = 0x41 // short header, 2-byte packet number
		out, _ := SealPacket(a, k.HP, pkt[:1334], 11, 9, 2, 0, 1)
		UnprotectHeader(k.HP, out, 9)
		if _, err := OpenPacket(a, out, 11, 0, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// The checksum's values are pinned: a faster checksum must give the same
// tags, or simulated packets' bytes (and every result that hashes or
// prints them) would change.
func TestNullChecksumPinned(t *testing.T) {
	b := make([]byte, 1350)
	for i := range b {
		b[i] = byte(i*7 + i>>3)
	}
	for _, tt := range []struct {
		n    int
		want uint64
	}{
		{0, 0x0},
		{7, 0x7001c715388d507},
		{31, 0x8c4e387e72f5eaee},
		{32, 0x2a647e1c361c3a2c},
		{33, 0x323f0e1b0e1d2414},
		{64, 0x5c6b6c6f6c291041},
		{100, 0x20a8c08773b5419e},
		{1334, 0x8cb060e96fa27144},
		{1350, 0xf117885e6c96cc9e},
	} {
		if got := checksum(uint64(tt.n), b[:tt.n]); got != tt.want {
			t.Errorf("checksum of %d bytes = %#x, want %#x", tt.n, got, tt.want)
		}
	}
}

// BenchmarkNullChecksum measures the checksum of a 1350-byte packet's
// worth of bytes in cache.
func BenchmarkNullChecksum(b *testing.B) {
	p := make([]byte, 1350)
	b.SetBytes(int64(len(p)))
	var h uint64
	for b.Loop() {
		h = checksum(h, p)
	}
	if h == 1 {
		b.Log(h)
	}
}

// TestNullTagPinned: the null protection's sealed packet, header
// protection and tag included, is pinned to the bytes the code wrote
// before its nonce and tag were computed a word at a time (commit
// 375eb42): the simulated packets' bytes do not change with its speed.
func TestNullTagPinned(t *testing.T) {
	_, _, keys, null := nullTestKeys(t)
	hdr := []byte{0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, 0x34}
	payload := make([]byte, 100)
	for i := range payload {
		payload[i] = byte(i*13 + 5)
	}
	pkt := append(append([]byte(nil), hdr...), payload...)
	out, err := SealPacket(null, keys.HP, pkt, len(hdr), 9, 2, 0x01020304, 0x1234)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(out[len(out)-16:]); got != nullTagPin {
		t.Errorf("tag %s, want %s", got, nullTagPin)
	}
	if got := hex.EncodeToString(out[:len(hdr)]); got != nullHeaderPin {
		t.Errorf("protected header %s, want %s", got, nullHeaderPin)
	}
}

const (
	nullTagPin    = "3bec0f7a21b34b5f721466ac0981c3cb"
	nullHeaderPin = "5a0102030405060708eeb3"
)

// nullTestKeys derives from one secret (AES-128-GCM's suite) the AES keys
// and the null protection of the tests above.
func nullTestKeys(t *testing.T) (s *Suite, secret []byte, real Keys, null *AEAD) {
	t.Helper()
	s, _ = SuiteByID(tls.TLS_AES_128_GCM_SHA256)
	secret = bytes.Repeat([]byte{7}, 32)
	real, err := NewKeys(s, secret)
	if err != nil {
		t.Fatal(err)
	}
	if null, err = NewNullAEAD(s, secret); err != nil {
		t.Fatal(err)
	}
	return s, secret, real, null
}
