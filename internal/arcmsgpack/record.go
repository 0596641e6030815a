package arcmsgpack

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// TimeType is the Arrow type of the time column: the contract's timestamp,
// which Parquet readers see as a UTC timestamp in microseconds.
var TimeType = schema.TimestampType

func arrowType(k Kind) arrow.DataType {
	switch k {
	case KindInt:
		return arrow.PrimitiveTypes.Int64
	case KindFloat:
		return arrow.PrimitiveTypes.Float64
	case KindBool:
		return arrow.FixedWidthTypes.Boolean
	}
	// Strings, and columns with only nulls: a type has to be chosen, and
	// text is the one any later value converts from.
	return arrow.BinaryTypes.String
}

// Schema is the measurement's Arrow schema: time first, then the columns
// by name, so payloads that list columns in any order share one schema.
func (m *Measurement) Schema() *arrow.Schema {
	cols := m.sorted()
	fields := make([]arrow.Field, 0, len(cols)+1)
	fields = append(fields, arrow.Field{Name: TimeColumn, Type: TimeType})
	for _, c := range cols {
		fields = append(fields, arrow.Field{Name: c.Name, Type: arrowType(c.Kind), Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

func (m *Measurement) sorted() []*Column {
	cols := make([]*Column, len(m.Columns))
	for i := range m.Columns {
		cols[i] = &m.Columns[i]
	}
	slices.SortFunc(cols, func(a, b *Column) int { return strings.Compare(a.Name, b.Name) })
	return cols
}

// Record builds the measurement's record batch on the columns' own
// slices: the values are not copied again (the record keeps them alive).
// mem is for the buffers the columns do not have (validity bitmaps, the
// values of boolean columns).
func (m *Measurement) Record(mem memory.Allocator) arrow.RecordBatch {
	schema := m.Schema()
	rows := len(m.Time)
	cols := make([]arrow.Array, 0, len(m.Columns)+1)
	cols = append(cols, array.NewTimestampData(array.NewData(TimeType, rows,
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(m.Time))}, nil, 0, 0)))
	for i, c := range m.sorted() {
		cols = append(cols, columnArray(mem, schema.Field(i+1).Type, c, rows))
	}
	rec := array.NewRecordBatch(schema, cols, int64(rows))
	for _, a := range cols {
		a.Release()
	}
	return rec
}

// columnArray wraps a column's values as an Arrow array.
func columnArray(mem memory.Allocator, typ arrow.DataType, c *Column, rows int) arrow.Array {
	var validity *memory.Buffer
	nulls := 0
	if c.Null != nil {
		validity = memory.NewResizableBuffer(mem)
		validity.Resize(int(bitutil.BytesForBits(int64(rows))))
		bits := validity.Bytes()
		clear(bits)
		for i, null := range c.Null[:rows] {
			if null {
				nulls++
			} else {
				bitutil.SetBit(bits, i)
			}
		}
	}
	var buffers []*memory.Buffer
	switch c.Kind {
	case KindInt:
		buffers = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c.Ints[:rows]))}
	case KindFloat:
		buffers = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(c.Floats[:rows]))}
	case KindBool:
		values := memory.NewResizableBuffer(mem)
		values.Resize(int(bitutil.BytesForBits(int64(rows))))
		bits := values.Bytes()
		clear(bits)
		for i, v := range c.Bools[:rows] {
			if v {
				bitutil.SetBit(bits, i)
			}
		}
		buffers = []*memory.Buffer{validity, values}
		defer values.Release()
	case KindString:
		buffers = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.Offsets[:rows+1])),
			memory.NewBufferBytes(c.Data)}
	default: // only nulls: a string column of nulls
		offsets := make([]int32, rows+1)
		buffers = []*memory.Buffer{validity, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(offsets)), memory.NewBufferBytes(nil)}
	}
	if validity != nil {
		defer validity.Release()
	}
	data := array.NewData(typ, rows, buffers, nil, nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
