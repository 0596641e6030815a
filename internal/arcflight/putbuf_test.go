package arcflight

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPutBuffersClasses(t *testing.T) {
	tests := []struct {
		name string
		n    int
		c    int
	}{
		{"small, not kept", minPutBuffer - 1, 0},
		{"smallest", minPutBuffer, minPutBuffer},
		{"rounded up by at most an eighth", 1<<18 + 1, 1<<18 + 1<<15},
		{"a power of two", 1 << 19, 1 << 19},
		{"a DoPut message of 1 000 spans", 430_000, 14 << 15},
		{"largest", maxPutBuffer, maxPutBuffer},
		{"larger, not kept", maxPutBuffer + 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := 0
			if i, ok := putClasses.Of(tt.n); ok {
				c = putClasses.Size(i)
				_, exact := putClasses.Exact(c)
				assert.True(t, exact, "a class is its own class")
			}
			assert.Equal(t, tt.c, c)
		})
	}
}

func TestPutBuffersRecycle(t *testing.T) {
	p := newPutBuffers(3 * minPutBuffer)
	p.poison.Store(true)
	a := p.get(minPutBuffer + 100)
	require.Len(t, a, minPutBuffer+100)
	p.put(a)
	assert.Equal(t, cap(a), bytes.Count(a[:cap(a)], []byte{poisonByte}), "poisoned when it comes back")
	b := p.get(minPutBuffer + 10)
	assert.Same(t, &a[:1][0], &b[:1][0], "handed out again")
	p.put(make([]byte, 100, minPutBuffer+1)) // not a class: not kept
	p.put(make([]byte, 100, minPutBuffer-1)) // too small: not kept
	for range 4 {
		p.put(make([]byte, minPutBuffer))
	}
	assert.EqualValues(t, 3*minPutBuffer, p.pool.Stats().Held, "kept up to the limit")
}

// The done function of Decode runs once nothing holds what was decoded:
// not while a slice of the record is held, nor while the decoder may still
// read the message.
func TestStreamDecoderDoneOnceReleased(t *testing.T) {
	stream, want := testStream(t)
	defer want.Release()
	schemaFrame := stream[:SchemaFrameLen(stream)]
	dec, err := NewStreamDecoder(schemaFrame, memory.DefaultAllocator)
	require.NoError(t, err)
	var done [2]int
	rec, err := dec.Decode(bytes.Clone(stream[len(schemaFrame):]), func() { done[0]++ })
	require.NoError(t, err)
	slice := array.NewSlice(rec.Column(0), 0, 1)
	rec.Release()
	assert.Zero(t, done[0], "the decoder holds the message")

	next, err := dec.Decode(bytes.Clone(stream[len(schemaFrame):]), func() { done[1]++ })
	require.NoError(t, err)
	assert.Zero(t, done[0], "a slice of the record is held")
	assert.Equal(t, int64(1), slice.(*array.Int64).Value(0))
	slice.Release()
	assert.Equal(t, 1, done[0])

	kept := arrow.RecordBatch(next)
	kept.Retain()
	next.Release()
	dec.Release()
	assert.Zero(t, done[1], "the record is held")
	kept.Release()
	assert.Equal(t, [2]int{1, 1}, done)
}
