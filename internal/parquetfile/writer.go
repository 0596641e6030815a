package parquetfile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Compression names accepted by Options.Compression.
const (
	CompressionZstd   = "zstd"
	CompressionSnappy = "snappy"
	CompressionNone   = "none"
)

// ErrUnknownCompression reports a compression name this package does not know.
var ErrUnknownCompression = errors.New("unknown compression (want zstd, snappy or none)")

// Options tune the files written.
type Options struct {
	Compression string
	// RowGroupRows caps the rows of one row group; it also bounds the memory
	// a writer holds, since a row group is encoded in memory before it is
	// written.
	RowGroupRows int64
	// BloomColumns get a split-block bloom filter with a false positive
	// rate of BloomFPP (default 1 %).
	BloomColumns []string
	BloomFPP     float64
	// ExpectedRows sizes the bloom filters: the number of rows the file
	// will hold (their distinct values at most). 0 means unknown: the
	// filters then adapt to the values seen, up to a row group's worth.
	ExpectedRows int64
	// Metadata is stored in the file's key/value metadata.
	Metadata map[string]string
	// AllStatistics gives the dictionary columns min/max statistics too
	// (see dictStatistics): compaction sorts its files, so they prune.
	AllStatistics bool
	// LiteralPages lets the pages of columns of distinct strings (ids,
	// see dictColumn.distinct) be written as huff0-coded literals only
	// where zstd's match search barely shrinks them (random ids), in a
	// third of the time for up to literalsSlack percent more bytes
	// (literals.go); in flat tables it also lets the pages of numeric
	// columns without a dictionary be stored raw where zstd barely
	// shrinks them (random floats, deltas of unordered times). The flush
	// sets it; compaction, whose files are the ones kept, does not.
	LiteralPages bool
	// EncodeWorkers is how many goroutines may encode a row group's
	// columns (parallel.go): 0 or 1, one after the other.
	EncodeWorkers int
}

// DefaultRowGroupRows sizes row groups for scans: large enough that engines
// read long runs, small enough that a writer holds little memory.
const DefaultRowGroupRows = 128 * 1024

// stringEncoding encodes the strings written without a dictionary:
// PLAIN, or idEncoding for the top-level ones whose values are of one
// width (oneWidth). DELTA_LENGTH_BYTE_ARRAY for every string saved 2-4 %
// of the bytes after zstd, but on text (log messages) PLAIN compresses
// better: zstd codes a length and the template after it as one match.
var stringEncoding = pq.Encodings.Plain

// idEncoding encodes a top-level string column written without a
// dictionary whose values in the file's first row group are all of one
// width, empty ones and nulls aside (trace, span and parent span ids,
// request ids, UUIDs): DELTA_LENGTH_BYTE_ARRAY, the lengths delta-packed
// in front (5 bytes per 128 values of one width), then the values back to
// back. PLAIN puts a 4-byte length before each id, which zstd codes as a
// match every few bytes; without them a page of random ids is hex alone,
// which zstd's fastest level skips through finding nothing, at 3x the
// speed and huff0's size (BenchmarkPageZstdByColumn's
// hex32-ids-back-to-back). A flushed file of 86 000 spans with random ids
// rewritten: 0.84x the CPU, 24.4 against 26.2 bytes per row (span_id 9.0
// -> 8.0); of 260 000 Arc log rows: 0.88x, request_id 21.3 -> 18.5
// (BenchmarkRewrite; docs/PERFORMANCE.md). arrow-go allocates a byte per
// 32 lengths (TestAllocationsDoNotGrowWithRows allows for it).
var idEncoding = pq.Encodings.DeltaLengthByteArray

// oneWidthIDs: whether idEncoding has effect (benchmarks turn it off to
// compare).
var oneWidthIDs = true

// DataPageBytes is the size of the data pages of every file, flushed or
// compacted (arrow-go's default, which the flush had always used). zstd
// compresses each page alone, so a page is its window: compaction once
// wrote parquet-go's default 256 KiB pages, and its merged files came out
// 14-19 % larger than the flushed files they replaced (Arc-protocol traces
// and logs, 10 M rows; docs/PERFORMANCE.md).
const DataPageBytes = 1 << 20

// writeBatchValues is how many values of a column arrow-go encodes at a
// time; its work and allocations are per such batch (its default is 1024).
const writeBatchValues = 16 * 1024

// DataPageVersion is the version of the data pages of every file, the
// flushed ones and the compacted ones: 1. A version 1 page compresses its
// repetition and definition levels with its values; version 2 stores them
// uncompressed, and on the OTLP tables, whose maps and lists give every
// value levels, they were half the file (BenchmarkEncode's page-v2 case:
// otlp_traces 13.2 against 6.4 bytes per row at 10 000 rows). The flat
// Arc tables have almost no levels: the version makes no difference there.
// Every engine reads version 1 (it is the default of most writers).
const DataPageVersion = 1

var arrowPageVersion = map[int]pq.DataPageVersion{1: pq.DataPageV1, 2: pq.DataPageV2}

// nestedStatistics: whether the leaf columns of maps and lists (attribute
// keys and values, event and link fields) get min/max statistics and a
// column index. No engine prunes with them (a filter on attributes['k'] is
// a function of the whole map, not a range of its key or value column),
// and computing them is 10-20 % of the encoding CPU of the OTLP tables,
// whose values are mostly in maps (BenchmarkEncode's nested-stats case).
// Top-level columns keep them: time ranges, names and codes prune. (With
// version 2 pages arrow-go takes a page's null count from its statistics:
// without them it would write 0, which readers such as parquet-go reject.)
var nestedStatistics = false

// dictStatistics: whether the columns written with a dictionary get
// min/max statistics and a column index. pqarrow computes them from the
// dictionary values a chunk references, found by hashing every index of
// the chunk through arrow's compute engine (Unique, then Take): no chunk
// shape avoids it (arrow-go 18.8 skips it only when the chunk's dictionary
// is the very array it took first, and it slices every chunk, which makes
// a new one). That was 8-28 % of the encoding CPU at 10 000 rows
// (BenchmarkEncode's new-dict-stats case). They buy little in flushed
// files: a flush mixes services, names and levels, so a row group's
// min/max spans most of the dictionary and prunes nothing; compaction
// rewrites the files with statistics on every top-level column. Columns
// whose dictionary is off (ids, free text) keep theirs.
var dictStatistics = false

// zstdLevelFlat and zstdLevelNested are the zstd levels of the files
// written, by the table's shape (zstdLevel). Tables with maps or lists
// (the OTLP tables) take level 3, zstd's default: their files are 15-22 %
// smaller than at level 1 at 10 000 rows, for no more CPU (the encoder
// writes fewer bytes; BenchmarkEncode's new-zstd1 case). Flat tables (the
// Arc measurements, mostly random ids and free text) take level 1, the
// fastest: level 3 costs them 1.4-1.7x the encoding CPU for 0.5-2.5 %
// fewer bytes (new-zstd3).
var zstdLevelFlat, zstdLevelNested = 1, 3

// plainStringsFlat: whether the top-level string columns that no
// dictionary encodes (trace and span ids, log messages) take
// zstdLevelFlat in a nested table too. Their values are what a flat
// table holds; the level-3 finding above came from ids that were mostly
// constant bytes (otlparrowtest's). With random ids, as SDKs make them,
// level 1 cost the sidecar 7 % less CPU per span for 7 % fewer bytes end
// to end; ids that repeat across requests (the load harness's) compress
// better at level 3 (docs/PERFORMANCE.md, run O).
var plainStringsFlat = true

// zstdLevel is the zstd level of a table's files: zstdLevelNested when it
// has a column inside a map or list, zstdLevelFlat otherwise.
func zstdLevel(schema *parquet.Schema) int {
	if flat(schema) {
		return zstdLevelFlat
	}
	return zstdLevelNested
}

// flat reports whether a table has no column inside a map or list (the
// Arc measurements, not the OTLP tables).
func flat(schema *parquet.Schema) bool {
	for _, path := range schema.Columns() {
		if leaf, _ := schema.Lookup(path...); leaf.MaxRepetitionLevel > 0 {
			return false
		}
	}
	return true
}

// numeric: the Arrow types written as fixed-width numbers, whose pages
// may be raw (rawPagesLevel).
func numeric(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.INT64, arrow.INT32, arrow.FLOAT64, arrow.TIMESTAMP:
		return true
	}
	return false
}

// literalPages: whether Options.LiteralPages has effect (benchmarks turn
// it off to compare).
var literalPages = true

// Codec returns the parquet-go codec of a compression name; compaction
// rewrites files with parquet-go. Its zstd pages are the flush's
// (rewriteZstd).
func Codec(name string) (compress.Codec, error) {
	switch name {
	case "", CompressionZstd:
		return &rewriteZstd{}, nil
	case CompressionSnappy:
		return &snappy.Codec{}, nil
	case CompressionNone:
		return &uncompressed.Codec{}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownCompression, name)
}

func arrowCodec(name string) (pqcompress.Compression, error) {
	switch name {
	case "", CompressionZstd:
		return pqcompress.Codecs.Zstd, nil
	case CompressionSnappy:
		return pqcompress.Codecs.Snappy, nil
	case CompressionNone:
		return pqcompress.Codecs.Uncompressed, nil
	}
	return 0, fmt.Errorf("%w: %q", ErrUnknownCompression, name)
}

// Writer writes record batches of one schema to one Parquet file. It
// encodes with arrow-go's pqarrow, which writes each column straight from
// the Arrow buffers as typed slices and derives repetition and definition
// levels from the Arrow offsets and validity bitmaps in bulk; the Parquet
// schema (column order, logical types, encodings) is the parquet-go schema
// given, so files are those the contract describes.
//
// Records are kept (retained, not copied) until a row group is complete;
// the row group is then written column by column straight to out, so a
// writer buffers no encoded pages beyond the current column chunk. With
// Options.EncodeWorkers, a large row group's columns are encoded on
// several goroutines instead (parallel.go), each into its pages in
// memory, and written to out in column order as soon as a column and
// those before it are done: up to one row group's encoded pages.
type Writer struct {
	out   io.Writer
	props []pq.WriterProperty
	fw    *pqarrow.FileWriter
	// rgw and colIdx are fw's current row group writer and column counter
	// (fileWriterInternals), nil when unreachable; ctx is pqarrow's write
	// context for the columns written through them.
	rgw    *file.RowGroupWriter
	colIdx *int
	ctx    context.Context
	// schema is the Arrow schema in Parquet column order; fields maps each
	// of its columns to the column of the records written.
	schema  *arrow.Schema
	fields  []int
	retype  []arrow.DataType // where the record's type needs relabelling
	dict    []*dictColumn    // the top-level string and int64 columns the schema dictionary-encodes
	maps    []*mapDictColumn // the top-level map<string, string> columns
	empty   []*emptyColumn   // the top-level list and map columns
	maxRows int64
	// dictStats: whether the dictionary columns get statistics
	// (dictStatistics, Options.AllStatistics).
	dictStats bool
	// level is the files' zstd level; literalPages says whether columns
	// of distinct strings may take literals-only pages, rawPages whether
	// the numeric columns of a flat table written without a dictionary
	// may take raw ones (both Options.LiteralPages).
	level        int
	literalPages bool
	rawPages     bool
	pending      []run // rows of the current row group
	rows         int64 // rows in pending
	total        int64
	// workers is Options.EncodeWorkers.
	workers int
	// err is the error that left the file unfinished.
	err error
	// parallelGroups counts the row groups encoded on several goroutines.
	parallelGroups int
	// leafBase is the first leaf column of each top-level column, and
	// the leaf count last (planLeaves).
	leafBase []int
	// dictValues counts the distinct values of the dictionaries handed to
	// arrow-go, which allocates twice for each when it takes one in
	// (TestAllocationsDoNotGrowWithRows allows for them).
	dictValues int64
}

// run is rows [start, end) of a record.
type run struct {
	rec        arrow.RecordBatch
	start, end int64
}

// NewWriter starts a Parquet file with the given schema on out. Every record
// written must have an Arrow schema that fits it (see Check).
func NewWriter(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options) (*Writer, error) {
	codec, err := arrowCodec(opts.Compression)
	if err != nil {
		return nil, err
	}
	w := &Writer{out: writerOnly{out}, maxRows: opts.RowGroupRows, level: zstdLevel(schema), literalPages: opts.LiteralPages && literalPages, workers: opts.EncodeWorkers}
	w.rawPages = w.literalPages && flat(schema)
	w.dictStats = dictStatistics || opts.AllStatistics
	if w.maxRows <= 0 {
		w.maxRows = DefaultRowGroupRows
	}
	if err := w.plan(schema, arrowSchema); err != nil {
		return nil, err
	}
	w.planLeaves(len(schema.Columns()))
	w.props = []pq.WriterProperty{
		pq.WithRootName(schema.Name()),
		pq.WithCompression(codec),
		pq.WithCompressionLevel(w.level),
		pq.WithMaxRowGroupLength(w.maxRows),
		pq.WithDataPageVersion(arrowPageVersion[DataPageVersion]),
		pq.WithStats(true),
		pq.WithPageIndexEnabled(true),
		pq.WithDictionaryDefault(false),
		pq.WithCreatedBy("arc-otel"),
		pq.WithBatchSize(writeBatchValues),
		pq.WithDataPageSize(DataPageBytes),
		pq.WithAllocator(writerBuffers),
	}
	w.props = append(w.props, columnEncodings(schema)...)
	w.props = append(w.props, plainStringLevels(schema, w.level)...)
	for _, d := range w.dict {
		if d != nil {
			w.props = append(w.props, pq.WithStatsFor(d.name, w.dictStats))
		}
	}
	w.props = append(w.props, bloomFilters(schema, opts, w.maxRows)...)
	w.schema = arrow.NewSchema(w.schema.Fields(), metadataOf(opts.Metadata))
	return w, nil
}

// start creates the file writer once the first row group is known: a
// dictionary column whose values repeat too little there (ids, request
// ids, durations; see dictLimit) is written without one (strings with
// stringEncoding, integers plain), since a dictionary would only add its
// index to every value.
func (w *Writer) start() error {
	props := w.props
	for c, d := range w.dict {
		switch {
		case d != nil && d.off:
			enc := stringEncoding
			if d.ints != nil {
				enc = pq.Encodings.Plain
			}
			props = append(props, pq.WithDictionaryFor(d.name, false), pq.WithEncodingFor(d.name, enc), pq.WithStatsFor(d.name, true))
			switch {
			case d.distinct && w.literalPages:
				props = append(props, pq.WithCompressionLevelFor(d.name, w.level|literalPagesLevel))
			case d.ints != nil && w.rawPages:
				props = append(props, pq.WithCompressionLevelFor(d.name, w.level|rawPagesLevel))
			}
		case d == nil && w.rawPages && numeric(w.schema.Field(c).Type):
			props = append(props, pq.WithCompressionLevelFor(w.schema.Field(c).Name, w.level|rawPagesLevel))
		}
	}
	for _, m := range w.maps {
		if m != nil {
			props = append(props, pq.WithDictionaryFor(m.keyPath, !m.keys.off), pq.WithDictionaryFor(m.valuePath, !m.values.off))
		}
	}
	props = append(props, w.idEncodings()...)
	fw, err := pqarrow.NewFileWriter(w.schema, w.out, pq.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties())
	if err != nil {
		return fmt.Errorf("start parquet file: %w", err)
	}
	w.fw = fw
	if rgw, colIdx, ok := fileWriterInternals(fw); ok {
		props := pqarrow.NewArrowWriterProperties()
		w.rgw, w.colIdx, w.ctx = rgw, colIdx, pqarrow.NewArrowWriteContext(context.Background(), &props)
	}
	return nil
}

// idEncodings gives idEncoding to the top-level string columns written
// without a dictionary whose values in the first row group (pending) are
// of one width.
func (w *Writer) idEncodings() []pq.WriterProperty {
	if !oneWidthIDs {
		return nil
	}
	var props []pq.WriterProperty
	for c, f := range w.schema.Fields() {
		if id := f.Type.ID(); id != arrow.STRING && id != arrow.BINARY || w.dict[c] != nil && !w.dict[c].off {
			continue
		}
		if oneWidth(w.pending, w.fields[c]) {
			props = append(props, pq.WithEncodingFor(f.Name, idEncoding))
		}
	}
	return props
}

// oneWidth reports whether the values of a string column in runs, empty
// ones and nulls aside, are all of one width.
func oneWidth(runs []run, col int) bool {
	width := -1
	for _, r := range runs {
		a, ok := r.rec.Column(col).(interface{ ValueOffsets() []int32 })
		if !ok {
			return false
		}
		offsets := a.ValueOffsets()[r.start : r.end+1]
		for i := 1; i < len(offsets); i++ {
			switch n := int(offsets[i] - offsets[i-1]); {
			case n == 0:
			case width < 0:
				width = n
			case n != width:
				return false
			}
		}
	}
	return true
}

// writerOnly hides an io.Closer: pqarrow closes a closable sink, and
// callers fsync and close their files themselves.
type writerOnly struct{ io.Writer }

func metadataOf(m map[string]string) *arrow.Metadata {
	if len(m) == 0 {
		return nil
	}
	md := arrow.MetadataFrom(m)
	return &md
}

// columnEncodings turns the encodings of the parquet-go schema (the dict
// and delta tags of the row types, the measurement tables' dictionary) into
// pqarrow properties: dictionary only where the schema asks for it (and
// the values repeat, see dictColumn), the delta encoding where it names it,
// stringEncoding for the other strings. Columns inside maps and lists get
// no statistics (see nestedStatistics).
func columnEncodings(schema *parquet.Schema) []pq.WriterProperty {
	var props []pq.WriterProperty
	for _, path := range schema.Columns() {
		leaf, _ := schema.Lookup(path...)
		name := strings.Join(path, ".")
		if leaf.MaxRepetitionLevel > 0 && !nestedStatistics {
			props = append(props, pq.WithStatsFor(name, false))
		}
		enc := leaf.Node.Encoding()
		switch {
		case isDictionary(enc):
			props = append(props, pq.WithDictionaryFor(name, true))
		case enc != nil && enc.Encoding() == format.DeltaBinaryPacked:
			props = append(props, pq.WithEncodingFor(name, pq.Encodings.DeltaBinaryPacked))
		case enc != nil && enc.Encoding() == format.DeltaByteArray:
			props = append(props, pq.WithEncodingFor(name, pq.Encodings.DeltaByteArray))
		case leaf.Node.Type().Kind() == parquet.ByteArray:
			props = append(props, pq.WithEncodingFor(name, stringEncoding))
		}
	}
	return props
}

// plainStringLevels gives the top-level string columns written without a
// dictionary zstdLevelFlat (see plainStringsFlat) in a file of another
// level. A dictionary column whose dictionary is given up keeps the
// file's level, or takes literals-only pages (Writer.start).
func plainStringLevels(schema *parquet.Schema, level int) []pq.WriterProperty {
	if !plainStringsFlat || level == zstdLevelFlat {
		return nil
	}
	var props []pq.WriterProperty
	for _, path := range schema.Columns() {
		leaf, _ := schema.Lookup(path...)
		if len(path) == 1 && leaf.Node.Type().Kind() == parquet.ByteArray && !isDictionary(leaf.Node.Encoding()) {
			props = append(props, pq.WithCompressionLevelFor(path[0], zstdLevelFlat))
		}
	}
	return props
}

func isDictionary(enc encoding.Encoding) bool {
	return enc != nil && (enc.Encoding() == format.RLEDictionary || enc.Encoding() == format.PlainDictionary)
}

// bloomFilters sizes each bloom column's filter for the rows expected, at
// most a row group's worth: a filter too large for a small file would be
// most of its bytes.
func bloomFilters(schema *parquet.Schema, opts Options, maxRows int64) []pq.WriterProperty {
	fpp := opts.BloomFPP
	if fpp <= 0 || fpp >= 1 {
		fpp = 0.01
	}
	var props []pq.WriterProperty
	for _, col := range opts.BloomColumns {
		if _, ok := schema.Lookup(col); !ok {
			continue
		}
		props = append(props, pq.WithBloomFilterEnabledFor(col, true), pq.WithBloomFilterFPPFor(col, fpp))
		if opts.ExpectedRows > 0 {
			props = append(props, pq.WithBloomFilterNDVFor(col, min(opts.ExpectedRows, maxRows)))
		} else {
			props = append(props, pq.WithAdaptiveBloomFilterEnabledFor(col, true), pq.WithBloomFilterNDVFor(col, maxRows))
		}
	}
	return props
}

// plan maps the Parquet columns onto the Arrow fields by name and checks
// that each Arrow type is the one pqarrow turns into the Parquet type.
func (w *Writer) plan(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
	fields := make([]arrow.Field, 0, len(schema.Fields()))
	for _, f := range schema.Fields() {
		idx := arrowSchema.FieldIndices(f.Name())
		if len(idx) != 1 {
			return fmt.Errorf("parquet column %q has no Arrow field", f.Name())
		}
		af := arrowSchema.Field(idx[0])
		typ, err := fit(f, af.Type)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name(), err)
		}
		var retype arrow.DataType
		if !arrow.TypeEqual(typ, af.Type) {
			retype = typ
		}
		fields = append(fields, arrow.Field{Name: f.Name(), Type: typ, Nullable: f.Optional()})
		w.fields = append(w.fields, idx[0])
		w.retype = append(w.retype, retype)
		var d *dictColumn
		if f.Leaf() && isDictionary(f.Encoding()) && (typ.ID() == arrow.STRING || typ.ID() == arrow.INT64) {
			d = newDictColumn(f.Name(), typ)
		}
		w.dict = append(w.dict, d)
		w.maps = append(w.maps, mapDictOf(f, typ))
		w.empty = append(w.empty, emptyColumnOf(fields[len(fields)-1]))
	}
	w.schema = arrow.NewSchema(fields, nil)
	return nil
}

// fit checks that Arrow data of type dt can be written as the Parquet node
// and returns the Arrow type that makes pqarrow write the node's logical
// type: a timestamp without a time zone becomes a UTC one (the contract's
// timestamps are UTC instants).
func fit(node parquet.Node, dt arrow.DataType) (arrow.DataType, error) {
	if node.Leaf() {
		kind := node.Type().Kind()
		switch {
		case kind == parquet.ByteArray && dt.ID() == arrow.STRING,
			kind == parquet.ByteArray && dt.ID() == arrow.BINARY,
			kind == parquet.Int64 && dt.ID() == arrow.INT64,
			kind == parquet.Int32 && dt.ID() == arrow.INT32,
			kind == parquet.Double && dt.ID() == arrow.FLOAT64,
			kind == parquet.Boolean && dt.ID() == arrow.BOOL:
			return dt, nil
		case kind == parquet.Int64 && dt.ID() == arrow.TIMESTAMP:
			ts := dt.(*arrow.TimestampType)
			if ts.Unit != schema.TimestampUnit {
				return nil, fmt.Errorf("want %s, got %s", schema.TimestampType, dt)
			}
			if ts.TimeZone != "UTC" {
				return schema.TimestampType, nil
			}
			return dt, nil
		}
		return nil, fmt.Errorf("no conversion from Arrow %s to Parquet %s", dt, node.Type())
	}
	var lt format.LogicalTypeValue
	if t := node.Type().LogicalType(); t != nil {
		lt = t.Value
	}
	switch lt.(type) {
	case *format.ListType:
		l, ok := dt.(*arrow.ListType)
		if !ok {
			return nil, fmt.Errorf("want an Arrow list for a Parquet LIST, got %s", dt)
		}
		elem := node.Fields()[0].Fields()[0]
		if l.ElemField().Nullable != elem.Optional() {
			return nil, fmt.Errorf("list element nullability differs")
		}
		if _, err := fit(elem, l.Elem()); err != nil {
			return nil, err
		}
		return dt, nil
	case *format.MapType:
		m, ok := dt.(*arrow.MapType)
		if !ok {
			return nil, fmt.Errorf("want an Arrow map for a Parquet MAP, got %s", dt)
		}
		kv := node.Fields()[0]
		k, _ := fieldNamed(kv, "key")
		v, _ := fieldNamed(kv, "value")
		if k == nil || v == nil || m.ItemField().Nullable != v.Optional() {
			return nil, fmt.Errorf("map key or value does not fit")
		}
		if _, err := fit(k, m.KeyType()); err != nil {
			return nil, err
		}
		if _, err := fit(v, m.ItemType()); err != nil {
			return nil, err
		}
		return dt, nil
	}
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("want an Arrow struct for a Parquet group, got %s", dt)
	}
	if st.NumFields() != len(node.Fields()) {
		return nil, fmt.Errorf("struct has %d fields, the Parquet group %d", st.NumFields(), len(node.Fields()))
	}
	for i, f := range node.Fields() {
		// pqarrow writes struct fields in Arrow order: the orders must agree.
		af := st.Field(i)
		if af.Name != f.Name() || af.Nullable != f.Optional() {
			return nil, fmt.Errorf("struct field %d is %q, want %q", i, af.Name, f.Name())
		}
		if _, err := fit(f, af.Type); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	return dt, nil
}

func fieldNamed(n parquet.Node, name string) (parquet.Node, bool) {
	for _, f := range n.Fields() {
		if f.Name() == name {
			return f, true
		}
	}
	return nil, false
}

// Check reports whether records of arrowSchema can be written with schema.
func Check(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
	var w Writer
	return w.plan(schema, arrowSchema)
}

// Write appends the given rows of rec, in that order; rows == nil means all
// rows. Ascending runs of rows are written as zero-copy slices of rec; rows
// scattered in small runs are gathered into one copy first, which is
// cheaper than writing many tiny slices.
func (w *Writer) Write(rec arrow.RecordBatch, rows []int32) error {
	if w.err != nil {
		return w.err
	}
	if rows == nil {
		return w.write(rec, 0, rec.NumRows())
	}
	if runs := countRuns(rows); runs > 1 && len(rows)/runs < minRunRows {
		return w.gather(rec, rows)
	}
	for start := 0; start < len(rows); {
		end := start + 1
		for end < len(rows) && rows[end] == rows[end-1]+1 {
			end++
		}
		if err := w.write(rec, int64(rows[start]), int64(rows[end-1])+1); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// minRunRows is the average run length below which Write gathers rows
// instead of slicing runs.
const minRunRows = 64

func countRuns(rows []int32) int {
	runs := 0
	for i := range rows {
		if i == 0 || rows[i] != rows[i-1]+1 {
			runs++
		}
	}
	return runs
}

func (w *Writer) gather(rec arrow.RecordBatch, rows []int32) error {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var parts []arrow.Array
	for i := range cols {
		parts = parts[:0]
		for start := 0; start < len(rows); {
			end := start + 1
			for end < len(rows) && rows[end] == rows[end-1]+1 {
				end++
			}
			parts = append(parts, array.NewSlice(rec.Column(i), int64(rows[start]), int64(rows[end-1])+1))
			start = end
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return fmt.Errorf("gather rows: %w", err)
		}
		cols[i] = c
	}
	gathered := array.NewRecordBatch(rec.Schema(), cols, int64(len(rows)))
	defer gathered.Release()
	return w.write(gathered, 0, int64(len(rows)))
}

// write appends rows [start, end) of rec, writing each row group as it
// fills up.
func (w *Writer) write(rec arrow.RecordBatch, start, end int64) error {
	for start < end {
		n := min(end-start, w.maxRows-w.rows)
		rec.Retain()
		w.pending = append(w.pending, run{rec: rec, start: start, end: start + n})
		w.rows += n
		w.total += n
		start += n
		if w.rows >= w.maxRows {
			if err := w.flushRowGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushRowGroup writes the pending rows as one row group. An error leaves
// the file unfinished: the writer then returns it from every call.
func (w *Writer) flushRowGroup() error {
	if w.err != nil {
		return w.err
	}
	if err := w.writeRowGroup(); err != nil {
		w.err = err
		return err
	}
	return nil
}

// writeRowGroup writes the pending rows as one row group: its columns
// encoded on up to encodeWorkers goroutines (parallel.go), or one after
// the other straight to out.
func (w *Writer) writeRowGroup() error {
	defer w.releasePending()
	workers := w.encodeWorkers()
	w.buildDictionaries(workers)
	w.countDictValues()
	if w.fw == nil {
		if err := w.start(); err != nil {
			return err
		}
	}
	if workers > 1 && w.columnsInReach() {
		return w.writeColumnsParallel(workers)
	}
	if err := w.fw.NewRowGroupChecked(); err != nil {
		return fmt.Errorf("start row group: %w", err)
	}
	s := &columnSink{fw: w.fw, colIdx: w.colIdx, ctx: w.ctx}
	if w.rgw != nil {
		s.column = (*w.rgw).(file.SerialRowGroupWriter).NextColumn
	}
	for c := range w.fields {
		if err := w.writeColumn(c, s); err != nil {
			return err
		}
	}
	return nil
}

// buildDictionaries encodes the row group's dictionary and map columns,
// on up to workers goroutines (the columns are independent); in the
// first row group, a column whose values repeat too little turns its
// dictionary off for the file.
func (w *Writer) buildDictionaries(workers int) {
	first := w.fw == nil
	eachColumn(len(w.fields), workers, func(c int) {
		if d := w.dict[c]; d != nil && !d.off {
			limit := 0 // later row groups keep the first one's choice
			if first {
				limit = dictLimit(w.rows)
			}
			// A column with no value in the first row group cannot show
			// whether its values repeat: without a limit after it, a
			// dictionary of durations would grow with every row group.
			if !d.build(w.pending, w.fields[c], limit) || first && d.size() == 0 {
				d.off = true
				d.reset()
				d.release() // its table goes back to the pool now
			}
		}
		if m := w.maps[c]; m != nil {
			m.build(w.pending, w.fields[c], first)
		}
	})
}

// columnSink is where writeColumn writes a top-level column's leaves:
// through fw, whose leaf counter colIdx says which leaf is next, and for
// the columns whose levels are computed here (direct), through column,
// which returns the next leaf's writer (nil when pqarrow's internals are
// out of reach). ctx is pqarrow's write context, whose scratch buffer
// allows one column at a time; parts is scratch for the column's chunks.
type columnSink struct {
	fw     *pqarrow.FileWriter
	colIdx *int
	ctx    context.Context
	column func() (file.ColumnChunkWriter, error)
	parts  []arrow.Array
}

// writeColumn writes top-level column c of the pending rows to s.
func (w *Writer) writeColumn(c int, s *columnSink) error {
	if err := w.encodeColumn(c, s); err != nil {
		return fmt.Errorf("encode column %q: %w", w.schema.Field(c).Name, err)
	}
	return nil
}

func (w *Writer) encodeColumn(c int, s *columnSink) error {
	if columnFault != nil {
		if err := columnFault(w.schema.Field(c).Name); err != nil {
			return err
		}
	}
	f := w.fields[c]
	direct := s.column != nil
	if e := w.empty[c]; e != nil && directEmptyLevels && direct && empty(w.pending, f) {
		e.build(w.pending)
		if err := e.write(s.ctx, s.column); err != nil {
			return err
		}
		*s.colIdx += len(e.leaves)
		return nil
	}
	if cap(s.parts) < len(w.pending) {
		s.parts = make([]arrow.Array, len(w.pending))
	}
	typ, parts := w.schema.Field(c).Type, s.parts[:len(w.pending)]
	// A dictionary chunk with statistics whose values include "" is
	// written with its min seeded, or as plain strings (emptymin.go).
	d := w.dict[c]
	emptyMin := d != nil && !d.off && w.emptyMin(d)
	if emptyMin && direct && emptyMinSeeded {
		if err := d.writeEmptyMin(s.ctx, s.column, w.schema.Field(c).Nullable); err != nil {
			return err
		}
		*s.colIdx++
		return nil
	}
	if d != nil && !d.off && !emptyMin {
		typ, parts = d.dictType(), parts[:1]
		parts[0] = d.array()
	} else if m := w.maps[c]; m != nil && m.on() && m.direct() && direct {
		arr := m.array()
		err := m.writeDirect(s.ctx, s.column, arr)
		arr.Release()
		if err != nil {
			return err
		}
		*s.colIdx += 2
		return nil
	} else if m != nil && m.on() {
		parts = parts[:1]
		parts[0] = m.array()
		typ = parts[0].DataType()
	} else {
		for i, r := range w.pending {
			parts[i] = w.slice(c, r.rec.Column(f), r.start, r.end)
		}
	}
	col := arrow.NewChunked(typ, parts)
	for i, a := range parts {
		a.Release()
		parts[i] = nil
	}
	err := s.fw.WriteColumnChunked(col, 0, w.rows)
	col.Release()
	return err
}

// countDictValues adds the distinct values of the row group's
// dictionaries to dictValues.
func (w *Writer) countDictValues() {
	for _, d := range w.dict {
		if d != nil && !d.off && d.ints == nil {
			w.dictValues += int64(d.size())
		}
	}
	for _, m := range w.maps {
		if m == nil {
			continue
		}
		for _, l := range []*mapLeaf{&m.keys, &m.values} {
			if !l.off {
				w.dictValues += int64(l.dict.size())
			}
		}
	}
}

func (w *Writer) releasePending() {
	for i, r := range w.pending {
		r.rec.Release()
		w.pending[i] = run{}
	}
	w.pending = w.pending[:0]
	w.rows = 0
	for _, d := range w.dict {
		if d != nil {
			d.reset()
		}
	}
	for _, m := range w.maps {
		if m != nil {
			m.reset()
		}
	}
}

// slice returns rows [start, end) of arr with the Parquet column's type.
func (w *Writer) slice(c int, arr arrow.Array, start, end int64) arrow.Array {
	if start != 0 || end != int64(arr.Len()) {
		arr = array.NewSlice(arr, start, end)
	} else {
		arr.Retain()
	}
	if t := w.retype[c]; t != nil {
		relabelled := array.MakeFromData(relabel(arr.Data(), t))
		arr.Release()
		arr = relabelled
	}
	return arr
}

func relabel(d arrow.ArrayData, t arrow.DataType) arrow.ArrayData {
	return array.NewData(t, d.Len(), d.Buffers(), nil, d.NullN(), d.Offset())
}

// Rows returns how many rows were written.
func (w *Writer) Rows() int64 { return w.total }

// Close writes the last row group and the footer. It does not close the
// underlying io.Writer.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.rows > 0 {
		if err := w.flushRowGroup(); err != nil {
			return err
		}
	}
	if w.fw == nil { // no rows: a file with the schema and no row group
		if err := w.start(); err != nil {
			return err
		}
	}
	if err := w.fw.Close(); err != nil {
		return fmt.Errorf("close parquet writer: %w", err)
	}
	for _, m := range w.maps {
		if m != nil {
			m.release()
		}
	}
	for _, d := range w.dict {
		if d != nil {
			d.release()
		}
	}
	for _, e := range w.empty {
		if e != nil {
			e.release()
		}
	}
	return nil
}
