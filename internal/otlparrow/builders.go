package otlparrow

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Emit receives each finished record batch; ownership passes to the callee,
// which must Release it, also when it returns an error.
type Emit func(table *schema.Table, rec arrow.RecordBatch) error

// table builds the record batches of one table.
type table struct {
	schema    *schema.Table
	cols      []column // by field index
	batchSize int
	rows      int // rows in the batch being built
	pending   int // rows of the current Convert call not yet appended
	sizes     []builderSize
	sizedRows int   // rows of the batch sizes were measured on; 0 before any
	runs      []run // filled before the batch is cut
}

// run is a set of columns whose values repeat over runs of rows (a
// resource's, a metric's): a row only counts itself, and fill appends the
// pending rows in bulk.
type run interface {
	fill()
	drop() // forgets the pending rows
}

// builderSize remembers how much of one arrow-go builder the last batch
// used. A builder hands its buffers to the array it builds and starts the
// next batch empty; growing back by doubling costs about log2(rows)
// allocations per buffer, reserving what the last batch needed costs one.
type builderSize struct {
	b       array.Builder
	bin     *array.BinaryBuilder // b's data buffer, for string columns
	n, data int
}

func newTable(mem memory.Allocator, t *schema.Table, batchSize int) *table {
	tb := &table{schema: t, batchSize: max(batchSize, 1)}
	for _, f := range t.Arrow.Fields() {
		tb.cols = append(tb.cols, tb.newColumn(mem, f.Type))
	}
	return tb
}

func (t *table) newColumn(mem memory.Allocator, dt arrow.DataType) column {
	switch dt.ID() {
	case arrow.STRING:
		return newStrCol()
	case arrow.INT64, arrow.TIMESTAMP:
		return &numCol[int64]{}
	case arrow.FLOAT64:
		return &numCol[float64]{}
	case arrow.BOOL:
		return &boolCol{}
	case arrow.MAP:
		return newMapCol()
	case arrow.LIST:
		switch dt.(*arrow.ListType).Elem().ID() {
		case arrow.INT64:
			return newListCol[int64]()
		case arrow.FLOAT64:
			return newListCol[float64]()
		case arrow.STRUCT:
			elems := array.NewBuilder(mem, dt.(*arrow.ListType).Elem()).(*array.StructBuilder)
			t.sizes = appendSizes(t.sizes, elems)
			return newStructListCol(elems)
		}
	}
	b := array.NewBuilder(mem, dt)
	t.sizes = appendSizes(t.sizes, b)
	return builderCol{b}
}

// appendSizes lists b and every builder nested in it.
func appendSizes(sizes []builderSize, b array.Builder) []builderSize {
	s := builderSize{b: b}
	switch x := b.(type) {
	case *array.StringBuilder:
		s.bin = x.BinaryBuilder
	case *array.MapBuilder:
		sizes = appendSizes(sizes, x.ValueBuilder())
	case *array.ListBuilder:
		sizes = appendSizes(sizes, x.ValueBuilder())
	case *array.StructBuilder:
		for i := range x.NumField() {
			sizes = appendSizes(sizes, x.FieldBuilder(i))
		}
	}
	return append(sizes, s)
}

// start begins a Convert call that will append rows rows to this table.
func (t *table) start(rows int) {
	t.pending = rows
	t.reserve()
}

// reserve sizes the columns for the next batch from the last one, scaled
// down when fewer rows are left. It never scales up: one unusual batch (a
// huge string, say) must not make every later batch reserve for it.
func (t *table) reserve() {
	rows := min(t.batchSize, t.pending)
	if t.sizedRows == 0 || rows == 0 {
		return
	}
	frac := min(1, float64(rows)/float64(t.sizedRows))
	for _, c := range t.cols {
		c.reserve(frac)
	}
	scale := func(v int) int { return int(float64(v) * frac) }
	for i := range t.sizes {
		s := &t.sizes[i]
		// +1: a list's offsets take one more slot than it has elements.
		if n := scale(s.n) + 1; n > s.b.Cap() {
			s.b.Resize(n)
		}
		if s.bin != nil {
			s.bin.ReserveData(scale(s.data))
		}
	}
}

func (t *table) measure() {
	for i := range t.sizes {
		s := &t.sizes[i]
		s.n = s.b.Len()
		if s.bin != nil {
			s.data = s.bin.DataLen()
		}
	}
	t.sizedRows = t.rows
}

func (t *table) col(name string) column  { return t.cols[t.schema.FieldIndex(name)] }
func (t *table) str(name string) *strCol { return t.col(name).(*strCol) }
func (t *table) i64(name string) *numCol[int64] {
	return t.col(name).(*numCol[int64])
}
func (t *table) f64(name string) *numCol[float64] {
	return t.col(name).(*numCol[float64])
}
func (t *table) ts(name string) *numCol[int64]       { return t.i64(name) }
func (t *table) boolean(name string) *boolCol        { return t.col(name).(*boolCol) }
func (t *table) i64List(name string) *listCol[int64] { return t.col(name).(*listCol[int64]) }
func (t *table) f64List(name string) *listCol[float64] {
	return t.col(name).(*listCol[float64])
}
func (t *table) structList(name string) *structListCol {
	return t.col(name).(*structListCol)
}
func (t *table) attrs(name string) attrCols {
	return attrCols{text: t.col(name).(*mapCol), types: t.col(typesColumn(name)).(*mapCol)}
}

// structFields finds the field builders of a list's struct by column name.
type structFields struct {
	s  *array.StructBuilder
	st *arrow.StructType
}

func newStructFields(l *structListCol) structFields {
	return structFields{l.elems, l.elems.Type().(*arrow.StructType)}
}

func (f structFields) field(name string) array.Builder {
	i, ok := f.st.FieldIdx(name)
	if !ok {
		panic("otlparrow: no struct field " + name) // a schema change this code does not know
	}
	return f.s.FieldBuilder(i)
}

func (f structFields) ts(name string) *array.TimestampBuilder {
	return f.field(name).(*array.TimestampBuilder)
}
func (f structFields) str(name string) *array.StringBuilder {
	return f.field(name).(*array.StringBuilder)
}
func (f structFields) i64(name string) *array.Int64Builder {
	return f.field(name).(*array.Int64Builder)
}
func (f structFields) f64(name string) *array.Float64Builder {
	return f.field(name).(*array.Float64Builder)
}
func (f structFields) attrs(name string) nestedAttrCols {
	return newNestedAttrCols(f.field(name).(*array.MapBuilder), f.field(typesColumn(name)).(*array.MapBuilder))
}

// typesColumn names the type-tag map that goes with a text map.
func typesColumn(name string) string {
	const attrs = "attributes"
	if n := len(name) - len(attrs); n >= 0 && name[n:] == attrs {
		return name[:n] + "attribute_types"
	}
	return name + "_types"
}

// rowDone counts a finished row and emits the batch when it is full.
func (t *table) rowDone(emit Emit) error {
	t.rows++
	t.pending--
	if t.rows < t.batchSize {
		return nil
	}
	return t.flush(emit)
}

func (t *table) flush(emit Emit) error {
	if t.rows == 0 {
		return nil
	}
	for _, r := range t.runs {
		r.fill()
	}
	t.measure()
	rec := t.newRecord()
	t.rows = 0
	t.reserve()
	return emit(t.schema, rec)
}

func (t *table) newRecord() arrow.RecordBatch {
	fields := t.schema.Arrow.Fields()
	arrs := make([]arrow.Array, len(t.cols))
	for i, c := range t.cols {
		arrs[i] = c.newArray(fields[i].Type)
	}
	rec := array.NewRecordBatch(t.schema.Arrow, arrs, int64(t.rows))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// discard drops a partly built batch, so that a converter whose Convert
// failed can be reused without emitting stale rows.
func (t *table) discard() {
	for _, r := range t.runs {
		r.drop()
	}
	if t.rows > 0 {
		for _, c := range t.cols {
			c.discard()
		}
		t.rows = 0
	}
	t.pending = 0
}

func (t *table) release() {
	for _, c := range t.cols {
		switch c := c.(type) {
		case builderCol:
			c.b.Release()
		case *structListCol:
			c.release()
		}
	}
}
