package parquetfile

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"
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
	// a writer holds, since parquet-go buffers a row group before writing it.
	RowGroupRows int64
	// BloomColumns get a split-block bloom filter of BloomBitsPerValue bits
	// per distinct value.
	BloomColumns      []string
	BloomBitsPerValue uint
	// Metadata is stored in the file's key/value metadata.
	Metadata map[string]string
}

// DefaultRowGroupRows sizes row groups for scans: large enough that engines
// read long runs, small enough that a writer holds little memory.
const DefaultRowGroupRows = 128 * 1024

// Codec returns the parquet-go codec of a compression name.
func Codec(name string) (compress.Codec, error) {
	switch name {
	case "", CompressionZstd:
		return &zstd.Codec{Level: zstd.SpeedFastest}, nil
	case CompressionSnappy:
		return &snappy.Codec{}, nil
	case CompressionNone:
		return &uncompressed.Codec{}, nil
	}
	return nil, fmt.Errorf("%w: %q", ErrUnknownCompression, name)
}

// chunkRows is how many rows are converted before their values are handed to
// parquet-go: it bounds the scratch value buffers.
const chunkRows = 1024

// Writer writes record batches of one schema to one Parquet file.
type Writer struct {
	pw      *parquet.Writer
	columns []writer
	fields  []int
	leaves  []*leaf
	maxRows int64
	rows    int64 // rows in the current row group
	total   int64
}

// NewWriter starts a Parquet file with the given schema on out. Every record
// written must have an Arrow schema that fits it (see Check).
func NewWriter(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options) (*Writer, error) {
	codec, err := Codec(opts.Compression)
	if err != nil {
		return nil, err
	}
	w := &Writer{maxRows: opts.RowGroupRows}
	if w.maxRows <= 0 {
		w.maxRows = DefaultRowGroupRows
	}
	if err := w.planColumns(schema, arrowSchema); err != nil {
		return nil, err
	}
	wopts := []parquet.WriterOption{
		schema,
		parquet.Compression(codec),
		parquet.DataPageStatistics(true),
		parquet.MaxRowsPerRowGroup(w.maxRows),
	}
	bits := opts.BloomBitsPerValue
	if bits == 0 {
		bits = 10
	}
	// One option for every column: each parquet.BloomFilters option
	// replaces the previous one.
	var filters []parquet.BloomFilterColumn
	for _, col := range opts.BloomColumns {
		if _, ok := schema.Lookup(col); ok {
			filters = append(filters, parquet.SplitBlockFilter(bits, col))
		}
	}
	if len(filters) > 0 {
		wopts = append(wopts, parquet.BloomFilters(filters...))
	}
	for k, v := range opts.Metadata {
		wopts = append(wopts, parquet.KeyValueMetadata(k, v))
	}
	w.pw = parquet.NewWriter(out, wopts...)
	return w, nil
}

func (w *Writer) planColumns(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
	for _, f := range schema.Fields() {
		idx := arrowSchema.FieldIndices(f.Name())
		if len(idx) != 1 {
			return fmt.Errorf("parquet column %q has no Arrow field", f.Name())
		}
		col, err := plan(f, arrowSchema.Field(idx[0]).Type, 0, &w.leaves)
		if err != nil {
			return fmt.Errorf("column %q: %w", f.Name(), err)
		}
		w.columns = append(w.columns, col)
		w.fields = append(w.fields, idx[0])
	}
	return nil
}

// Check reports whether records of arrowSchema can be written with schema.
func Check(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
	var w Writer
	return w.planColumns(schema, arrowSchema)
}

// Write appends the given rows of rec, in that order; rows == nil means all
// rows.
func (w *Writer) Write(rec arrow.RecordBatch, rows []int32) error {
	n := int(rec.NumRows())
	if rows != nil {
		n = len(rows)
	}
	for start := 0; start < n; {
		end := min(start+chunkRows, n, start+int(w.maxRows-w.rows))
		w.convert(rec, rows, start, end)
		if err := w.emit(); err != nil {
			return err
		}
		w.rows += int64(end - start)
		w.total += int64(end - start)
		if w.rows >= w.maxRows {
			if err := w.pw.Flush(); err != nil {
				return fmt.Errorf("flush row group: %w", err)
			}
			w.rows = 0
		}
		start = end
	}
	return nil
}

func (w *Writer) convert(rec arrow.RecordBatch, rows []int32, start, end int) {
	for c, col := range w.columns {
		arr := rec.Column(w.fields[c])
		for k := start; k < end; k++ {
			i := k
			if rows != nil {
				i = int(rows[k])
			}
			col.write(arr, i, 0, 0)
		}
	}
}

func (w *Writer) emit() error {
	cws := w.pw.ColumnWriters()
	for _, l := range w.leaves {
		if _, err := cws[l.column].WriteRowValues(l.values); err != nil {
			return fmt.Errorf("write column %d: %w", l.column, err)
		}
		clear(l.values) // drop references to Arrow buffers
		l.values = l.values[:0]
	}
	return nil
}

// Rows returns how many rows were written.
func (w *Writer) Rows() int64 { return w.total }

// Close writes the last row group and the footer. It does not close the
// underlying io.Writer.
func (w *Writer) Close() error {
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("close parquet writer: %w", err)
	}
	return nil
}
