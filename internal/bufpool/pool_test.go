package bufpool_test

import (
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/bufpool"
)

var classes = bufpool.NewClasses(4<<10, 1<<20, 1)

// addr is where b's memory starts (assert compares pointers by what they
// point to).
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

func TestPoolGetPut(t *testing.T) {
	tests := []struct {
		name    string
		n       int
		wantCap int
		kept    bool
	}{
		{"small, from the heap", 100, 100, false},
		{"smallest class", 4 << 10, 4 << 10, true},
		{"rounded up to a class", 5000, 8 << 10, true},
		{"largest class", 1 << 20, 1 << 20, true},
		{"larger than the classes", 1<<20 + 1, 1<<20 + 1, false},
	}
	for _, align := range []int{0, 64} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("align %d/%s", align, tt.name), func(t *testing.T) {
				p := bufpool.New(classes, 64<<20, align)
				b, recycled := p.Get(tt.n)
				require.Len(t, b, tt.n)
				assert.Equal(t, tt.wantCap, cap(b))
				assert.False(t, recycled)
				assert.Equal(t, make([]byte, cap(b)), b[:cap(b)], "a new buffer is zeroed")
				if align > 1 {
					assert.Zero(t, addr(b)%uintptr(align), "aligned")
				}
				for i := range b[:cap(b)] {
					b[:cap(b)][i] = 0xff
				}
				assert.Equal(t, tt.kept, p.Put(b))
				s := p.Stats()
				if !tt.kept {
					assert.Equal(t, bufpool.Stats{}, s, "nothing counted")
					return
				}
				assert.Equal(t, bufpool.Stats{Held: int64(cap(b)), Fresh: int64(cap(b))}, s)
				again, recycled := p.Get(tt.n)
				assert.True(t, recycled)
				assert.Equal(t, addr(b), addr(again), "handed out again")
				assert.Len(t, again, tt.n)
				assert.Equal(t, byte(0xff), again[0], "not cleared: that is the user's policy")
				assert.Equal(t, bufpool.Stats{Reused: int64(cap(b)), Fresh: int64(cap(b))}, p.Stats())
			})
		}
	}
}

func TestPoolKeepsOnlyWholeClassBuffers(t *testing.T) {
	aligned := bufpool.New(classes, 64<<20, 64)
	whole, _ := aligned.Get(8 << 10)
	tests := []struct {
		name string
		pool *bufpool.Pool
		b    []byte
		kept bool
	}{
		{"a class buffer", aligned, whole, true},
		{"a tail of a class buffer", aligned, whole[64:], false},
		{"a class's capacity, misaligned", aligned, whole[1 : 1+4<<10 : 1+4<<10], false},
		{"a class's capacity, misaligned, no alignment asked", bufpool.New(classes, 64<<20, 0), whole[1 : 1+4<<10 : 1+4<<10], true},
		{"not a class's capacity", bufpool.New(classes, 64<<20, 0), make([]byte, 5000), false},
		{"empty", bufpool.New(classes, 64<<20, 0), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.kept, tt.pool.Put(tt.b))
		})
	}
}

func TestPoolKeepsAtMostItsLimit(t *testing.T) {
	p := bufpool.New(classes, int64(3*classes.Min()), 0)
	for range 5 {
		p.Put(make([]byte, classes.Min()))
	}
	assert.EqualValues(t, 3*classes.Min(), p.Stats().Held)
	assert.False(t, p.Put(make([]byte, 2*classes.Min())), "a larger buffer does not fit either")
	b, _ := p.Get(classes.Min())
	assert.True(t, p.Put(b), "room again once one is handed out")
	p.Empty()
	assert.Zero(t, p.Stats().Held)
	_, recycled := p.Get(classes.Min())
	assert.False(t, recycled, "nothing kept after Empty")
}

// Goroutines that get, write and put buffers of every class never share
// one: each finds its own pattern intact before it puts the buffer back,
// and the counters add up.
func TestPoolConcurrentUse(t *testing.T) {
	p := bufpool.New(classes, 4<<20, 64)
	const workers, rounds = 8, 200
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				n := classes.Min() << (r % 6)
				b, _ := p.Get(n)
				for i := range b {
					b[i] = byte(w)
				}
				for i := range b {
					if b[i] != byte(w) {
						t.Errorf("worker %d: byte %d of a buffer in use overwritten", w, i)
						return
					}
				}
				p.Put(b)
			}
		})
	}
	wg.Wait()
	var handedOut int64
	for r := range rounds {
		handedOut += int64(workers * classes.Min() << (r % 6))
	}
	s := p.Stats()
	assert.Equal(t, handedOut, s.Fresh+s.Reused, "every Get counted once")
	assert.Positive(t, s.Reused)
	assert.LessOrEqual(t, s.Held, int64(4<<20))
	assert.LessOrEqual(t, s.Held, s.Fresh, "only buffers handed out are held")
}

func BenchmarkPool(b *testing.B) {
	for _, n := range []int{4 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("serial/bytes=%d", n), func(b *testing.B) {
			p := bufpool.New(classes, 32<<20, 64)
			b.ReportAllocs()
			for b.Loop() {
				buf, _ := p.Get(n)
				p.Put(buf)
			}
		})
		b.Run(fmt.Sprintf("parallel/bytes=%d", n), func(b *testing.B) {
			p := bufpool.New(classes, 32<<20, 64)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					buf, _ := p.Get(n)
					p.Put(buf)
				}
			})
		})
	}
}
