package parquetfile

import (
	"context"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/klauspost/compress/huff0"
	"github.com/parquet-go/parquet-go"
)

// OldWriter is the per-value parquet-go writer this package replaced, kept
// for BenchmarkEncode.
type OldWriter = oldWriter

// NewOldWriter starts a file with the replaced writer.
func NewOldWriter(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options) (*OldWriter, error) {
	return newOldWriter(out, schema, arrowSchema, opts)
}

// SetOneWidthIDs turns DELTA_LENGTH_BYTE_ARRAY for top-level strings of
// one width (idEncoding) on or off, for BenchmarkEncode's variant; it
// returns the previous setting.
func SetOneWidthIDs(on bool) bool {
	prev := oneWidthIDs
	oneWidthIDs = on
	return prev
}

// SetDeltaLengthStrings makes writers encode every string without a
// dictionary DELTA_LENGTH_BYTE_ARRAY (on) or PLAIN; it returns the
// previous setting.
func SetDeltaLengthStrings(on bool) bool {
	prev := stringEncoding == pq.Encodings.DeltaLengthByteArray
	stringEncoding = pq.Encodings.Plain
	if on {
		stringEncoding = pq.Encodings.DeltaLengthByteArray
	}
	return prev
}

// SetZstdLevels sets the zstd levels of the files of flat and of nested
// tables, for BenchmarkEncode's variants; it returns the previous ones.
func SetZstdLevels(flat, nested int) (int, int) {
	prevFlat, prevNested := zstdLevelFlat, zstdLevelNested
	zstdLevelFlat, zstdLevelNested = flat, nested
	return prevFlat, prevNested
}

// WritePqarrow writes recs with pqarrow as issue 14 first measured it: the
// writer's schema and properties (dictionary where the schema says so,
// delta where it says so, DELTA_LENGTH_BYTE_ARRAY for other strings, bloom
// filters, page index, data page v2) but pqarrow's own dictionary
// encoding and WriteBuffered, record by record.
func WritePqarrow(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options, recs []arrow.RecordBatch) error {
	defer SetDeltaLengthStrings(SetDeltaLengthStrings(true))
	w, err := NewWriter(out, schema, arrowSchema, opts)
	if err != nil {
		return err
	}
	fw, err := pqarrow.NewFileWriter(w.schema, writerOnly{out}, pq.NewWriterProperties(w.props...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		return err
	}
	for _, rec := range recs {
		cols := make([]arrow.Array, len(w.fields))
		for c, f := range w.fields {
			cols[c] = w.slice(c, rec.Column(f), 0, rec.NumRows())
		}
		part := array.NewRecordBatch(w.schema, cols, rec.NumRows())
		for _, c := range cols {
			c.Release()
		}
		err := fw.WriteBuffered(part)
		part.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

// NewWriterWith starts a writer whose arrow-go properties end with extra,
// which override the writer's own: for BenchmarkEncode's variants.
func NewWriterWith(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options, extra ...pq.WriterProperty) (*Writer, error) {
	w, err := NewWriter(out, schema, arrowSchema, opts)
	if err != nil {
		return nil, err
	}
	w.props = append(w.props, extra...)
	return w, nil
}

// SetNestedStatistics turns statistics of map and list leaf columns on or
// off, for BenchmarkEncode's variant.
func SetNestedStatistics(on bool) { nestedStatistics = on }

// SetDictStatistics turns statistics of dictionary-encoded columns on or
// off, for BenchmarkEncode's variant.
func SetDictStatistics(on bool) { dictStatistics = on }

// SetMapDict sets which leaves of the map columns get a dictionary
// ("none", "keys", "all"), for BenchmarkEncode's variants; it returns the
// previous setting.
func SetMapDict(which string) string {
	prev := [...]string{mapDictNone: "none", mapDictKeys: "keys", mapDictKeysAndValues: "all"}[mapDict]
	mapDict = map[string]int{"none": mapDictNone, "keys": mapDictKeys, "all": mapDictKeysAndValues}[which]
	return prev
}

// DictionaryValues is how many distinct values the writer's dictionaries
// held, summed over columns and row groups.
func (w *Writer) DictionaryValues() int64 { return w.dictValues }

// SetMapDictMinRows sets the fewest rows a first row group needs for map
// dictionaries and returns the previous value.
func SetMapDictMinRows(n int) int {
	prev := mapDictMinRows
	mapDictMinRows = n
	return prev
}

// SetDirectMapLevels turns writing map columns with our own levels on or
// off, for BenchmarkEncode's variant; it returns the previous setting.
func SetDirectMapLevels(on bool) bool {
	prev := directMapLevels
	directMapLevels = on
	return prev
}

// ReachesPqarrowInternals reports whether the writer reached its pqarrow
// file writer's row group writer (fileWriterInternals).
func (w *Writer) ReachesPqarrowInternals() bool { return w.rgw != nil && w.colIdx != nil }

// BufferPool is the size-classed allocator writers give arrow-go.
type BufferPool = bufferPool

// NewBufferPool returns a pool keeping at most limit bytes.
func NewBufferPool(limit int64) *BufferPool { return newBufferPool(limit) }

// Stats returns the bytes p keeps and the class bytes it handed out
// recycled and fresh.
func (p *BufferPool) Stats() (held, reused, fresh int64) { return p.stats() }

// PooledBytes are the smallest and largest buffers a pool keeps.
const MinPooledBytes, MaxPooledBytes = minPooledBytes, maxPooledBytes

// SetWriterAllocator makes writers created from now on give arrow-go a;
// it returns the previous allocator.
func SetWriterAllocator(a memory.Allocator) memory.Allocator {
	prev := writerBuffers
	writerBuffers = a
	return prev
}

// UsePageZstd registers this package's zstd codec (on) or arrow-go's own
// with arrow-go, for comparisons; it returns whether ours was registered.
func UsePageZstd(on bool) bool {
	codec, _ := pqcompress.GetCodec(pqcompress.Codecs.Zstd)
	ours, was := codec.(*pageZstd)
	switch {
	case on && !was:
		pqcompress.RegisterCodec(pqcompress.Codecs.Zstd, pageZstdCodec)
	case !on && was:
		pqcompress.RegisterCodec(pqcompress.Codecs.Zstd, ours.arrowZstdCodec)
	}
	return was
}

// AppendLiteralsFrame is appendLiteralsFrame with a scratch of its own.
func AppendLiteralsFrame(dst, src []byte) []byte {
	return appendLiteralsFrame(dst, src, new(huff0.Scratch))
}

// AppendRawFrame is appendRawFrame.
func AppendRawFrame(dst, src []byte) []byte { return appendRawFrame(dst, src) }

// LiteralPagesLevel and RawPagesLevel are the flags a writer with
// Options.LiteralPages sets in its zstd level; LiteralsMinPage the
// smallest page they apply to.
const LiteralPagesLevel, RawPagesLevel, LiteralsMinPage = literalPagesLevel, rawPagesLevel, literalsMinPage

// SetLiteralPages turns Options.LiteralPages' effect on or off, for
// BenchmarkEncode's variant; it returns the previous setting.
func SetLiteralPages(on bool) bool {
	prev := literalPages
	literalPages = on
	return prev
}

// SetPlainStringsFlat turns plainStringsFlat on or off, for
// BenchmarkEncode's variant; it returns the previous setting.
func SetPlainStringsFlat(on bool) bool {
	prev := plainStringsFlat
	plainStringsFlat = on
	return prev
}

// SetDirectEmptyLevels turns writing the list and map columns without an
// entry in a row group with levels computed once on or off, for
// BenchmarkEncode's variant; it returns the previous setting.
func SetDirectEmptyLevels(on bool) bool {
	prev := directEmptyLevels
	directEmptyLevels = on
	return prev
}

// EmptyColumns counts, by column, the row groups in which the writer
// wrote a column with levels computed once (directEmptyLevels).
func (w *Writer) EmptyColumns() map[string]int {
	out := map[string]int{}
	for c, e := range w.empty {
		if e != nil && e.written > 0 {
			out[w.schema.Field(c).Name] = e.written
		}
	}
	return out
}

// EmptyWriterPool drops the buffers the writers' pool keeps, so a test
// sees only its own.
func EmptyWriterPool() {
	writerPool.pool.Empty()
}

// SetEncodeWorkers makes every writer encode its columns on n goroutines
// (0: one per CPU); it returns the previous setting.
func SetEncodeWorkers(n int) int {
	prev := forcedWorkers
	forcedWorkers = n
	return prev
}

// SetColumnFault makes the encoding of every column fault returns an
// error for fail with it (nil: none); it returns the previous hook.
func SetColumnFault(fault func(column string) error) func(column string) error {
	prev := columnFault
	columnFault = fault
	return prev
}

// ParallelRowGroups counts the row groups the writer encoded on several
// goroutines.
func (w *Writer) ParallelRowGroups() int { return w.parallelGroups }

// HideWriteContext puts pqarrow's write context out of the workers' reach
// (as an arrow-go without that field would) until the returned func.
func HideWriteContext() (restore func()) {
	prev := fileWriterContext
	fileWriterContext = func(*pqarrow.FileWriter) *context.Context { return nil }
	return func() { fileWriterContext = prev }
}
