package arcflight

import (
	"math/bits"
	"sync"
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
	mu    sync.Mutex
	free  map[int][][]byte // by capacity
	held  int64
	limit int64
	// poison, in tests, overwrites every buffer that comes back, so that
	// one read after its return shows.
	poison bool
}

const (
	minPutBuffer = 64 << 10
	maxPutBuffer = 64 << 20
	// putBufferLimit is the store's default flush size (a generation's
	// buffers come back together when its flush ends).
	putBufferLimit = 32 << 20
)

var putPool = &putBuffers{free: map[int][][]byte{}, limit: putBufferLimit}

// putClass is the capacity of a pooled buffer of n bytes, 0 when n is not
// pooled.
func putClass(n int) int {
	if n < minPutBuffer || n > maxPutBuffer {
		return 0
	}
	step := 1 << (bits.Len(uint(n-1)) - 4)
	return (n + step - 1) &^ (step - 1)
}

// get returns n bytes whose contents are not defined.
func (p *putBuffers) get(n int) []byte {
	c := putClass(n)
	if c == 0 {
		return make([]byte, n)
	}
	p.mu.Lock()
	if list := p.free[c]; len(list) > 0 {
		b := list[len(list)-1]
		list[len(list)-1] = nil
		p.free[c] = list[:len(list)-1]
		p.held -= int64(c)
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n, c)
}

// put keeps b, which nothing reads any more, if it is a whole class buffer
// and there is room.
func (p *putBuffers) put(b []byte) {
	c := cap(b)
	if c == 0 || putClass(c) != c {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.poison {
		for i := range b[:c] {
			b[:c][i] = poisonByte
		}
	}
	if p.held+int64(c) > p.limit {
		return
	}
	p.free[c] = append(p.free[c], b[:0])
	p.held += int64(c)
}

const poisonByte = 0xdb

// PoisonRecycled makes every buffer that comes back overwritten (on) or
// kept as it is, and returns the previous setting: tests turn it on to see
// a buffer read after it was given back.
func PoisonRecycled(on bool) bool {
	putPool.mu.Lock()
	defer putPool.mu.Unlock()
	was := putPool.poison
	putPool.poison = on
	return was
}

// RecycledBytes is how many bytes of buffers are kept for later messages.
func RecycledBytes() int64 {
	putPool.mu.Lock()
	defer putPool.mu.Unlock()
	return putPool.held
}
