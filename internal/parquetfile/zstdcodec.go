package parquetfile

import (
	"sync"

	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
	pgzstd "github.com/parquet-go/parquet-go/compress/zstd"
)

// arrowZstdCodec is what arrow-go's own zstd codec implements.
type arrowZstdCodec interface {
	pqcompress.ErrorCodec
	pqcompress.StreamingCodec
}

// pageZstd is the zstd codec of arrow-go's Parquet writers in this process
// (registered over arrow-go's own in init). It compresses pages exactly as
// arrow-go's does (EncodeAll, the same encoder options) but keeps its
// encoders: arrow-go keeps them in a sync.Pool, which the garbage
// collector empties, and in the sidecar, where the rest of the process
// drives collections between flushes, a flush then builds new encoders,
// each allocating and clearing its match history and tables (about 19 MB
// at level 3 with zstd's default 8 MiB window; BenchmarkEncode's
// new-after-gc against new-after-gc-arrow-zstd). The window is
// zstdWindowBytes instead: a page is compressed alone, so history beyond
// the page is never used, and a page no larger than the window gets the
// same bytes (single-segment frames do not record the window; an idle
// encoder holds 4 MiB of history instead of 16). Decoding and the
// streaming API are arrow-go's.
type pageZstd struct {
	arrowZstdCodec
	mu   sync.Mutex
	idle map[zstd.EncoderLevel][]*zstd.Encoder
	n    int // encoders in idle
	// scratch keeps literalsScratch between pages, as idle the encoders.
	scratch []*literalsScratch
}

// zstdWindowBytes is the zstd window of page compression: twice the page
// size, since a page may pass DataPageBytes by up to one batch of values
// before it is cut.
const zstdWindowBytes = 2 * DataPageBytes

// maxIdleEncoders bounds the encoders kept between pages (each holds
// about 2 windows of history and 1-2 MiB of tables): as many as writers
// compress at once in practice.
const maxIdleEncoders = 4

func init() {
	codec, err := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	if err != nil {
		panic(err)
	}
	own, ok := codec.(arrowZstdCodec)
	if !ok {
		panic("arrow-go's zstd codec lacks the error or streaming API")
	}
	pageZstdCodec = &pageZstd{arrowZstdCodec: own, idle: map[zstd.EncoderLevel][]*zstd.Encoder{}}
	pqcompress.RegisterCodec(pqcompress.Codecs.Zstd, pageZstdCodec)
}

var pageZstdCodec *pageZstd

// EncodeLevel compresses src as one frame, as arrow-go's codec does. With
// rawPagesLevel in level, a page whose start zstd's fastest level shrinks
// by less than rawSlack percent is stored raw in a frame instead (random
// floats, deltas of unordered times); with literalPagesLevel, so is such
// a page, and a page that zstd's match search would shrink by less than
// literalsSlack percent more than huff0 alone becomes a literals-only
// frame (literals.go).
func (z *pageZstd) EncodeLevel(dst, src []byte, level int) []byte {
	var flags int
	if level > 0 {
		flags = level & (literalPagesLevel | rawPagesLevel)
		level &^= flags
	}
	l := zstd.EncoderLevelFromZstd(level)
	if level == pqcompress.DefaultCompressionLevel {
		l = zstd.SpeedDefault
	}
	if flags != 0 && len(src) >= literalsMinPage && len(src) <= literalsMaxPage {
		if out, ok := z.withoutMatches(dst, src, flags&literalPagesLevel != 0); ok {
			return out
		}
	}
	enc := z.get(l)
	defer z.put(l, enc)
	return enc.EncodeAll(src, dst[:0])
}

// literalPagesLevel is set in the zstd level of a column of distinct
// strings (Options.LiteralPages) to let its pages be literals-only or raw
// frames; rawPagesLevel in that of a column of numbers written without a
// dictionary, to let its pages be raw frames. The codec is one per
// process and the level is all it learns of the column.
const (
	literalPagesLevel = 1 << 16
	rawPagesLevel     = 1 << 17
)

// withoutMatches returns src as a raw frame if zstd's fastest level
// shrinks its first literalsSample bytes by less than rawSlack percent,
// or, where literals is set, as a literals-only frame if that is within
// literalsSlack of what zstd makes of them. The sample takes the fastest
// level whatever the page's: it only asks whether matches pay at all, and
// an encoder of a higher level clears tables many times larger for every
// call (at level 3 that cost more than the test saved on the OTLP tables).
func (z *pageZstd) withoutMatches(dst, src []byte, literals bool) ([]byte, bool) {
	s := z.getScratch()
	defer z.putScratch(s)
	enc := z.get(zstd.SpeedFastest)
	s.sample = enc.EncodeAll(src[:literalsSample], s.sample[:0])
	z.put(zstd.SpeedFastest, enc)
	switch {
	case incompressible(len(s.sample)):
		return appendRawFrame(dst[:0], src), true
	case literals && literalsOnly(src, len(s.sample), s):
		return appendLiteralsFrame(dst[:0], src, &s.huff), true
	}
	return nil, false
}

func (z *pageZstd) getScratch() *literalsScratch {
	z.mu.Lock()
	defer z.mu.Unlock()
	if n := len(z.scratch); n > 0 {
		s := z.scratch[n-1]
		z.scratch = z.scratch[:n-1]
		return s
	}
	return &literalsScratch{}
}

func (z *pageZstd) putScratch(s *literalsScratch) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if len(z.scratch) < maxIdleEncoders {
		z.scratch = append(z.scratch, s)
	}
}

func (z *pageZstd) get(l zstd.EncoderLevel) *zstd.Encoder {
	z.mu.Lock()
	if list := z.idle[l]; len(list) > 0 {
		enc := list[len(list)-1]
		z.idle[l] = list[:len(list)-1]
		z.n--
		z.mu.Unlock()
		return enc
	}
	z.mu.Unlock()
	// arrow-go's options (parquet/compress/zstd.go), with the window.
	enc, err := zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l), zstd.WithEncoderConcurrency(1),
		zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(zstdWindowBytes))
	if err != nil {
		panic(err) // the options are constants
	}
	return enc
}

func (z *pageZstd) put(l zstd.EncoderLevel, enc *zstd.Encoder) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.n < maxIdleEncoders {
		z.idle[l] = append(z.idle[l], enc)
		z.n++
	}
}

// rewriteZstd is the zstd codec of compaction's parquet-go writer: pages
// compressed by pageZstd, with the flush's encoder options, at the level
// compaction has always written (parquet-go's default codec, which a
// file's own schema carried: zstd's default level). Those options code
// the literals of a block without matches with Huffman, where
// klauspost's defaults up to that level store them raw: pages of random
// ids, which have no matches, were stored nearly raw, and the span ids of
// a compacted hour took 1.36x the bytes of the flushed files'. Decoding
// is parquet-go's.
type rewriteZstd struct{ pgzstd.Codec }

// rewriteZstdLevel is compaction's zstd level.
const rewriteZstdLevel = 3

func (*rewriteZstd) Encode(dst, src []byte) ([]byte, error) {
	return pageZstdCodec.EncodeLevel(dst, src, rewriteZstdLevel), nil
}
