package parquetfile_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// hexIDs is a PLAIN page of n random 32-hex ids, as trace ids are.
func hexIDs(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	return plainStrings(n, func() string { return fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()) })
}

func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(5, 6))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// A literals-only frame is a zstd frame: it decodes, with zstd's decoder
// and arrow-go's codec, to the page, whatever the page's size (the frame
// header's size field has three widths, blocks end at 128 KiB) and
// whether its blocks code as huff0 literals, a repeated byte or raw.
func TestLiteralsFramesDecode(t *testing.T) {
	ids := hexIDs(1, 40_000) // 1.44 MB
	pages := map[string][]byte{
		"empty":                       {},
		"one byte":                    {'a'},
		"255 bytes":                   ids[:255],
		"256 bytes":                   ids[:256],
		"1023 bytes, raw":             ids[:1023],
		"1024 bytes, huff0":           ids[:1024],
		"65791 bytes, two-byte size":  ids[:256+1<<16-1],
		"65792 bytes, four-byte size": ids[:256+1<<16],
		"one block":                   ids[:128<<10],
		"one block and one byte":      ids[:128<<10+1],
		"one block and a short tail":  ids[:128<<10+700],
		"1 MiB pages":                 ids[:1<<20],
		"past a page":                 ids,
		"one byte repeated":           bytes.Repeat([]byte{'x'}, 300<<10),
		"incompressible":              randomBytes(300 << 10),
		"ids, zeros, noise in blocks": append(append(append([]byte{}, ids[:130<<10]...), make([]byte, 128<<10)...), randomBytes(100<<10)...),
	}
	dec, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer dec.Close()
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	frames := map[string]func(dst, src []byte) []byte{"literals": parquetfile.AppendLiteralsFrame, "raw": parquetfile.AppendRawFrame}
	for name, page := range pages {
		for kind, appendFrame := range frames {
			t.Run(kind+"/"+name, func(t *testing.T) {
				frame := appendFrame(nil, page)
				got, err := dec.DecodeAll(frame, nil)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(page, got), "zstd's decoder gives the page back")
				got = codec.Decode(make([]byte, len(page)), frame)
				assert.True(t, bytes.Equal(page, got), "arrow-go's codec gives the page back")
				assert.LessOrEqual(t, len(frame), len(page)+len(page)/(128<<10)*3+12, "never much larger than the page")
			})
		}
	}
	frame := parquetfile.AppendLiteralsFrame(nil, ids)
	assert.Less(t, float64(len(frame)), 0.55*float64(len(ids)), "hex digits take about 4 bits")
	rle := parquetfile.AppendLiteralsFrame(nil, pages["one byte repeated"])
	assert.Less(t, len(rle), 32, "a repeated byte is one RLE block per 128 KiB")
}

// With the writer's flag in the level, the codec writes a page of random
// ids as literals only and a page that zstd's match search shrinks (text,
// small integers) as zstd does; without the flag, and below
// LiteralsMinPage, every page is zstd's.
func TestPageZstdLiteralsOnlyWhereMatchesDoNotPay(t *testing.T) {
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	ids := hexIDs(2, 20_000)
	for _, level := range []int{1, 3} {
		for name, c := range map[string]struct {
			page     []byte
			literals bool
		}{
			"random hex ids":          {ids, true},
			"text":                    {pageLike(1 << 20), false},
			"status codes":            {plainInt64s(100_000, func() int64 { return statusCodes[int(rand.Uint32())%len(statusCodes)] }), false},
			"ids below the threshold": {ids[:parquetfile.LiteralsMinPage-1], false},
		} {
			t.Run(fmt.Sprintf("level %d/%s", level, name), func(t *testing.T) {
				zstdFrame := codec.EncodeLevel(nil, c.page, level)
				got := codec.EncodeLevel(nil, c.page, level|parquetfile.LiteralPagesLevel)
				want := zstdFrame
				if c.literals {
					want = parquetfile.AppendLiteralsFrame(nil, c.page)
					assert.LessOrEqual(t, len(got), len(zstdFrame)*110/100, "within literalsSlack of zstd's size")
				}
				assert.True(t, bytes.Equal(want, got), "literals only: %v (%d bytes, zstd's %d)", c.literals, len(got), len(zstdFrame))
				assert.True(t, bytes.Equal(c.page, codec.Decode(make([]byte, len(c.page)), got)))
			})
		}
	}
}

// With either of the writer's flags in the level, the codec stores a page
// raw in its frame where zstd shrinks its start by less than rawSlack
// (random floats, random bytes) and compresses every other page as before
// (zstd's frame; literals only for random ids with LiteralPagesLevel).
func TestPageZstdRawWhereZstdDoesNotShrink(t *testing.T) {
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(7, 8))
	floats := plainFloat64s(100_000, func() float64 { return 10 + 490*r.Float64() })
	times := plainInt64s(100_000, func() int64 { return 1_764_108_000_000_000 + r.Int64N(60e6) })
	ids := hexIDs(4, 20_000)
	type want int
	const (
		zstdFrame want = iota
		rawFrame
		literalsFrame
	)
	for name, c := range map[string]struct {
		page []byte
		flag int
		want want
	}{
		"random floats":                     {floats, parquetfile.RawPagesLevel, rawFrame},
		"random bytes":                      {randomBytes(300 << 10), parquetfile.RawPagesLevel, rawFrame},
		"random bytes, distinct strings":    {randomBytes(300 << 10), parquetfile.LiteralPagesLevel, rawFrame},
		"times in a minute":                 {times, parquetfile.RawPagesLevel, zstdFrame},
		"status codes":                      {plainInt64s(100_000, func() int64 { return statusCodes[r.IntN(len(statusCodes))] }), parquetfile.RawPagesLevel, zstdFrame},
		"text":                              {pageLike(1 << 20), parquetfile.RawPagesLevel, zstdFrame},
		"random ids, numbers only":          {ids, parquetfile.RawPagesLevel, zstdFrame},
		"random ids, distinct strings":      {ids, parquetfile.LiteralPagesLevel, literalsFrame},
		"random floats below the threshold": {floats[:parquetfile.LiteralsMinPage-1], parquetfile.RawPagesLevel, zstdFrame},
		"random floats without a flag":      {floats, 0, zstdFrame},
	} {
		t.Run(name, func(t *testing.T) {
			got := codec.EncodeLevel(nil, c.page, 1|c.flag)
			expected := map[want][]byte{
				zstdFrame:     codec.EncodeLevel(nil, c.page, 1),
				rawFrame:      parquetfile.AppendRawFrame(nil, c.page),
				literalsFrame: parquetfile.AppendLiteralsFrame(nil, c.page),
			}[c.want]
			assert.True(t, bytes.Equal(expected, got), "frame %d bytes, want kind %d of %d bytes", len(got), c.want, len(expected))
			assert.True(t, bytes.Equal(c.page, codec.Decode(make([]byte, len(c.page)), got)), "decodes to the page")
			if c.want == rawFrame {
				assert.GreaterOrEqual(t, len(codec.EncodeLevel(nil, c.page, 1))*100, len(c.page)*(100-5), "zstd would not have shrunk it either")
			}
		})
	}
}

// Any bytes make a frame that zstd's decoder gives back unchanged.
func FuzzLiteralsFrame(f *testing.F) {
	f.Add([]byte{})
	f.Add(hexIDs(3, 100))
	f.Add(bytes.Repeat([]byte{0}, 2000))
	f.Add(randomBytes(5000))
	dec, err := zstd.NewReader(nil)
	require.NoError(f, err)
	defer dec.Close()
	f.Fuzz(func(t *testing.T, page []byte) {
		got, err := dec.DecodeAll(parquetfile.AppendLiteralsFrame(nil, page), nil)
		require.NoError(t, err)
		require.True(t, bytes.Equal(page, got))
	})
}
