package storage

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// Measurement tables hold what Arc-protocol clients write: one table folder
// per measurement, flat columns whose set and types the payloads decide.
// A table can see several schemas over time (a column added, a new
// measurement field); each schema is its own Table value and writes its own
// files into the same partition folders, and readers merge them by column
// name (DuckDB's union_by_name, Spark's mergeSchema).

// measurementTimeCol is the time column of every measurement table;
// traceIDColumn gets a bloom filter where a measurement has it.
const (
	measurementTimeCol = "time"
	traceIDColumn      = "trace_id"
)

// maxCachedSchemas and maxCachedSchemaBytes bound the measurement tables
// kept in memory: schemas come from clients, and each distinct one would
// otherwise stay for the life of the process. The bytes matter as much as
// the count: a 1 000-column table takes about 400 KiB, so 4 096 of them
// would hold 1.6 GiB. An evicted table is rebuilt on its next write, with
// the same variant (it derives from the schema), so nothing changes on
// disk.
const (
	maxCachedSchemas     = 4096
	maxCachedSchemaBytes = 32 << 20
)

// measurementKey names a measurement table: its name and schema fingerprint.
type measurementKey struct {
	name string
	fp   [sha256.Size]byte
}

// schemaCache is an LRU of measurement tables bounded by count and by the
// bytes tableCost estimates.
type schemaCache struct {
	mu    sync.Mutex // over add's Add and evictions, so bytes stays exact
	lru   *lru.Cache[measurementKey, *Table]
	bytes int64
}

var measurements = newSchemaCache()

func newSchemaCache() *schemaCache {
	c := &schemaCache{}
	l, err := lru.NewWithEvict(maxCachedSchemas, func(_ measurementKey, t *Table) { c.bytes -= tableCost(t.Arrow) })
	if err != nil {
		panic(err) // only for a size <= 0
	}
	c.lru = l
	return c
}

func (c *schemaCache) get(k measurementKey) (*Table, bool) { return c.lru.Get(k) }

func (c *schemaCache) len() int { return c.lru.Len() }

func (c *schemaCache) add(k measurementKey, t *Table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(k) {
		return // another writer built it first; either copy serves
	}
	c.bytes += tableCost(t.Arrow)
	c.lru.Add(k, t)
	for c.bytes > maxCachedSchemaBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// tableCost is an upper bound of what a cached measurement table of
// schema s holds: its Parquet schema, columns and schema frame, measured
// at about 410 bytes a column for 16-byte names, and s itself, which the
// table keeps (TestTableCostBoundsTheHeap, TestMeasurementTableCacheIsBoundedByBytes).
func tableCost(s *arrow.Schema) int64 {
	n := int64(2048)
	for _, f := range s.Fields() {
		n += 640 + 3*int64(len(f.Name))
	}
	return n
}

// IsOTLPTable reports whether name is one of the OTLP tables, which
// measurements may not take.
func IsOTLPTable(name string) bool {
	_, ok := tables[name]
	return ok
}

// MeasurementTable returns the table for a measurement's schema: time (a
// UTC timestamp of the contract's unit, schema.TimestampType, not null)
// first, then nullable int64, float64, string or bool columns. name is the
// table's folder (MeasurementFolder).
func MeasurementTable(name string, s *arrow.Schema) (*Table, error) {
	if IsOTLPTable(name) {
		return nil, fmt.Errorf("%w: measurement folder %q is the name of an OTLP table", ErrBadName, name)
	}
	if err := CheckName("measurement", name); err != nil {
		return nil, err
	}
	fp := fingerprint(s)
	key := measurementKey{name: name, fp: fp}
	if t, ok := measurements.get(key); ok {
		return t, nil
	}
	ps, err := parquetSchema(name, s)
	if err != nil {
		return nil, err
	}
	t := &Table{
		Name:        name,
		Arrow:       s,
		Parquet:     ps,
		SchemaFrame: arcflight.SchemaFrame(s),
		timeCol:     0,
		variant:     variantOfPrint(fp),
	}
	// Trace lookups are point lookups whatever wrote the table.
	if _, ok := ps.Lookup(traceIDColumn); ok {
		t.BloomColumns = []string{traceIDColumn}
	}
	measurements.add(key, t)
	return t, nil
}

// variantOf tells apart the schemas of one measurement (Table.variant).
func variantOf(s *arrow.Schema) uint64 { return variantOfPrint(fingerprint(s)) }

func variantOfPrint(fp [sha256.Size]byte) uint64 { return binary.BigEndian.Uint64(fp[:8]) }

// tableFor resolves a WAL record's table: an OTLP table by name, else the
// measurement table of the record's own schema.
func tableFor(name string, s *arrow.Schema) (*Table, error) {
	if t, ok := tables[name]; ok {
		return t, nil
	}
	return MeasurementTable(name, s)
}

// fingerprint identifies a schema by its fields' names, types and
// nullability. Every string is length-prefixed, so no choice of names (a
// name may hold any byte the name rules let through, and older WAL records
// may hold more) makes two schemas hash the same input.
func fingerprint(s *arrow.Schema) [sha256.Size]byte {
	h := sha256.New()
	var buf []byte
	str := func(v string) {
		buf = binary.AppendUvarint(buf, uint64(len(v)))
		buf = append(buf, v...)
	}
	buf = binary.AppendUvarint(buf, uint64(s.NumFields()))
	for _, f := range s.Fields() {
		str(f.Name)
		str(f.Type.String())
		if f.Nullable {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	}
	h.Write(buf)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// compactedSchema is a measurement's schema for the files compaction
// writes: compaction orders rows by time, so time takes
// DELTA_BINARY_PACKED (small steps; 14 % fewer bytes than plain on the
// Arc driver's logs), and only the integer columns in dictInts (few
// distinct values, see lowCardinalityInts) keep the flushed schema's
// dictionary. That choice was measured on compacted files (a dictionary on
// every integer column shrank status codes and took 50 % more bytes on
// durations, docs/PERFORMANCE.md), and its sample asks for fewer values
// (1024) than the writer's own limit (one in eight rows) would.
func compactedSchema(name string, s *arrow.Schema, dictInts map[string]bool) (*parquet.Schema, error) {
	flushed, err := parquetSchema(name, s)
	if err != nil {
		return nil, err
	}
	g := parquet.Group{}
	for _, f := range flushed.Fields() {
		n := parquet.Node(f)
		switch {
		case f.Name() == measurementTimeCol:
			n = parquet.Encoded(n, &parquet.DeltaBinaryPacked)
		case f.Type().Kind() == parquet.Int64 && !dictInts[f.Name()]:
			n = parquet.Optional(parquet.Int(64))
		}
		g[f.Name()] = n
	}
	return parquet.NewSchema(name, g), nil
}

// maxDictInts is the most distinct values an integer column may show in
// the sample of lowCardinalityInts to get a dictionary in compacted files.
// Up to it the dictionary's indices take at most 10 bits a row, and its
// page at most 8 KiB a row group: status codes, milliseconds, small counts
// and enum-like codes. On the Arc driver's logs it took status_code from
// 0.67 to 0.25 bytes a row and response_time_ms (500 values) from 1.51 to
// 1.14 (zstd level 1, 1.1 M rows sorted by time); high-cardinality
// columns such as durations in nanoseconds stay plain.
const maxDictInts = 1024

// minDictSampleRows is the fewest rows the sample of lowCardinalityInts
// needs: in fewer, a column of durations can show few distinct values by
// chance, and a dictionary on it would grow with every row group.
const minDictSampleRows = 8 * maxDictInts

// lowCardinalityInts returns the integer columns (other than time) of a
// measurement file whose first row group holds at most maxDictInts
// distinct values: the sample compaction chooses dictionaries by (none
// when the row group is under minDictSampleRows).
func lowCardinalityInts(fr *pqarrow.FileReader) (map[string]bool, error) {
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
	if len(idx) == 0 || pf.NumRowGroups() == 0 || pf.MetaData().RowGroup(0).NumRows() < minDictSampleRows {
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

func parquetSchema(name string, s *arrow.Schema) (*parquet.Schema, error) {
	if s.NumFields() == 0 || s.Field(0).Name != measurementTimeCol || !isStoredTime(s.Field(0).Type) || s.Field(0).Nullable {
		return nil, fmt.Errorf("%w: measurement %q: the first column must be a non-null %q timestamp (%s)", ErrSchemaMismatch, name, measurementTimeCol, schema.TimestampType)
	}
	g := parquet.Group{measurementTimeCol: schema.TimestampNode()}
	for _, f := range s.Fields()[1:] {
		var n parquet.Node
		switch f.Type.ID() {
		case arrow.INT64:
			// A dictionary where the values repeat (status codes,
			// milliseconds); the writer gives it up on the others
			// (durations, ids) within the first row group.
			n = parquet.Encoded(parquet.Int(64), &parquet.RLEDictionary)
		case arrow.FLOAT64:
			n = parquet.Leaf(parquet.DoubleType)
		case arrow.STRING:
			// Dictionary first (host, region, level repeat); parquet-go falls
			// back to plain pages when a column's dictionary grows too large.
			n = parquet.Encoded(parquet.String(), &parquet.RLEDictionary)
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

// isStoredTime: a timestamp of the contract's unit, UTC or without a zone.
func isStoredTime(dt arrow.DataType) bool {
	ts, ok := dt.(*arrow.TimestampType)
	return ok && ts.Unit == schema.TimestampUnit && (ts.TimeZone == "UTC" || ts.TimeZone == "")
}
