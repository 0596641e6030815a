package parquetfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/huff0"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// pageLike is n bytes that compress as pages do: repeated words with
// random runs between them.
func pageLike(n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"checkout", "GET /api/v1/users", "200", "frontend", "db.query", "http.method"}
	b := make([]byte, 0, n+32)
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		for range r.IntN(6) {
			b = append(b, byte('a'+r.IntN(26)))
		}
	}
	return b[:n]
}

// The writers' zstd codec compresses a page to arrow-go's very bytes when
// the page fits its window (every page the writers cut, up to twice
// DataPageBytes), and to a frame that decodes to the page when it does
// not.
func TestPageZstdFrames(t *testing.T) {
	defer parquetfile.UsePageZstd(parquetfile.UsePageZstd(true))
	ours, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	parquetfile.UsePageZstd(false)
	arrows, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	require.NotEqual(t, fmt.Sprintf("%T", ours), fmt.Sprintf("%T", arrows))
	for _, size := range []int{1, 100, 200 << 10, 1 << 20, 2 << 20, 3 << 20} {
		for _, level := range []int{1, 3, pqcompress.DefaultCompressionLevel} {
			t.Run(fmt.Sprintf("size=%d/level=%d", size, level), func(t *testing.T) {
				src := pageLike(size)
				got := ours.EncodeLevel(nil, src, level)
				want := arrows.EncodeLevel(nil, src, level)
				if size <= 2*parquetfile.DataPageBytes {
					assert.True(t, bytes.Equal(want, got), "frames differ: %d against arrow-go's %d bytes", len(got), len(want))
				} else {
					assert.InDelta(t, len(want), len(got), 0.01*float64(len(want)), "compressed size")
				}
				back, err := arrows.(pqcompress.ErrorCodec).DecodeWithError(nil, got)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(src, back), "decodes to the page")
			})
		}
	}
}

// The codec keeps its encoders across garbage collections: arrow-go's
// (a sync.Pool) loses them, and each flush after a collection built new
// ones, allocating their history and tables (about 19 MB at level 3).
func TestPageZstdKeepsEncodersAcrossCollections(t *testing.T) {
	defer parquetfile.UsePageZstd(parquetfile.UsePageZstd(true))
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	src := pageLike(1 << 20)
	dst := make([]byte, 0, 2<<20)
	codec.EncodeLevel(dst, src, 3)
	runtime.GC()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	codec.EncodeLevel(dst, src, 3)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated compressing a page after two collections")
}

// Files written with the writers' zstd codec are byte for byte those of
// arrow-go's, for every table.
func TestPageZstdWritesTheSameFiles(t *testing.T) {
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 10000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			write := func(ours bool) []byte {
				defer parquetfile.UsePageZstd(parquetfile.UsePageZstd(ours))
				var buf bytes.Buffer
				w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 10000})
				require.NoError(t, err)
				for _, rec := range recs {
					require.NoError(t, w.Write(rec, nil))
				}
				require.NoError(t, w.Close())
				return buf.Bytes()
			}
			assert.True(t, bytes.Equal(write(false), write(true)), "files differ")
		})
	}
}

// BenchmarkPageZstdByColumn compresses one PLAIN page of each kind of
// column the Arc tables carry, at level 1 (the flat tables' level),
// against huff0 alone (zstd's literal coder, what a page of random hex
// digits gains all its compression from). On random 32-hex ids most of
// zstd's time goes to searching for matches that are not there.
func BenchmarkPageZstdByColumn(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows = 10_000
	pages := []struct {
		name string
		page []byte
	}{
		{"hex32-ids", plainStrings(rows, func() string { return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()) })},
		// The same without lengths, as a DELTA_LENGTH_BYTE_ARRAY page
		// holds them after its few bytes of lengths.
		{"hex32-ids-back-to-back", backToBack(rows, func() string { return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()) })},
		{"status-codes", plainInt64s(rows, func() int64 { return statusCodes[r.IntN(len(statusCodes))] })},
		{"times-in-a-minute", plainInt64s(rows, func() int64 { return 1_764_108_000_000_000_000 + r.Int64N(60e9) })},
		{"text", pageLike(rows * 55)},
		{"random-floats", plainFloat64s(rows, func() float64 { return 10 + 490*r.Float64() })},
	}
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(b, err)
	for _, p := range pages {
		b.Run("zstd1/"+p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.page)))
			dst := make([]byte, 0, 2*len(p.page))
			var out []byte
			for b.Loop() {
				out = codec.EncodeLevel(dst[:0], p.page, 1)
			}
			b.ReportMetric(float64(len(p.page))/float64(len(out)), "ratio")
		})
		b.Run("huff0/"+p.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(p.page)))
			s := new(huff0.Scratch)
			var n int
			for b.Loop() {
				n = huff0Size(b, p.page, s)
			}
			b.ReportMetric(float64(len(p.page))/float64(n), "ratio")
		})
	}
}

// huff0Size is the size of page coded by huff0 alone, in zstd's blocks.
func huff0Size(b *testing.B, page []byte, s *huff0.Scratch) int {
	n := 0
	for at := 0; at < len(page); at += huff0.BlockSizeMax {
		block := page[at:min(at+huff0.BlockSizeMax, len(page))]
		out, _, err := huff0.Compress4X(block, s)
		switch {
		case err == nil:
			n += len(out)
		case errors.Is(err, huff0.ErrIncompressible), errors.Is(err, huff0.ErrUseRLE):
			n += len(block)
		default:
			b.Fatal(err)
		}
	}
	return n
}

// plainFloat64s is a PLAIN DOUBLE page of n values.
func plainFloat64s(n int, value func() float64) []byte {
	var b []byte
	for range n {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(value()))
	}
	return b
}

// statusCodes are mostly zero, as span status codes are.
var statusCodes = []int64{0, 0, 0, 0, 0, 0, 0, 1, 2}

// plainStrings is a PLAIN BYTE_ARRAY page of n values.
func plainStrings(n int, value func() string) []byte {
	var b []byte
	for range n {
		v := value()
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
		b = append(b, v...)
	}
	return b
}

// backToBack is n values with nothing between them.
func backToBack(n int, value func() string) []byte {
	var b []byte
	for range n {
		b = append(b, value()...)
	}
	return b
}

// plainInt64s is a PLAIN INT64 page of n values.
func plainInt64s(n int, value func() int64) []byte {
	var b []byte
	for range n {
		b = binary.LittleEndian.AppendUint64(b, uint64(value()))
	}
	return b
}
