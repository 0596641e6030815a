package arcmsgpack

import (
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TimeType is the Arrow type of the time column: what Parquet readers see
// as a UTC timestamp.
var TimeType = &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}

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

// Record builds the measurement's record batch.
func (m *Measurement) Record(mem memory.Allocator) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, m.Schema())
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	ts.Reserve(len(m.Time))
	for _, t := range m.Time {
		ts.UnsafeAppend(arrow.Timestamp(t))
	}
	for i, c := range m.sorted() {
		appendColumn(b.Field(i+1), c, len(m.Time))
	}
	return b.NewRecordBatch()
}

func appendColumn(fb array.Builder, c *Column, rows int) {
	valid := func(i int) bool { return c.Null == nil || !c.Null[i] }
	var validity []bool
	if c.Null != nil {
		validity = make([]bool, rows)
		for i := range validity {
			validity[i] = !c.Null[i]
		}
	}
	switch c.Kind {
	case KindInt:
		fb.(*array.Int64Builder).AppendValues(c.Ints, validity)
	case KindFloat:
		fb.(*array.Float64Builder).AppendValues(c.Floats, validity)
	case KindBool:
		fb.(*array.BooleanBuilder).AppendValues(c.Bools, validity)
	case KindString:
		sb := fb.(*array.StringBuilder)
		sb.Reserve(rows)
		for i, s := range c.Strs {
			if valid(i) {
				sb.Append(s)
			} else {
				sb.AppendNull()
			}
		}
	default:
		fb.AppendNulls(rows)
	}
}
