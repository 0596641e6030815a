package arcflight

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"

	"github.com/arc-otel/arc-otel/internal/bufpool"
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
// Its free lists are sync.Pools, not a bufpool.Pool: a frame is held for
// one read, so what the garbage collector empties is refilled at once, and
// there is no byte limit to keep.
type framePool struct {
	tiers [maxTier - minTier + 1]sync.Pool
}

var frameClasses = bufpool.NewClasses(1<<minTier, 1<<maxTier, 1)

// Get returns a buffer of length n whose contents are not defined.
func (p *framePool) Get(n int) *[]byte {
	t, ok := frameClasses.Of(max(n, frameClasses.Min()))
	if !ok {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.tiers[t].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, frameClasses.Size(t))
	return &b
}

// Put keeps a buffer whose capacity is exactly a tier's, so Get's slicing
// never exceeds it.
func (p *framePool) Put(b *[]byte) {
	if t, ok := frameClasses.Exact(cap(*b)); ok {
		p.tiers[t].Put(b)
	}
}

var _ mem.BufferPool = (*framePool)(nil)

// BufferPoolOption makes a gRPC server read its frames into buffers that
// are reused without being cleared.
func BufferPoolOption() grpc.ServerOption { return experimental.BufferPool(new(framePool)) }
