package arcflight

import (
	"math/bits"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// Tiers of the frame pool: powers of two from 2^minTier to 2^maxTier
// bytes. gRPC reads HTTP/2 frames of at most 16 KiB; the larger tiers take
// what else it asks for (a whole small message).
const (
	minTier = 8
	maxTier = 20
)

// framePool is gRPC's tiered buffer pool without the zeroing: gRPC's
// default clears a buffer's whole capacity on every Get, for frame buffers
// that it then fills completely with io.ReadFull before anyone reads them.
// On the sidecar that clearing was 1.7 % of the CPU at four OTLP clients
// (every received byte cleared, read, then copied into the IPC stream).
type framePool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

// tier returns the index of the smallest tier that holds n bytes, or -1.
func tier(n int) int {
	if n > 1<<maxTier {
		return -1
	}
	if n <= 1<<minTier {
		return 0
	}
	return bits.Len(uint(n-1)) - minTier
}

// Get returns a buffer of length n whose contents are not defined.
func (p *framePool) Get(n int) *[]byte {
	t := tier(n)
	if t < 0 {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, 1<<(t+minTier))
	return &b
}

// Put keeps a buffer whose capacity is exactly a tier's, so Get's slicing
// never exceeds it.
func (p *framePool) Put(b *[]byte) {
	c := cap(*b)
	if c < 1<<minTier || c > 1<<maxTier || c&(c-1) != 0 {
		return
	}
	p.tiers[bits.Len(uint(c))-1-minTier].Put(b)
}

var _ mem.BufferPool = (*framePool)(nil)

// BufferPoolOption makes a gRPC server read its frames into buffers that
// are reused without being cleared.
func BufferPoolOption() grpc.ServerOption { return experimental.BufferPool(new(framePool)) }
