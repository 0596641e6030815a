package parquetfile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
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
