package arcflight

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFramePoolSizes(t *testing.T) {
	cases := map[string]struct {
		n       int
		wantCap int
	}{
		"empty":                   {0, 1 << minTier},
		"one byte":                {1, 1 << minTier},
		"smallest tier exactly":   {1 << minTier, 1 << minTier},
		"one over a tier":         {1<<minTier + 1, 1 << (minTier + 1)},
		"an HTTP/2 frame":         {16 << 10, 16 << 10},
		"largest tier exactly":    {1 << maxTier, 1 << maxTier},
		"over the largest tier":   {1<<maxTier + 1, 1<<maxTier + 1},
		"odd size within a tier":  {5000, 8 << 10},
		"odd size over the tiers": {3 << 20, 3 << 20},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var p framePool
			b := p.Get(c.n)
			assert.Len(t, *b, c.n)
			assert.Equal(t, c.wantCap, cap(*b))
			p.Put(b)
			again := p.Get(c.n)
			assert.Len(t, *again, c.n)
			assert.GreaterOrEqual(t, cap(*again), c.n)
		})
	}
}

// A buffer put back with a capacity that is not a tier's (gRPC may put
// back a prefix, or a buffer it did not get from us) is dropped, so a
// later Get never hands out a buffer shorter than asked.
func TestFramePoolDropsForeignBuffers(t *testing.T) {
	var p framePool
	for _, c := range []int{0, 100, 300, 1<<minTier + 1, 3 << 10, 1<<maxTier - 1, 2 << maxTier} {
		b := make([]byte, c)
		p.Put(&b)
	}
	for n := 0; n <= 1<<maxTier; n = n*2 + 1 {
		b := p.Get(n)
		assert.Len(t, *b, n)
		assert.GreaterOrEqual(t, cap(*b), n)
	}
}
