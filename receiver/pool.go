package receiver

import "sync"

// bytePool keeps buffers of one kind between requests. A request fills
// them and is done with them before it answers, and a new buffer of a
// batch's size is zeroed by the runtime, then collected: at a million rows
// a second that was 2-3 % of the sidecar's CPU, with the collections it
// caused.
type bytePool struct {
	pool sync.Pool
	max  int // buffers larger than this (a rare huge request's) are left to the collector
}

// get returns an empty buffer of at least size bytes' capacity.
func (p *bytePool) get(size int) []byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		if cap(*b) >= size {
			return (*b)[:0]
		}
		p.pool.Put(b)
	}
	return make([]byte, 0, size)
}

// put keeps b for a later get; the caller no longer uses it.
func (p *bytePool) put(b []byte) {
	if cap(b) == 0 || cap(b) > p.max {
		return
	}
	b = b[:0]
	p.pool.Put(&b)
}

var (
	// ipcBuffers hold a batch's Arrow IPC stream until the WAL has it.
	ipcBuffers = bytePool{max: 4 << 20}
	// bodies hold request bodies as sent, decodedBodies small gzip ones
	// decompressed, while they are decoded.
	bodies        = bytePool{max: maxWholeGzip}
	decodedBodies = bytePool{max: 8 << 20}
)
