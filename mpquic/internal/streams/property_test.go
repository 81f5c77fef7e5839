package streams

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

// Abort modes of the randomized transfer.
const (
	modeComplete    = iota // the whole stream is delivered
	modeReset              // the sender resets the stream at a random moment
	modeStopSending        // the receiver asks the sender to stop
)

type packet struct {
	off  uint64
	data []byte
	fin  bool
}

// transfer runs a randomized transfer of one stream over a lossy,
// reordering network, with both flow control levels, and checks the
// result.
func transfer(t *testing.T, seed uint64, mode int) {
	rng := rand.New(rand.NewPCG(seed, uint64(mode)))
	size := rng.IntN(150_000)
	if rng.IntN(10) == 0 {
		size = rng.IntN(10)
	}
	src := make([]byte, size)
	for i := range src {
		src[i] = byte(rng.Uint32())
	}
	streamWin := uint64(500 + rng.IntN(20_000))
	connWin := uint64(500 + rng.IntN(30_000))
	bufLimit := 1 + rng.IntN(40_000)
	lossRate := rng.IntN(40) // percent

	recv := NewRecvStream(4, streamWin)
	recv.SetMaxWindow(4 * streamWin)
	connRecv := NewConnRecvFlow(connWin, 4*connWin)
	send := NewSendStream(4, recv.Limit(), bufLimit)
	connSend := NewConnSendFlow(connRecv.Limit())

	var (
		written     int
		inFlight    []packet // sent, fate unknown
		delivered   []packet // delivered, acknowledgement pending
		output      []byte
		sentNew     uint64 // sum of NewBytes
		recvNew     uint64 // sum of newBytes reported by the receiver
		eof         bool
		readErr     error
		resetFlight []bool // RESET_STREAM frames in flight; true if they will arrive
		stopFlight  int    // STOP_SENDING frames in flight
		abortAt     = rng.IntN(size + 1)
		now         = time.Unix(0, 0)
		srtt        = time.Duration(rng.IntN(20)) * time.Millisecond
		buf         = make([]byte, 5000)
	)
	pick := func(n int) int { return rng.IntN(n) }
	remove := func(s []packet, i int) []packet {
		s[i] = s[len(s)-1]
		return s[:len(s)-1]
	}
	deliver := func(p packet) {
		n, err := recv.Push(p.off, p.data, p.fin)
		if err != nil {
			t.Fatalf("seed %d: Push(%d, %d, %v): %v", seed, p.off, len(p.data), p.fin, err)
		}
		if err := connRecv.OnReceived(n); err != nil {
			t.Fatalf("seed %d: connection flow control: %v", seed, err)
		}
		recvNew += n
	}

	for iter := 0; ; iter++ {
		if iter > 5_000_000 {
			t.Fatalf("seed %d mode %d: no progress: written %d/%d read %d, send done %v, recv done %v, in flight %d",
				seed, mode, written, size, len(output), send.Done(), recv.Done(), len(inFlight))
		}
		finished := send.Done() && recv.Done() && len(inFlight) == 0 && len(delivered) == 0 && len(resetFlight) == 0
		if finished && (eof || readErr != nil || mode == modeStopSending) {
			break
		}
		now = now.Add(time.Millisecond)
		switch pick(7) {
		case 0: // the application writes
			if mode == modeReset && written >= abortAt && rng.IntN(3) == 0 {
				send.Reset(99)
			}
			if written < size {
				n, err := send.Write(src[written : written+pick(size-written+1)])
				if err != nil {
					var se *qerr.StreamError
					if mode == modeComplete || !errors.As(err, &se) {
						t.Fatalf("seed %d: Write: %v", seed, err)
					}
				}
				written += n
			} else if err := send.Close(); err != nil && mode == modeComplete {
				t.Fatalf("seed %d: Close: %v", seed, err)
			}
		case 1, 2: // the sender builds frames
			for range 1 + pick(4) {
				ch, ok := send.NextChunk(pick(1500), connSend.Credit())
				if !ok {
					break
				}
				if ch.Offset+uint64(len(ch.Data)) > recv.Limit() || ch.NewBytes > len(ch.Data) {
					t.Fatalf("seed %d: chunk beyond the stream limit", seed)
				}
				connSend.Consume(uint64(ch.NewBytes))
				sentNew += uint64(ch.NewBytes)
				inFlight = append(inFlight, packet{ch.Offset, bytes.Clone(ch.Data), ch.Fin})
			}
			if code, final, ok := send.PendingReset(); ok {
				if code != 99 && code != 77 {
					t.Fatalf("seed %d: reset code %d", seed, code)
				}
				if final != sentNew {
					t.Fatalf("seed %d: final size %d, sent %d", seed, final, sentNew)
				}
				send.OnResetSent()
				resetFlight = append(resetFlight, rng.IntN(100) >= lossRate)
			}
		case 3: // the network delivers or loses a packet
			if len(inFlight) == 0 {
				break
			}
			i := pick(len(inFlight))
			p := inFlight[i]
			inFlight = remove(inFlight, i)
			if rng.IntN(100) < lossRate {
				send.OnLost(p.off, len(p.data), p.fin)
				break
			}
			deliver(p)
			if rng.IntN(20) == 0 {
				deliver(p) // duplicated by the network
			}
			delivered = append(delivered, p)
		case 4: // acknowledgements, possibly after a spurious loss
			if len(delivered) == 0 {
				break
			}
			i := pick(len(delivered))
			p := delivered[i]
			if rng.IntN(10) == 0 {
				send.OnLost(p.off, len(p.data), p.fin) // declared lost, yet it arrived
				break
			}
			delivered = remove(delivered, i)
			send.OnAcked(p.off, len(p.data), p.fin)
		case 5: // the receiving application reads
			if mode == modeStopSending && len(output) >= abortAt && stopFlight == 0 {
				if _, ok := recv.StopSendingCode(); !ok {
					recv.StopSending(77)
				}
				if _, ok := recv.StopSendingCode(); ok {
					stopFlight++
				}
			}
			n, err := recv.Read(buf[:pick(len(buf))])
			output = append(output, buf[:n]...)
			connRecv.OnConsumed(uint64(n))
			switch {
			case err == io.EOF:
				eof = true
			case err != nil:
				readErr = err
			}
			if lim, ok := recv.WindowUpdate(now, srtt); ok {
				send.OnMaxStreamData(lim)
			}
			if lim, ok := connRecv.WindowUpdate(now, srtt); ok {
				connSend.OnMaxData(lim)
			}
		case 6: // control frames
			if len(resetFlight) > 0 {
				arrives := resetFlight[0]
				resetFlight = resetFlight[1:]
				code, final := send.resetCode, send.finalSize
				if arrives {
					n, err := recv.OnReset(code, final)
					if err != nil {
						t.Fatalf("seed %d: OnReset: %v", seed, err)
					}
					if err := connRecv.OnReceived(n); err != nil {
						t.Fatalf("seed %d: connection flow control: %v", seed, err)
					}
					recvNew += n
					send.OnResetAcked()
				} else {
					send.OnResetLost()
				}
			}
			if stopFlight > 0 {
				stopFlight--
				if code, ok := recv.StopSendingCode(); ok && rng.IntN(100) >= lossRate {
					send.OnStopSending(code)
				} else if ok {
					stopFlight++ // lost: sent again
				}
			}
		}
	}
	if !bytes.Equal(output, src[:len(output)]) {
		t.Fatalf("seed %d: the reader got bytes that were not written", seed)
	}
	if recvNew != sentNew {
		t.Fatalf("seed %d: receiver accounted %d bytes, sender sent %d", seed, recvNew, sentNew)
	}
	switch mode {
	case modeComplete:
		if !eof || len(output) != size {
			t.Fatalf("seed %d: read %d of %d bytes, eof %v, err %v", seed, len(output), size, eof, readErr)
		}
	case modeReset:
		var se *qerr.StreamError
		if eof && len(output) != size || !eof && !(errors.As(readErr, &se) && se.Remote && se.Code == 99) {
			t.Fatalf("seed %d: reset stream ended with %v", seed, readErr)
		}
	}
}

func TestTransferProperty(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for _, mode := range []int{modeComplete, modeReset, modeStopSending} {
		for seed := range uint64(seeds) {
			transfer(t, seed, mode)
		}
	}
}
