package parquetfile

import (
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/bufpool"
)

// bufferPool is the memory.Allocator of the arrow-go file writers: it keeps
// the buffers arrow-go frees (dictionary index buffers, level and page
// buffers, statistics, bloom filters) and hands them to the next column,
// row group or file, instead of letting every flush allocate, zero and
// page-fault fresh large buffers and the garbage collector reclaim them.
//
// Buffers come in power-of-two size classes from minPooledBytes to
// maxPooledBytes; other sizes go straight to the Go heap and are never
// kept. At most limit bytes are kept in all, so the pool never pins more
// than that beyond what writers use at the moment.
//
// It behaves as arrow-go's GoAllocator towards its callers: Allocate
// returns zeroed, 64-byte aligned memory of the size asked (a recycled
// buffer is cleared in full, so growing it within its capacity shows zeros
// as a fresh one would), and Reallocate keeps the contents. Reallocate
// recycles the buffer it replaces, as arrow-go's C allocators (realloc)
// do, so arrow-go holds no slice of it.
type bufferPool struct{ pool *bufpool.Pool }

const (
	minPooledBytes = 4 << 10 // smaller buffers cost little to allocate
	maxPooledBytes = 16 << 20
	// poolAlignment is GoAllocator's: arrow-go's SIMD kernels expect it.
	poolAlignment = 64
)

var poolClasses = bufpool.NewClasses(minPooledBytes, maxPooledBytes, 1)

// flushBufferLimit bounds the bytes the writers' pool keeps between uses
// (the sidecar has 512 MiB in all).
const flushBufferLimit = 32 << 20

// writerPool keeps the buffers of the Parquet writers: those of the
// allocator every Writer gives arrow-go (writerBuffers), and those that
// arrow-go's page encoders grow out of (growthBuffers).
var writerPool = newBufferPool(flushBufferLimit)

// writerBuffers is the allocator every Writer gives arrow-go.
var writerBuffers memory.Allocator = writerPool

// growthBuffers is arrow-go's memory.DefaultAllocator in every process that
// writes Parquet with this package. arrow-go's page encoders write into
// buffers of a pool of its own that allocates with memory.DefaultAllocator,
// whatever allocator the writer is given; that pool is a sync.Pool, emptied
// by every garbage collection, so a flush finds it empty and each page
// encoder grows its buffer again by doubling from 1 KiB to the 1 MiB page
// (DataPageBytes): with the GoAllocator, every step allocated, zeroed and
// copied a new buffer and left the old one to the collector, 35 % of the
// bytes the sidecar allocated at four OTLP clients. growthBuffers keeps the
// buffers a growth replaces and hands them to the next growth.
//
// It frees nothing else: arrow-go code outside the writers (IPC decoding,
// builders) takes memory.DefaultAllocator too, and GoAllocator's Free is a
// no-op, so a buffer released while a slice of it is still read stays
// correct as it was. A buffer replaced by Reallocate is one that nothing
// reads any more: arrow-go's C allocators (realloc) free it too.
type growthBuffers struct{ p *bufferPool }

func (g growthBuffers) Allocate(size int) []byte { return g.p.Allocate(size) }

func (g growthBuffers) Reallocate(size int, b []byte) []byte { return g.p.Reallocate(size, b) }

func (growthBuffers) Free([]byte) {}

func init() { memory.DefaultAllocator = growthBuffers{writerPool} }

func newBufferPool(limit int64) *bufferPool {
	return &bufferPool{bufpool.New(poolClasses, limit, poolAlignment)}
}

func (p *bufferPool) Allocate(size int) []byte { return p.allocate(size, 0) }

// allocate is Allocate for a caller that overwrites the first keep bytes:
// a recycled buffer is cleared after them.
func (p *bufferPool) allocate(size, keep int) []byte {
	buf, recycled := p.pool.Get(size)
	if recycled {
		clear(buf[min(keep, cap(buf)):cap(buf)])
	}
	return buf
}

func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	buf := p.allocate(size, len(b))
	copy(buf, b)
	p.Free(b)
	return buf
}

// Free keeps b if it is a whole buffer of a size class (one Allocate
// returned) and the pool has room.
func (p *bufferPool) Free(b []byte) { p.pool.Put(b) }

// stats returns the bytes the pool keeps, and the bytes of class buffers
// it has handed out recycled and fresh.
func (p *bufferPool) stats() (held, reused, fresh int64) {
	s := p.pool.Stats()
	return s.Held, s.Reused, s.Fresh
}

var _ memory.Allocator = (*bufferPool)(nil)
