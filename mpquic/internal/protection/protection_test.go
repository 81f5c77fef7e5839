package protection

import (
	"bytes"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	s = strings.Join(strings.Fields(s), "")
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var dcid = []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}

// RFC 9001 Appendix A.1.
func TestInitialKeys(t *testing.T) {
	cs, ss := InitialSecrets(dcid)
	if want := unhex(t, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea"); !bytes.Equal(cs, want) {
		t.Fatalf("client secret %x", cs)
	}
	if want := unhex(t, "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b"); !bytes.Equal(ss, want) {
		t.Fatalf("server secret %x", ss)
	}
	for _, tt := range []struct{ secret, key, iv, hp string }{
		{"c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea", "1f369613dd76d5467730efcbe3b1a22d", "fa044b2f42a3fd3b46fb255c", "9f50449e04a0e810283a1e9933adedd2"},
		{"3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b", "cf3a5331653c364c88f0f379b6067e37", "0ac1493ca1905853b0bba03e", "c206b8d9b9f0f37644430b490eeaa314"},
	} {
		sec := unhex(t, tt.secret)
		for label, want := range map[string]string{"quic key": tt.key, "quic iv": tt.iv, "quic hp": tt.hp} {
			got := HKDFExpandLabel(sha256.New, sec, label, nil, len(want)/2)
			if hex.EncodeToString(got) != want {
				t.Errorf("%s = %x, want %s", label, got, want)
			}
		}
	}
}

const clientInitialCrypto = `060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
0d0010000e0403050306030203080408 050806002d00020101001c0002400100
3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
75300901100f088394c8f03e51570806 048000ffff`

const clientInitialProtected = `c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
e221af44860018ab0856972e194cd934`

// RFC 9001 Appendix A.2: the client Initial, byte for byte, and back.
func TestClientInitialVector(t *testing.T) {
	hdr := unhex(t, "c300000001088394c8f03e5157080000449e00000002")
	payload := unhex(t, clientInitialCrypto)
	payload = append(payload, make([]byte, 1162-len(payload))...)
	pkt := append(append([]byte(nil), hdr...), payload...)
	seal, _ := NewInitialKeys(dcid, true)
	out, err := SealPacket(seal.AEAD, seal.HP, pkt, len(hdr), 18, 4, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, clientInitialProtected)
	if !bytes.Equal(out, want) {
		t.Fatalf("protected client Initial differs:\n got %x\nwant %x", out[:64], want[:64])
	}
	// The server opens it.
	_, open := NewInitialKeys(dcid, false)
	pnLen, trunc, err := UnprotectHeader(open.HP, out, 18)
	if err != nil || pnLen != 4 || trunc != 2 {
		t.Fatalf("unprotect: %d %d %v", pnLen, trunc, err)
	}
	got, err := OpenPacket(open.AEAD, out, 22, 0, 2)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("open: %v", err)
	}
}

// RFC 9001 Appendix A.3: the server Initial.
func TestServerInitialVector(t *testing.T) {
	hdr := unhex(t, "c1000000010008f067a5502a4262b50040750001")
	payload := unhex(t, `02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
020304`)
	pkt := append(append([]byte(nil), hdr...), payload...)
	seal, _ := NewInitialKeys(dcid, false)
	out, err := SealPacket(seal.AEAD, seal.HP, pkt, len(hdr), 18, 2, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, `cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
2158407dd074ee`)
	if !bytes.Equal(out, want) {
		t.Fatalf("protected server Initial:\n got %x\nwant %x", out, want)
	}
}

// RFC 9001 Appendix A.4: the Retry integrity tag.
func TestRetryVector(t *testing.T) {
	retry := unhex(t, "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba")
	tag := RetryIntegrityTag(dcid, retry[:len(retry)-16])
	if !bytes.Equal(tag[:], retry[len(retry)-16:]) {
		t.Fatalf("tag %x", tag)
	}
	if !VerifyRetryIntegrity(dcid, retry) {
		t.Fatal("verification failed")
	}
	retry[5] ^= 1
	if VerifyRetryIntegrity(dcid, retry) || VerifyRetryIntegrity(dcid, retry[:10]) {
		t.Fatal("tampered Retry verified")
	}
}

// RFC 9001 Appendix A.5: ChaCha20-Poly1305 short header packet.
func TestChaChaShortHeaderVector(t *testing.T) {
	secret := unhex(t, "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b")
	s, err := SuiteByID(tls.TLS_CHACHA20_POLY1305_SHA256)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKeys(s, secret)
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(k.AEAD.makeNonce(0, 654360564)); got != "e0459b3474bdd0e46d417eb0" {
		t.Fatalf("nonce %s", got)
	}
	if ku := NextSecret(s, secret); hex.EncodeToString(ku) != "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9" {
		t.Fatalf("ku %x", ku)
	}
	pkt := []byte{0x42, 0x00, 0xbf, 0xf4, 0x01}
	out, err := SealPacket(k.AEAD, k.HP, pkt, 4, 1, 3, 0, 654360564)
	if err != nil {
		t.Fatal(err)
	}
	if want := "4cfe4189655e5cd55c41f69080575d7999c25a5bfb"; hex.EncodeToString(out) != want {
		t.Fatalf("packet %x, want %s", out, want)
	}
	pnLen, trunc, err := UnprotectHeader(k.HP, out, 1)
	if err != nil || pnLen != 3 || trunc != 0x00bff4 {
		t.Fatalf("unprotect %d %x %v", pnLen, trunc, err)
	}
	p, err := OpenPacket(k.AEAD, out, 4, 0, 654360564)
	if err != nil || !bytes.Equal(p, []byte{1}) {
		t.Fatalf("open %x %v", p, err)
	}
}

// draft-ietf-quic-multipath-21 Section 2.4 example.
func TestMultipathNonce(t *testing.T) {
	a := &AEAD{}
	copy(a.iv[:], unhex(t, "6b26114b9cba2b63a9e8dd4f"))
	if got := hex.EncodeToString(a.makeNonce(3, 54321)); got != "6b2611489cba2b63a9e8097e" {
		t.Fatalf("nonce %s", got)
	}
}

func TestRoundTripAllSuites(t *testing.T) {
	for _, id := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		s, _ := SuiteByID(id)
		secret := bytes.Repeat([]byte{byte(id)}, s.hash.Size())
		k, err := NewKeys(s, secret)
		if err != nil {
			t.Fatal(err)
		}
		for _, pathID := range []uint32{0, 7} {
			hdr := []byte{0x41, 1, 2, 3, 4, 5, 6, 7, 8, 0x12, 0x34}
			payload := bytes.Repeat([]byte{0xab}, 100)
			pkt := make([]byte, 0, 200)
			pkt = append(append(pkt, hdr...), payload...)
			out, err := SealPacket(k.AEAD, k.HP, pkt, len(hdr), 9, 2, pathID, 0x1234)
			if err != nil {
				t.Fatal(err)
			}
			if &out[0] != &pkt[0] {
				t.Fatal("sealing was not in place")
			}
			cp := append([]byte(nil), out...)
			pnLen, trunc, err := UnprotectHeader(k.HP, cp, 9)
			if err != nil || pnLen != 2 || trunc != 0x1234 || !bytes.Equal(cp[:len(hdr)], hdr) {
				t.Fatalf("suite %x: header %x %v", id, cp[:len(hdr)], err)
			}
			got, err := OpenPacket(k.AEAD, cp, len(hdr), pathID, 0x1234)
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("suite %x: open %v", id, err)
			}
			// Wrong path ID, wrong packet number, flipped bit: all fail.
			for _, mut := range []func([]byte) (uint32, uint64){
				func(b []byte) (uint32, uint64) { return pathID + 1, 0x1234 },
				func(b []byte) (uint32, uint64) { return pathID, 0x1235 },
				func(b []byte) (uint32, uint64) { b[len(b)-1] ^= 1; return pathID, 0x1234 },
				func(b []byte) (uint32, uint64) { b[2] ^= 1; return pathID, 0x1234 },
			} {
				c2 := append([]byte(nil), out...)
				UnprotectHeader(k.HP, c2, 9)
				pid, pn := mut(c2)
				if _, err := OpenPacket(k.AEAD, c2, len(hdr), pid, pn); err == nil {
					t.Fatalf("suite %x: tampered packet opened", id)
				}
			}
		}
	}
}

func TestKeyUpdateDerivation(t *testing.T) {
	s, _ := SuiteByID(tls.TLS_AES_128_GCM_SHA256)
	secret := bytes.Repeat([]byte{1}, 32)
	// HKDF-Expand-Label(secret, "quic ku", "", 32) computed by hand.
	info := append([]byte{0, 32, 13}, "tls13 quic ku"...)
	info = append(info, 0)
	want, err := hkdf.Expand(sha256.New, secret, string(info), 32)
	if err != nil {
		t.Fatal(err)
	}
	if got := NextSecret(s, secret); !bytes.Equal(got, want) {
		t.Fatalf("next secret %x, want %x", got, want)
	}
	s384, _ := SuiteByID(tls.TLS_AES_256_GCM_SHA384)
	if n := NextSecret(s384, bytes.Repeat([]byte{1}, 48)); len(n) != 48 {
		t.Fatalf("SHA-384 next secret has %d bytes", len(n))
	}
}

func TestShortPackets(t *testing.T) {
	seal, _ := NewInitialKeys(dcid, true)
	for n := 0; n < 40; n++ {
		b := make([]byte, n)
		if _, _, err := UnprotectHeader(seal.HP, b, 18); err == nil && n < 18+20 {
			t.Fatalf("%d-byte packet unprotected", n)
		}
		if _, err := OpenPacket(seal.AEAD, b, min(n, 5), 0, 0); err == nil {
			t.Fatalf("%d-byte packet opened", n)
		}
	}
	if _, err := SuiteByID(0x1301 + 0x100); err == nil {
		t.Fatal("unknown suite accepted")
	}
}

func FuzzOpenPacket(f *testing.F) {
	f.Add(unhex(f, clientInitialProtected), 18)
	f.Add([]byte{0x40, 1, 2, 3}, 1)
	_, open := NewInitialKeys(dcid, false)
	f.Fuzz(func(t *testing.T, b []byte, pnOff int) {
		if pnOff < 0 || pnOff > 64 {
			return
		}
		pnLen, trunc, err := UnprotectHeader(open.HP, b, pnOff)
		if err != nil {
			return
		}
		OpenPacket(open.AEAD, b, pnOff+pnLen, 0, trunc)
	})
}

func benchSuites(b *testing.B, open bool) {
	for _, id := range []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256} {
		s, _ := SuiteByID(id)
		k, _ := NewKeys(s, bytes.Repeat([]byte{1}, s.hash.Size()))
		name := tls.CipherSuiteName(id)
		b.Run(name, func(b *testing.B) {
			pkt := make([]byte, 1350, 1400)
			pkt[0] = 0x43 // short header, 4-byte packet number
			b.SetBytes(1350)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				out, _ := SealPacket(k.AEAD, k.HP, pkt[:1350-16], 13, 9, 4, 0, uint64(i))
				if open {
					UnprotectHeader(k.HP, out, 9)
					if _, err := OpenPacket(k.AEAD, out, 13, 0, uint64(i)); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func BenchmarkSealPacket(b *testing.B)        { benchSuites(b, false) }
func BenchmarkSealAndOpenPacket(b *testing.B) { benchSuites(b, true) }
