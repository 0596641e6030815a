package parquetfile_test

import (
	"bytes"
	"sync"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// The pool behaves as arrow-go's GoAllocator towards its callers: zeroed,
// aligned memory of the size asked, recycled buffers cleared in full
// (arrow-go grows a buffer within its capacity and expects zeros there),
// contents kept by Reallocate, and only whole class buffers kept, up to
// the limit.
func TestBufferPoolAllocates(t *testing.T) {
	const class = 2 * parquetfile.MinPooledBytes
	tests := []struct {
		name string
		size int
		kept bool // a freed buffer of this size is kept
	}{
		{"small, from the heap", 100, false},
		{"smallest class", parquetfile.MinPooledBytes, true},
		{"rounded up to a class", class - 1000, true},
		{"largest class", parquetfile.MaxPooledBytes, true},
		{"larger than the classes", parquetfile.MaxPooledBytes + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := parquetfile.NewBufferPool(64 << 20)
			b := p.Allocate(tt.size)
			require.Len(t, b, tt.size)
			assert.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64, "64-byte aligned")
			for i := range b[:cap(b)] {
				b[:cap(b)][i] = 0xff
			}
			p.Free(b)
			held, _, _ := p.Stats()
			if !tt.kept {
				assert.Zero(t, held)
				return
			}
			assert.EqualValues(t, cap(b), held)
			again := p.Allocate(tt.size)
			assert.Equal(t, addr(b), addr(again), "the freed buffer is handed out again")
			assert.Len(t, again, tt.size)
			assert.Zero(t, bytes.Count(again[:cap(again)], []byte{0xff}), "a recycled buffer is cleared in full")
			held, reused, _ := p.Stats()
			assert.Zero(t, held)
			assert.EqualValues(t, cap(b), reused)
		})
	}
}

func TestBufferPoolReallocateKeepsContents(t *testing.T) {
	p := parquetfile.NewBufferPool(64 << 20)
	b := p.Allocate(parquetfile.MinPooledBytes)
	for i := range b {
		b[i] = byte(i)
	}
	grown := p.Reallocate(3*parquetfile.MinPooledBytes, b)
	require.Len(t, grown, 3*parquetfile.MinPooledBytes)
	for i := range b {
		require.Equal(t, byte(i), grown[i])
	}
	assert.Equal(t, make([]byte, len(grown)-len(b)), grown[len(b):], "the grown part is zero")
	held, _, _ := p.Stats()
	assert.EqualValues(t, parquetfile.MinPooledBytes, held, "the replaced buffer is recycled")
	within := p.Reallocate(len(grown)+100, grown)
	assert.Equal(t, unsafe.SliceData(grown), unsafe.SliceData(within), "growing within the class keeps the buffer")
}

func TestBufferPoolKeepsAtMostItsLimit(t *testing.T) {
	p := parquetfile.NewBufferPool(3 * parquetfile.MinPooledBytes)
	var bufs [][]byte
	for range 5 {
		bufs = append(bufs, p.Allocate(parquetfile.MinPooledBytes))
	}
	for _, b := range bufs {
		p.Free(b)
	}
	held, _, _ := p.Stats()
	assert.EqualValues(t, 3*parquetfile.MinPooledBytes, held)
	// A slice that is not a whole class buffer is not kept.
	p2 := parquetfile.NewBufferPool(64 << 20)
	b := p2.Allocate(parquetfile.MinPooledBytes)
	p2.Free(b[64:])
	held, _, _ = p2.Stats()
	assert.Zero(t, held)
}

// Files written with recycled buffers are byte for byte those written with
// fresh ones (arrow-go's GoAllocator), for every table, file after file
// with one pool shared by concurrent writers (so buffers another table or
// writer dirtied come back), and the pool is actually reused: arrow-go
// frees what it allocated, so later files take most of their class bytes
// from the pool.
func TestPooledBuffersWriteTheSameFiles(t *testing.T) {
	type table struct {
		tt   benchTable
		recs []arrow.RecordBatch
		want []byte
	}
	var tables []table
	for _, tt := range benchTables() {
		recs := tt.batches(t, 3000)
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
		tables = append(tables, table{tt: tt, recs: recs})
	}
	write := func(tb table) []byte {
		var buf bytes.Buffer
		w, err := parquetfile.NewWriter(&buf, tb.tt.parquet, tb.tt.arrow, parquetfile.Options{BloomColumns: tb.tt.bloom, ExpectedRows: 3000, RowGroupRows: 2000})
		require.NoError(t, err)
		for i, rec := range tb.recs {
			var rows []int32
			if i == 1 { // a row subset: runs of the record
				rows = []int32{0, 1, 2, 500, 501, 999}
			}
			require.NoError(t, w.Write(rec, rows))
		}
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	prev := parquetfile.SetWriterAllocator(memory.NewGoAllocator())
	defer parquetfile.SetWriterAllocator(prev)
	for i := range tables {
		tables[i].want = write(tables[i])
	}
	pool := parquetfile.NewBufferPool(64 << 20)
	parquetfile.SetWriterAllocator(pool)
	for _, tb := range tables {
		assert.True(t, bytes.Equal(tb.want, write(tb)), "%s: the first file differs", tb.tt.name)
	}
	_, reusedFirst, freshFirst := pool.Stats()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range 2 {
				for _, tb := range tables {
					assert.True(t, bytes.Equal(tb.want, write(tb)), "%s: a file with recycled buffers differs", tb.tt.name)
				}
			}
		})
	}
	wg.Wait()
	held, reused, fresh := pool.Stats()
	reused, fresh = reused-reusedFirst, fresh-freshFirst
	t.Logf("first round: %d bytes fresh, %d reused; later rounds: %d fresh, %d reused; %d held", freshFirst, reusedFirst, fresh, reused, held)
	assert.Greater(t, reused, 4*fresh, "later files take most of their buffers from the pool")
}

// arrow-go's page encoders grow their buffers with memory.DefaultAllocator:
// in a process that writes Parquet it recycles the buffer a growth
// replaces, keeping its contents and clearing the rest, and keeps nothing
// freed (code outside the writers may still read what it frees).
func TestDefaultAllocatorRecyclesGrowth(t *testing.T) {
	parquetfile.EmptyWriterPool()
	mem := memory.DefaultAllocator
	const size = 4 * parquetfile.MinPooledBytes

	small := mem.Allocate(size)
	for i := range small {
		small[i] = 0xff
	}
	grown := mem.Reallocate(2*size, small)
	require.Len(t, grown, 2*size)
	assert.Equal(t, size, bytes.Count(grown, []byte{0xff}), "contents kept")
	assert.Zero(t, bytes.Count(grown[size:], []byte{0xff}), "the rest cleared")

	again := mem.Allocate(size)
	assert.Equal(t, addr(small), addr(again), "the replaced buffer is handed out again")
	assert.Zero(t, bytes.Count(again, []byte{0xff}), "a recycled buffer is cleared")

	// A recycled buffer that a growth fills: dirty beyond what it copies.
	for i := range again {
		again[i] = 0xff
	}
	mem.Reallocate(2*size, again)
	small = mem.Allocate(size / 2)
	copy(small, bytes.Repeat([]byte{1}, len(small)))
	grown = mem.Reallocate(size, small)
	assert.Equal(t, size/2, bytes.Count(grown, []byte{1}), "contents kept")
	assert.Zero(t, bytes.Count(grown, []byte{0xff}), "a dirty recycled buffer cleared after the copy")

	freed := mem.Allocate(8 * size)
	mem.Free(freed)
	assert.NotEqual(t, addr(freed), addr(mem.Allocate(8*size)), "a freed buffer is not kept")
}

// addr is where b's memory starts (assert compares pointers by what they
// point to).
func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
