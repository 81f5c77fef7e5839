package mpquic

import "github.com/mpq/mpq/scheduler"

// AnnounceSource tells the connection's path scheduler about a periodic
// source of priority messages, for schedulers that reserve congestion
// window for them (see scheduler.Source).
func (c *Conn) AnnounceSource(s scheduler.Source) {
	c.mu.Lock()
	c.c.AnnounceSource(s)
	c.mu.Unlock()
	c.kick()
}

// WithdrawSource removes an announced source.
func (c *Conn) WithdrawSource(id uint64) {
	c.mu.Lock()
	c.c.WithdrawSource(id)
	c.mu.Unlock()
}
