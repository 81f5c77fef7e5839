package netsim

import (
	"hash/fnv"
	"io"
	"strconv"
)

// TextTracer returns a Tracer that writes one line per packet event to w:
//
//	<virtual ns since Epoch> <link> <event> <packet ID> <size> <queued> <hash>
//
// where event is enqueue, drop:queue_full, drop:random_loss or deliver,
// queued is the link's queued bytes after an enqueue (- otherwise), and hash
// is the FNV-1a 64 of the packet bytes when contents is set (- otherwise).
// Every field but the hash is deterministic for a seed; the hash is too when
// the TLS randomness is (see SimConfig). Write errors are ignored; wrap a
// file in a bufio.Writer and flush it after the run. The time is that of
// the part the event happens in (see Sim): the link's sender's for an
// enqueue or a drop, its receiver's for a delivery; sim is unused.
func TextTracer(sim *Sim, w io.Writer, contents bool) *Tracer {
	var line []byte
	write := func(at *Sim, l *Link, p *Packet, event string, queued int) {
		line = strconv.AppendInt(line[:0], int64(at.Elapsed()), 10)
		line = append(line, ' ')
		line = append(line, l.Name...)
		line = append(line, ' ')
		line = append(line, event...)
		line = append(line, ' ')
		line = strconv.AppendUint(line, p.ID, 10)
		line = append(line, ' ')
		line = strconv.AppendInt(line, int64(len(p.Data)), 10)
		line = append(line, ' ')
		if queued >= 0 {
			line = strconv.AppendInt(line, int64(queued), 10)
		} else {
			line = append(line, '-')
		}
		line = append(line, ' ')
		if contents {
			h := fnv.New64a()
			h.Write(p.Data)
			line = strconv.AppendUint(line, h.Sum64(), 16)
		} else {
			line = append(line, '-')
		}
		line = append(line, '\n')
		w.Write(line)
	}
	return &Tracer{
		Enqueue: func(l *Link, p *Packet, queued int) { write(l.sim, l, p, "enqueue", queued) },
		Drop:    func(l *Link, p *Packet, why DropReason) { write(l.sim, l, p, "drop:"+why.String(), -1) },
		Deliver: func(l *Link, p *Packet) { write(l.to, l, p, "deliver", -1) },
	}
}
