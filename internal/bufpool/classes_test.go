package bufpool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/arc-otel/arc-otel/internal/bufpool"
)

func TestClassesRoundUp(t *testing.T) {
	powers := bufpool.NewClasses(256, 1<<20, 1)
	eighths := bufpool.NewClasses(64<<10, 64<<20, 8)
	tests := []struct {
		name    string
		classes bufpool.Classes
		n       int
		size    int // 0: not pooled
	}{
		{"powers: below the smallest", powers, 255, 0},
		{"powers: zero", powers, 0, 0},
		{"powers: smallest exactly", powers, 256, 256},
		{"powers: one over the smallest", powers, 257, 512},
		{"powers: an HTTP/2 frame", powers, 16 << 10, 16 << 10},
		{"powers: odd size", powers, 5000, 8 << 10},
		{"powers: largest exactly", powers, 1 << 20, 1 << 20},
		{"powers: over the largest", powers, 1<<20 + 1, 0},
		{"eighths: below the smallest", eighths, 64<<10 - 1, 0},
		{"eighths: smallest exactly", eighths, 64 << 10, 64 << 10},
		{"eighths: one over the smallest", eighths, 64<<10 + 1, 72 << 10},
		{"eighths: rounded up by at most an eighth", eighths, 1<<18 + 1, 1<<18 + 1<<15},
		{"eighths: a power of two", eighths, 1 << 19, 1 << 19},
		{"eighths: a DoPut message of 1 000 spans", eighths, 430_000, 14 << 15},
		{"eighths: the last step below a power of two", eighths, 1<<20 - 1, 1 << 20},
		{"eighths: largest exactly", eighths, 64 << 20, 64 << 20},
		{"eighths: over the largest", eighths, 64<<20 + 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, ok := tt.classes.Of(tt.n)
			if tt.size == 0 {
				assert.False(t, ok)
				return
			}
			assert.True(t, ok)
			assert.Equal(t, tt.size, tt.classes.Size(i))
			j, exact := tt.classes.Exact(tt.size)
			assert.True(t, exact, "a class's capacity is exact")
			assert.Equal(t, i, j)
		})
	}
}

// Every class is larger than the one before, by at most 1/steps of itself,
// and the classes run from Min to Max: Of finds each, and sizes between
// two classes round up to the larger.
func TestClassesAreOrdered(t *testing.T) {
	for _, steps := range []int{1, 2, 8} {
		c := bufpool.NewClasses(1<<10, 1<<16, steps)
		assert.Equal(t, c.Min(), c.Size(0))
		assert.Equal(t, c.Max(), c.Size(c.Len()-1), "steps %d", steps)
		for i := 1; i < c.Len(); i++ {
			prev, size := c.Size(i-1), c.Size(i)
			assert.Greater(t, size, prev)
			assert.LessOrEqual(t, (size-prev)*steps, size, "steps %d: class %d grows by at most 1/steps", steps, i)
			for _, n := range []int{prev + 1, (prev + size) / 2, size} {
				got, ok := c.Of(n)
				assert.True(t, ok)
				assert.Equal(t, i, got, "steps %d: %d bytes", steps, n)
			}
			_, exact := c.Exact(size - 1)
			assert.False(t, exact, "steps %d: %d is not a class", steps, size-1)
		}
	}
}

func TestNewClassesRejectsBadBounds(t *testing.T) {
	tests := []struct {
		name            string
		min, max, steps int
	}{
		{"min not a power of two", 1000, 1 << 20, 1},
		{"max not a power of two", 1 << 10, 3 << 20, 1},
		{"steps not a power of two", 1 << 10, 1 << 20, 3},
		{"min above max", 1 << 20, 1 << 10, 1},
		{"more steps than bytes", 4, 1 << 10, 8},
		{"zero", 0, 1 << 10, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Panics(t, func() { bufpool.NewClasses(tt.min, tt.max, tt.steps) })
		})
	}
}
