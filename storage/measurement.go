package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/storage/tableschema"
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
	measurementTimeCol = tableschema.TimeColumn
	traceIDColumn      = tableschema.TraceIDColumn
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
func IsOTLPTable(name string) bool { return tableschema.IsOTLPTable(name) }

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
	ps, err := tableschema.Measurement(name, s)
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
