package mpquic_test

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/protection"
	"github.com/mpq/mpq/mpquic/internal/wire"
)

// openInitial removes the protection of the Initial packet at the start
// of b, whose keys derive from dcid, and returns its frames.
func openInitial(t *testing.T, b, dcid []byte, fromClient bool) []wire.Frame {
	t.Helper()
	hdr, err := wire.ParseHeader(b, core.ConnIDLen)
	if err != nil || hdr.Type != wire.PacketInitial {
		t.Fatalf("not an Initial packet: %v", err)
	}
	clientKeys, serverKeys := protection.NewInitialKeys(dcid, true)
	k := serverKeys
	if fromClient {
		k = clientKeys
	}
	pkt := append([]byte(nil), b[:hdr.Length]...)
	pnLen, trunc, err := protection.UnprotectHeader(k.HP, pkt, hdr.PNOffset)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := protection.OpenPacket(k.AEAD, pkt, hdr.PNOffset+pnLen, 0, wire.DecodePacketNumber(-1, trunc, pnLen))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	var frames []wire.Frame
	for len(payload) > 0 {
		f, n, err := wire.ParseFrame(payload)
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
		payload = payload[n:]
	}
	return frames
}

// bigInitial returns a genuine ClientHello in one Initial packet that fills
// a datagram of size bytes with PADDING, as a client whose first datagrams
// are large sends it, and the DCID and SCID it chose.
func bigInitial(t *testing.T, size int) (pkt, dcid, scid []byte) {
	t.Helper()
	now := time.Now()
	c, err := core.NewClientConn(&core.Config{TLS: clientTLS(t)}, netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"), "", now)
	if err != nil {
		t.Fatal(err)
	}
	var crypto []byte
	for {
		d, ok := c.PollDatagram(now, nil)
		if !ok {
			break
		}
		hdr, err := wire.ParseHeader(d.Data, core.ConnIDLen)
		if err != nil {
			t.Fatal(err)
		}
		dcid, scid = append([]byte(nil), hdr.DstConnID...), append([]byte(nil), hdr.SrcConnID...)
		for _, f := range openInitial(t, d.Data, dcid, true) {
			if cf, ok := f.(*wire.CryptoFrame); ok {
				crypto = cf.Append(crypto)
			}
		}
	}
	seal, _ := protection.NewInitialKeys(dcid, true)
	b, lengthOff, pnOff := wire.AppendLongHeader(nil, wire.PacketInitial, wire.Version1, dcid, scid, nil, 0, 4)
	hdrLen := len(b)
	b = append(b, crypto...)
	b = append(b, make([]byte, size-len(b)-seal.AEAD.Overhead())...)
	if !wire.PutLongHeaderLength(b, lengthOff, len(b)-pnOff+seal.AEAD.Overhead()) {
		t.Fatalf("no Initial of %d bytes with a two-byte Length", size)
	}
	pkt, err = protection.SealPacket(seal.AEAD, seal.HP, b, hdrLen, pnOff, 4, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return pkt, dcid, scid
}

// Client Initials in datagrams larger than 2,048 bytes, up to jumbo frames,
// are answered: the server receives datagrams as large as the
// max_udp_payload_size it advertises.
func TestLargeInitialsAreAnswered(t *testing.T) {
	l, err := mpquic.Listen("127.0.0.1:0", &mpquic.Config{TLS: serverTLS(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, size := range []int{2049, 9000, 16000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			pkt, dcid, scid := bigInitial(t, size)
			if len(pkt) != size {
				t.Fatalf("built %d bytes", len(pkt))
			}
			uc, err := net.DialUDP("udp", nil, l.Addr().(*net.UDPAddr))
			if err != nil {
				t.Fatal(err)
			}
			defer uc.Close()
			if _, err := uc.Write(pkt); err != nil {
				t.Fatal(err)
			}
			uc.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 65536)
			n, err := uc.Read(buf)
			if err != nil {
				t.Fatalf("no answer to a %d-byte Initial: %v", size, err)
			}
			hdr, err := wire.ParseHeader(buf[:n], core.ConnIDLen)
			if err != nil || hdr.Type != wire.PacketInitial || !bytes.Equal(hdr.DstConnID, scid) {
				t.Fatalf("answer %+v, %v", hdr, err)
			}
			serverHello := false
			for _, f := range openInitial(t, buf[:n], dcid, false) {
				if cf, ok := f.(*wire.CryptoFrame); ok && cf.Offset == 0 && len(cf.Data) > 0 && cf.Data[0] == 2 {
					serverHello = true
				}
			}
			if !serverHello {
				t.Fatal("the answer carries no ServerHello")
			}
		})
	}
}

// Connections whose packets are 9,000 bytes both ways (jumbo frames)
// transfer data: both ends receive what they advertise.
func TestJumboPackets(t *testing.T) {
	ctx := ctxT(t, 30*time.Second)
	srv := mpquicServer(t, &mpquic.Config{MaxPacketSize: 9000})
	c, err := mpquic.Dial(ctx, srv.String(), &mpquic.Config{TLS: clientTLS(t), MaxPacketSize: 9000})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// hq.Get does not watch ctx while it reads: bound the read here.
	s.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b bytes.Buffer
	if _, err := hq.Get(ctx, s, "/small/3", &b); err != nil {
		t.Fatal(err)
	}
	checkDownload(t, "small/3", &b, getFiles(t).small[3])
	// The 10 kB came in datagrams larger than the default 1,350 bytes.
	if ps := c.Paths(); ps[0].BytesReceived/ps[0].PacketsReceived < 2000 {
		t.Fatalf("%d bytes in %d datagrams", ps[0].BytesReceived, ps[0].PacketsReceived)
	}
}
