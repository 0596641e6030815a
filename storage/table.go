package storage

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// Table is what storage needs to know of a table: its schemas and where the
// time that partitions it lives.
type Table struct {
	Name         string
	Arrow        *arrow.Schema
	Parquet      *parquet.Schema
	BloomColumns []string
	// SortColumns order the rows of compacted files, so that filters on
	// them skip row groups by their statistics.
	SortColumns []string
	// SchemaFrame is the table's IPC schema message; streams are decoded
	// with it (see arcflight.SchemaFrame).
	SchemaFrame []byte
	// NanosSchemaFrame is the schema message of an OTLP table's streams
	// from exporters of earlier builds, whose timestamps are nanoseconds:
	// their batches are stored converted (schema.StoredTimes), so that an
	// upgrade of the sidecars before the collectors loses nothing.
	NanosSchemaFrame []byte
	timeCol          int
	// variant tells apart the schemas of one measurement table; OTLP
	// tables have one schema and variant 0.
	variant uint64
}

// Errors that name what is wrong with a batch; the receiver maps them to
// InvalidArgument.
var (
	ErrUnknownTable   = errors.New("unknown table")
	ErrSchemaMismatch = tableschema.ErrSchemaMismatch
	ErrNullInRequired = errors.New("null in a non-nullable column")
	ErrInvalidUTF8    = errors.New("string is not valid UTF-8")
	ErrMalformed      = errors.New("malformed record batch")
	ErrTimeRange      = errors.New("time outside the accepted range")
)

type fullValidator interface{ ValidateFull() error }

func checkBuffers(arr arrow.Array) error {
	d := arr.Data()
	end := d.Offset() + d.Len()
	bufs := d.Buffers()
	if len(bufs) > 0 && bufs[0] != nil && bufs[0].Len()*8 < end {
		return fmt.Errorf("validity bitmap has %d bytes for %d rows", bufs[0].Len(), end)
	}
	var width int
	switch arr.DataType().ID() {
	case arrow.INT64, arrow.TIMESTAMP, arrow.FLOAT64:
		width = 64
	case arrow.INT32:
		width = 32
	case arrow.BOOL:
		width = 1
	}
	if width > 0 && end > 0 && (len(bufs) < 2 || bufs[1] == nil || bufs[1].Len()*8 < end*width) {
		return fmt.Errorf("value buffer too short for %d rows", end)
	}
	if s, ok := arr.(*array.String); ok {
		// Offsets only: the UTF-8 check after this names the bad row.
		return checkStringOffsets(s)
	}
	if v, ok := arr.(fullValidator); ok {
		return v.ValidateFull()
	}
	return nil
}

func checkStringOffsets(s *array.String) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Len() == 0 {
		return nil
	}
	offs := s.ValueOffsets()
	if offs[0] < 0 {
		return fmt.Errorf("negative string offset %d", offs[0])
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return fmt.Errorf("string offsets decrease at row %d", i-1)
		}
	}
	return nil
}

var tables = func() map[string]*Table {
	m := map[string]*Table{}
	for _, name := range schema.Names() {
		st, _ := schema.Lookup(name)
		m[name] = &Table{
			Name:             st.Name,
			Arrow:            st.Arrow,
			Parquet:          st.Parquet,
			BloomColumns:     st.BloomColumns,
			SortColumns:      st.SortColumns,
			SchemaFrame:      arcflight.SchemaFrame(st.Arrow),
			NanosSchemaFrame: arcflight.SchemaFrame(schema.SchemaTimesIn(st.Arrow, arrow.Nanosecond)),
			timeCol:          st.FieldIndex(schema.ColTime),
		}
	}
	return m
}()

// LookupTable returns the table of the given name.
func LookupTable(name string) (*Table, error) {
	t, ok := tables[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknownTable, name, schema.Names())
	}
	return t, nil
}

// Check validates a record batch for the table before anything of it is
// written: the schema must be the table's, non-nullable columns must hold no
// nulls, and strings must be UTF-8 (Parquet strings are, and one bad value
// would make a whole file unreadable to strict engines).
func (t *Table) Check(rec arrow.RecordBatch) error {
	if err := t.CheckSchema(rec.Schema()); err != nil {
		return err
	}
	return t.CheckRows(rec)
}

// CheckSchema is Check's first step: s must be the table's schema. A
// caller that decodes many batches of one *arrow.Schema (a Flight
// stream's decoder) compares it once, not per batch (a deep comparison of
// every field, about a third of Check on a traces batch).
func (t *Table) CheckSchema(s *arrow.Schema) error {
	if !s.Equal(t.Arrow) {
		return fmt.Errorf("%w %s: got %s", ErrSchemaMismatch, t.Name, describe(s, t.Arrow))
	}
	return nil
}

// CheckRows is the rest of Check, for a batch whose schema passed
// CheckSchema.
func (t *Table) CheckRows(rec arrow.RecordBatch) error {
	for i, f := range t.Arrow.Fields() {
		if n := rec.Column(i).Len(); int64(n) != rec.NumRows() {
			return fmt.Errorf("%w: column %q has %d rows, the batch %d", ErrMalformed, f.Name, n, rec.NumRows())
		}
		if err := checkArray(f.Name, f.Nullable, rec.Column(i)); err != nil {
			return err
		}
	}
	return t.checkTime(rec)
}

func (t *Table) checkTime(rec arrow.RecordBatch) error {
	limit := schema.LatestTime(time.Now())
	for i, v := range rec.Column(t.timeCol).(*array.Timestamp).Values() {
		if v < 0 || int64(v) > limit {
			return fmt.Errorf("%w: row %d has time %d %s (%s)", ErrTimeRange, i, v, schema.TimestampUnit, schema.TimeRange)
		}
	}
	return nil
}

// describe names the first difference between two schemas.
func describe(got, want *arrow.Schema) string {
	if got.NumFields() != want.NumFields() {
		return fmt.Sprintf("%d columns, want %d", got.NumFields(), want.NumFields())
	}
	for i := range want.NumFields() {
		g, w := got.Field(i), want.Field(i)
		if !g.Equal(w) {
			return fmt.Sprintf("column %d %q %s (nullable=%t), want %q %s (nullable=%t)",
				i, g.Name, g.Type, g.Nullable, w.Name, w.Type, w.Nullable)
		}
	}
	return "schema metadata differs"
}

// checkArray checks what the IPC reader does not: that buffers and offsets
// hold what the lengths promise (a hostile batch could otherwise make a read
// go out of bounds), then the contract's own rules.
func checkArray(name string, nullable bool, arr arrow.Array) error {
	if err := checkBuffers(arr); err != nil {
		return fmt.Errorf("%w: column %q: %v", ErrMalformed, name, err)
	}
	if !nullable && arr.NullN() > 0 {
		return fmt.Errorf("%w %q", ErrNullInRequired, name)
	}
	switch a := arr.(type) {
	case *array.String:
		// One pass over the bytes; per value only to name a bad row.
		if a.Len() == 0 {
			break // it may have no offsets at all
		}
		var values []byte
		if buf := a.Data().Buffers()[2]; buf != nil {
			values = buf.Bytes()
		}
		if schema.ValidStrings(values, a.ValueOffsets()) {
			break
		}
		for i := range a.Len() {
			if !utf8.ValidString(a.Value(i)) {
				return fmt.Errorf("%w: column %q row %d", ErrInvalidUTF8, name, i)
			}
		}
	case *array.Map:
		// The entries' offsets were checked against the entries struct,
		// whose key and value columns declare their own lengths.
		mt := a.DataType().(*arrow.MapType)
		entries := a.ListValues().Len()
		if k, v := a.Keys().Len(), a.Items().Len(); k < entries || v < entries {
			return fmt.Errorf("%w: column %q: %d keys and %d values for %d map entries", ErrMalformed, name, k, v, entries)
		}
		if err := checkArray(name+".key", false, a.Keys()); err != nil {
			return err
		}
		return checkArray(name+".value", mt.ItemField().Nullable, a.Items())
	case *array.List:
		lt := a.DataType().(*arrow.ListType)
		return checkArray(name+".element", lt.ElemField().Nullable, a.ListValues())
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		for i, f := range st.Fields() {
			if c := a.Field(i); c.Len() < a.Len() {
				return fmt.Errorf("%w: column %q: child %q has %d rows, want %d", ErrMalformed, name, f.Name, c.Len(), a.Len())
			}
			if err := checkArray(name+"."+f.Name, f.Nullable, a.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}
