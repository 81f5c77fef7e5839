package netns

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/network/linkemu"
)

// The forwarder reads the frames arriving on each router interface with
// an AF_PACKET socket and offers them to the link (a linkemu.Pipe) of
// their direction, which writes them to the other interface of the path
// at their arrival time. It carries every frame, whatever its protocol.
//
// Packet sockets with a virtio-net header (PACKET_VNET_HDR) give each
// frame's checksum state: frames the sending namespace left with a
// partial checksum (checksum offload on veths) get their checksum
// completed here, since a frame written to a packet socket arrives
// without offload state and is checked. Segmentation offload is off on
// the veths (gso_max_segs 1), so every frame is at most the MTU; a larger
// one would be counted (Foreign) and not carried. A frame's time is the
// kernel's receive timestamp, so that the forwarder's own scheduling
// delays (up to a second) do not add to the link's delay.

// Linux constants the syscall package lacks.
const (
	solPacket            = 263
	packetVnetHdr        = 15
	packetIgnoreOutgoing = 23
	packetStatistics     = 6
	vnetHdrLen           = 10
	vnetNeedsCsum        = 1
	ethPAll              = 0x0003
)

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// ifSock is one router interface: a socket that receives the frames
// arriving on it and one that sends frames out of it.
type ifSock struct {
	name  string
	rx    *os.File
	raw   syscall.RawConn
	rxFD  int
	txFD  int
	drops uint64 // kernel drops read so far (reader goroutine)
}

func openIf(name string) (*ifSock, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error, fds ...int) (*ifSock, error) {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, fmt.Errorf("%s: %s: %w", name, what, err)
	}
	rx, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, int(htons(ethPAll)))
	if err != nil {
		return fail("packet socket", err)
	}
	for _, o := range []struct {
		level, opt, v int
		what          string
	}{
		{solPacket, packetVnetHdr, 1, "PACKET_VNET_HDR"},
		{solPacket, packetIgnoreOutgoing, 1, "PACKET_IGNORE_OUTGOING"},
		{syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1, "SO_TIMESTAMPNS"},
		{syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, 16 << 20, "SO_RCVBUFFORCE"},
	} {
		if err := syscall.SetsockoptInt(rx, o.level, o.opt, o.v); err != nil {
			return fail(o.what, err, rx)
		}
	}
	if err := syscall.Bind(rx, &syscall.SockaddrLinklayer{Protocol: htons(ethPAll), Ifindex: ifi.Index}); err != nil {
		return fail("bind", err, rx)
	}
	tx, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail("packet socket", err, rx)
	}
	if err := syscall.SetsockoptInt(tx, syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, 4<<20); err != nil {
		return fail("SO_SNDBUFFORCE", err, rx, tx)
	}
	if err := syscall.Bind(tx, &syscall.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		return fail("bind", err, rx, tx)
	}
	f := os.NewFile(uintptr(rx), name)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		syscall.Close(tx)
		return nil, err
	}
	return &ifSock{name: name, rx: f, raw: raw, rxFD: rx, txFD: tx}, nil
}

// closeRx stops the reader; closeTx closes the sending socket, once
// nothing sends any more.
func (s *ifSock) closeRx() { s.rx.Close() }
func (s *ifSock) closeTx() { syscall.Close(s.txFD) }

// send writes a frame out of the interface.
func (s *ifSock) send(frame []byte) error {
	for {
		_, err := syscall.Write(s.txFD, frame)
		if err != syscall.EINTR {
			return err
		}
	}
}

// kernelDrops returns the frames the kernel dropped for the receiving
// socket since the last call (its buffer was full).
func (s *ifSock) kernelDrops() uint64 {
	var st struct{ packets, drops uint32 }
	l := uint32(unsafe.Sizeof(st))
	var n uint64
	s.raw.Control(func(fd uintptr) {
		_, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, solPacket, packetStatistics,
			uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&l)), 0)
		if e == 0 {
			n = uint64(st.drops)
		}
	})
	return n
}

// read offers the frames arriving on s to p until s closes.
func (s *ifSock) read(p *linkemu.Pipe) {
	buf := make([]byte, vnetHdrLen+65536)
	oob := make([]byte, 128)
	iov := syscall.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msg := syscall.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	for {
		var n int
		var errno syscall.Errno
		err := s.raw.Read(func(fd uintptr) bool {
			msg.SetControllen(len(oob))
			r, _, e := syscall.Syscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), 0)
			n, errno = int(r), e
			return e != syscall.EAGAIN
		})
		if err != nil {
			return // closed
		}
		if errno != 0 {
			if errno == syscall.EINTR {
				continue
			}
			return
		}
		now := time.Now()
		at := rxTime(oob[:msg.Controllen], now)
		if n < vnetHdrLen {
			continue
		}
		hdr, frame := buf[:vnetHdrLen], buf[vnetHdrLen:n]
		if hdr[1] != 0 { // gso_type: a frame of several segments
			p.CountForeign()
			continue
		}
		if hdr[0]&vnetNeedsCsum != 0 {
			start := int(binary.NativeEndian.Uint16(hdr[6:]))
			off := int(binary.NativeEndian.Uint16(hdr[8:]))
			if !completeChecksum(frame, start, off) {
				p.CountForeign()
				continue
			}
		}
		p.Offer(at, frame)
	}
}

// rxTime is a frame's receive time: the kernel's timestamp (wall clock)
// in the monotonic clock of now, unless it is off by more than a second.
func rxTime(oob []byte, now time.Time) time.Time {
	const hdr = syscall.SizeofCmsghdr
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			break
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+16 {
			sec := int64(binary.NativeEndian.Uint64(oob[hdr:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[hdr+8:]))
			lag := now.UnixNano() - (sec*1e9 + nsec)
			if lag >= 0 && lag < int64(time.Second) {
				return now.Add(-time.Duration(lag))
			}
			return now
		}
		l = (l + 7) &^ 7
		if l > len(oob) {
			break
		}
		oob = oob[l:]
	}
	return now
}

// completeChecksum completes a partial checksum as the kernel does
// (skb_checksum_help): the one's complement sum of frame[start:], folded
// and complemented, at frame[start+off:]; zero goes as 0xffff (UDP's
// "no checksum" is zero). It reports false for offsets outside the
// frame.
func completeChecksum(frame []byte, start, off int) bool {
	if start < 0 || off < 0 || start+off+2 > len(frame) {
		return false
	}
	var sum uint32
	b := frame[start:]
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	c := ^uint16(sum)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[start+off:], c)
	return true
}

// waitStart polls for the run's start file until it is there (then calls
// set with the start it holds) or done is closed. The client end writes
// it tens of milliseconds or more before the start.
func waitStart(name string, done <-chan struct{}, set func(time.Time)) {
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if t, err := ReadStart(name); err == nil {
			set(t)
			return
		}
		select {
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// Forward runs the forwarder of the testbed whose state directory is dir
// (in the router's namespace) until ctx ends: it opens the sockets of
// every path, says it is ready (forward.ready), and writes its
// statistics to StatsFile every second and when it stops.
func Forward(ctx context.Context, dir string) error {
	cfg, err := ReadForwardConfig(dir)
	if err != nil {
		return err
	}
	type fpath struct {
		c, s     *ifSock
		up, down *linkemu.Pipe
	}
	var paths []*fpath
	closeAll := func() {
		for _, p := range paths {
			for _, s := range []*ifSock{p.c, p.s} {
				if s != nil {
					s.closeRx()
					s.closeTx()
				}
			}
		}
	}
	lim := linkemu.Limits{Charge: ChargedBytes}
	shared, err := linkemu.NewSharedLinks(cfg.Bottlenecks, cfg.Seed, lim)
	if err != nil {
		return err
	}
	sharedByName := map[string]*linkemu.SharedLink{}
	for _, sl := range shared {
		sharedByName[sl.Name] = sl
	}
	for i, pc := range cfg.Paths {
		p := &fpath{}
		paths = append(paths, p)
		if p.c, err = openIf(pc.Client); err != nil {
			closeAll()
			return err
		}
		if p.s, err = openIf(pc.Server); err != nil {
			closeAll()
			return err
		}
		ep := experiment.Path{Up: pc.Up, Down: pc.Down, Changes: pc.Changes, Bottleneck: pc.Bottleneck, BottleneckDelay: pc.BottleneckDelay}
		up, err := linkemu.NewPathModel(ep, experiment.DirectionUp, cfg.Seed, i)
		if err != nil {
			closeAll()
			return fmt.Errorf("path %d up: %w", i, err)
		}
		down, err := linkemu.NewPathModel(ep, experiment.DirectionDown, cfg.Seed, i)
		if err != nil {
			closeAll()
			return fmt.Errorf("path %d down: %w", i, err)
		}
		toServer, toClient := p.s.send, p.c.send
		if pc.Bottleneck != "" {
			sl := sharedByName[pc.Bottleneck]
			if sl == nil {
				closeAll()
				return fmt.Errorf("path %d: no bottleneck %q", i, pc.Bottleneck)
			}
			toServer, toClient = linkemu.Via(sl.Up, toServer), linkemu.Via(sl.Down, toClient)
		}
		p.up = linkemu.NewPipe(up, lim, toServer)
		p.down = linkemu.NewPipe(down, lim, toClient)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range paths {
		wg.Add(4)
		go func() { defer wg.Done(); p.c.read(p.up) }()
		go func() { defer wg.Done(); p.s.read(p.down) }()
		go func() { defer wg.Done(); p.up.Run(done) }()
		go func() { defer wg.Done(); p.down.Run(done) }()
	}
	for _, sl := range shared {
		wg.Add(2)
		go func() { defer wg.Done(); sl.Up.Run(done) }()
		go func() { defer wg.Done(); sl.Down.Run(done) }()
	}
	stats := func() []linkemu.PathStats {
		out := make([]linkemu.PathStats, len(paths))
		for i, p := range paths {
			p.up.CountSocketDrops(p.c.kernelDrops())
			p.down.CountSocketDrops(p.s.kernelDrops())
			out[i] = linkemu.PathStats{Up: p.up.Stats(), Down: p.down.Stats()}
		}
		return append(out, linkemu.SharedStats(shared)...)
	}
	statsFile := filepath.Join(dir, StatsFile)
	if err := linkemu.WriteStats(statsFile, stats()); err != nil {
		closeAll()
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(fmt.Sprintln(os.Getpid())), 0o644); err != nil {
		closeAll()
		return err
	}
	// Scheduled changes count from the run's start, which the client
	// end writes once it has chosen it.
	scheduled := false
	for _, pc := range cfg.Paths {
		scheduled = scheduled || len(pc.Changes) > 0
	}
	if scheduled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			waitStart(filepath.Join(dir, startFile), done, func(t time.Time) {
				for _, p := range paths {
					p.up.SetStart(t)
					p.down.SetStart(t)
				}
			})
		}()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var werr error
loop:
	for {
		select {
		case <-tick.C:
			if err := linkemu.WriteStats(statsFile, stats()); err != nil && werr == nil {
				werr = err
			}
		case <-ctx.Done():
			break loop
		}
	}
	final := stats()
	close(done)
	for _, p := range paths {
		p.c.closeRx()
		p.s.closeRx()
	}
	wg.Wait()
	for _, p := range paths {
		p.c.closeTx()
		p.s.closeTx()
	}
	for i, p := range paths {
		final[i] = linkemu.PathStats{Up: p.up.Stats(), Down: p.down.Stats()}
	}
	final = append(final[:len(paths)], linkemu.SharedStats(shared)...)
	return errors.Join(werr, linkemu.WriteStats(statsFile, final))
}
