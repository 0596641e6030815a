package arcflight

import (
	"sync/atomic"

	"github.com/arc-otel/arc-otel/internal/bufpool"
)

// putBuffers keeps the buffers DoPut messages are decoded into, once
// nothing reads them any more, for the messages that follow. A message's
// buffer is the IPC stream the WAL stores and the memory of the record
// decoded from it, which waits in the store until its flush: the buffer
// comes back when the last of the record's arrays is released (Recycle,
// StreamDecoder.Decode). The garbage collector cleared and reclaimed one
// such buffer per message, 30 % of the bytes the sidecar allocated at four
// OTLP clients (a profile of 430 KB messages).
//
// Sizes are rounded up to one of eight classes per power of two (at most
// 1/8 more than asked) from minPutBuffer up; smaller buffers come from the
// heap and are not kept. At most putBufferLimit bytes are kept: 16 MiB
// kept the decoder's allocation per message at 0.57x, 32 MiB at 0.16x.
type putBuffers struct {
	pool *bufpool.Pool
	// poison, in tests, overwrites every buffer that comes back, so that
	// one read after its return shows.
	poison atomic.Bool
}

const (
	minPutBuffer = 64 << 10
	maxPutBuffer = 64 << 20
	// putBufferLimit is the store's default flush size (a generation's
	// buffers come back together when its flush ends).
	putBufferLimit = 32 << 20
)

var (
	putClasses = bufpool.NewClasses(minPutBuffer, maxPutBuffer, 8)
	putPool    = newPutBuffers(putBufferLimit)
)

func newPutBuffers(limit int64) *putBuffers {
	return &putBuffers{pool: bufpool.New(putClasses, limit, 0)}
}

// get returns n bytes whose contents are not defined.
func (p *putBuffers) get(n int) []byte {
	b, _ := p.pool.Get(n)
	return b
}

// put keeps b, which nothing reads any more, if it is a whole class buffer
// and there is room.
func (p *putBuffers) put(b []byte) {
	if _, ok := putClasses.Exact(cap(b)); !ok {
		return
	}
	if p.poison.Load() {
		for i := range b[:cap(b)] {
			b[:cap(b)][i] = poisonByte
		}
	}
	p.pool.Put(b)
}

const poisonByte = 0xdb

// PoisonRecycled makes every buffer that comes back overwritten (on) or
// kept as it is, and returns the previous setting: tests turn it on to see
// a buffer read after it was given back.
func PoisonRecycled(on bool) bool { return putPool.poison.Swap(on) }

// RecycledBytes is how many bytes of buffers are kept for later messages.
func RecycledBytes() int64 { return putPool.pool.Stats().Held }
