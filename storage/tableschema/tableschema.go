package tableschema

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// TimeColumn is the time column of every measurement table;
// TraceIDColumn gets a bloom filter where a measurement has it.
const (
	TimeColumn    = "time"
	TraceIDColumn = "trace_id"
)

// ErrSchemaMismatch reports a record batch or measurement schema the
// table cannot store.
var ErrSchemaMismatch = errors.New("record batch schema does not match the table")

// IsOTLPTable reports whether name is one of the OTLP tables, which
// measurements may not take.
func IsOTLPTable(name string) bool {
	_, ok := schema.Lookup(name)
	return ok
}

// SortKeyNames are a table's sort columns: the OTLP table's own, or time
// for a measurement.
func SortKeyNames(table string) []string {
	if t, ok := schema.Lookup(table); ok {
		return t.SortColumns
	}
	return []string{TimeColumn}
}

// BloomColumns are the point-lookup columns of a table: the OTLP table's
// own, or trace_id where a measurement has one.
func BloomColumns(table string) []string {
	if t, ok := schema.Lookup(table); ok {
		return t.BloomColumns
	}
	return []string{TraceIDColumn}
}

// Compacted is a measurement's schema for the files compaction
// writes: compaction orders rows by time, so time takes
// DELTA_BINARY_PACKED (small steps; 14 % fewer bytes than plain on the
// Arc driver's logs), and only the integer columns in dictInts (few
// distinct values, see LowCardinalityInts) keep the flushed schema's
// dictionary. That choice was measured on compacted files (a dictionary on
// every integer column shrank status codes and took 50 % more bytes on
// durations, docs/PERFORMANCE.md), and its sample asks for fewer values
// (1024) than the writer's own limit (one in eight rows) would.
func Compacted(name string, s *arrow.Schema, dictInts map[string]bool) (*parquet.Schema, error) {
	flushed, err := Measurement(name, s)
	if err != nil {
		return nil, err
	}
	g := parquet.Group{}
	for _, f := range flushed.Fields() {
		n := parquet.Node(f)
		switch {
		case f.Name() == TimeColumn:
			n = parquet.Encoded(n, &parquet.DeltaBinaryPacked)
		case f.Type().Kind() == parquet.Int64 && !dictInts[f.Name()]:
			n = parquet.Optional(parquet.Int(64))
		}
		g[f.Name()] = n
	}
	return parquet.NewSchema(name, g), nil
}

// maxDictInts is the most distinct values an integer column may show in
// the sample of LowCardinalityInts to get a dictionary in compacted files.
// Up to it the dictionary's indices take at most 10 bits a row, and its
// page at most 8 KiB a row group: status codes, milliseconds, small counts
// and enum-like codes. On the Arc driver's logs it took status_code from
// 0.67 to 0.25 bytes a row and response_time_ms (500 values) from 1.51 to
// 1.14 (zstd level 1, 1.1 M rows sorted by time); high-cardinality
// columns such as durations in nanoseconds stay plain.
const maxDictInts = 1024

// MinDictSampleRows is the fewest rows the sample of LowCardinalityInts
// needs: in fewer, a column of durations can show few distinct values by
// chance, and a dictionary on it would grow with every row group.
const MinDictSampleRows = 8 * maxDictInts

// LowCardinalityInts returns the integer columns (other than time) of a
// measurement file whose first row group holds at most maxDictInts
// distinct values: the sample compaction chooses dictionaries by (none
// when the row group is under MinDictSampleRows).
func LowCardinalityInts(fr *pqarrow.FileReader) (map[string]bool, error) {
	s, err := fr.Schema()
	if err != nil {
		return nil, err
	}
	var idx []int
	for i, f := range s.Fields() {
		if f.Type.ID() == arrow.INT64 {
			idx = append(idx, i)
		}
	}
	pf := fr.ParquetReader()
	if len(idx) == 0 || pf.NumRowGroups() == 0 || pf.MetaData().RowGroup(0).NumRows() < MinDictSampleRows {
		return nil, nil
	}
	tbl, err := fr.ReadRowGroups(context.Background(), idx, []int{0})
	if err != nil {
		return nil, fmt.Errorf("sample integer columns: %w", err)
	}
	defer tbl.Release()
	out := map[string]bool{}
	for i := range int(tbl.NumCols()) {
		if distinctAtMost(tbl.Column(i).Data(), maxDictInts) {
			out[tbl.Schema().Field(i).Name] = true
		}
	}
	return out, nil
}

// distinctAtMost reports whether the non-null values of an int64 column
// take at most n distinct values.
func distinctAtMost(col *arrow.Chunked, n int) bool {
	seen := make(map[int64]struct{}, n+1)
	for _, ch := range col.Chunks() {
		a := ch.(*array.Int64)
		for i, v := range a.Int64Values() {
			if a.IsNull(i) {
				continue
			}
			if seen[v] = struct{}{}; len(seen) > n {
				return false
			}
		}
	}
	return true
}

// Measurement is the Parquet schema a measurement's flushed files take:
// time first, then each field by its Arrow type.
func Measurement(name string, s *arrow.Schema) (*parquet.Schema, error) {
	if s.NumFields() == 0 || s.Field(0).Name != TimeColumn || !isStoredTime(s.Field(0).Type) || s.Field(0).Nullable {
		return nil, fmt.Errorf("%w: measurement %q: the first column must be a non-null %q timestamp (%s)", ErrSchemaMismatch, name, TimeColumn, schema.TimestampType)
	}
	// Time takes DELTA_BINARY_PACKED in flushed files too: on unordered
	// times (the Arc driver's, random within a minute) its deltas are
	// smaller than the plain values after zstd and cost the writer less
	// than zstd's match search on them; on ordered ones they are a few
	// bits a row (docs/PERFORMANCE.md, 2026-11-27).
	g := parquet.Group{TimeColumn: parquet.Encoded(schema.TimestampNode(), &parquet.DeltaBinaryPacked)}
	for _, f := range s.Fields()[1:] {
		var n parquet.Node
		switch f.Type.ID() {
		case arrow.INT64:
			// A dictionary where the values repeat (status codes,
			// milliseconds); the writer gives it up on the others
			// (durations, ids) within the first row group.
			n = parquet.Encoded(parquet.Int(64), MeasurementEncoding(f.Name, parquet.Int64))
		case arrow.FLOAT64:
			n = parquet.Leaf(parquet.DoubleType)
		case arrow.STRING:
			// Dictionary first (host, region, level repeat); parquet-go falls
			// back to plain pages when a column's dictionary grows too large.
			n = parquet.Encoded(parquet.String(), MeasurementEncoding(f.Name, parquet.ByteArray))
		case arrow.BOOL:
			n = parquet.Leaf(parquet.BooleanType)
		default:
			return nil, fmt.Errorf("%w: measurement %q column %q: type %s (want int64, float64, string or bool)", ErrSchemaMismatch, name, f.Name, f.Type)
		}
		if _, dup := g[f.Name]; dup {
			return nil, fmt.Errorf("%w: measurement %q: column %q twice", ErrSchemaMismatch, name, f.Name)
		}
		g[f.Name] = parquet.Optional(n)
	}
	return parquet.NewSchema(name, g), nil
}

// MeasurementEncoding is the encoding a measurement's schema asks for a
// column of a kind: DELTA_BINARY_PACKED for time, a dictionary for
// integers and strings (the writer gives it up where values repeat too
// little), none (PLAIN) for the rest. Compaction asks it for the columns
// of files whose shape Measurement no longer takes.
func MeasurementEncoding(name string, kind parquet.Kind) encoding.Encoding {
	switch {
	case name == TimeColumn && kind == parquet.Int64:
		return &parquet.DeltaBinaryPacked
	case kind == parquet.Int64, kind == parquet.ByteArray:
		return &parquet.RLEDictionary
	}
	return nil
}

// isStoredTime: a timestamp of the contract's unit, UTC or without a zone.
func isStoredTime(dt arrow.DataType) bool {
	ts, ok := dt.(*arrow.TimestampType)
	return ok && ts.Unit == schema.TimestampUnit && (ts.TimeZone == "UTC" || ts.TimeZone == "")
}
