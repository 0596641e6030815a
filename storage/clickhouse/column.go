package clickhouse

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ClickHouse/ch-go/proto"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// column turns Arrow arrays into one column of a ClickHouse native block.
// Each Arrow type maps to exactly one ClickHouse type, and the DDL is made
// from the same mapping, so a block always has the types of its table.
type column interface {
	proto.ColInput
	proto.StateEncoder
	proto.Preparable
	// appendArrow appends every row of a, whose type the column was made for.
	appendArrow(a arrow.Array)
	reset()
}

// newColumn returns the column of an Arrow field. lowCard makes strings
// LowCardinality: the contract's dictionary-encoded columns.
func newColumn(dt arrow.DataType, nullable, lowCard bool) (column, error) {
	if nullable && !canBeNullable(dt) {
		// ClickHouse has no nullable composite types; a null list or map
		// reads as an empty one, which is what the contract stores anyway.
		nullable = false
	}
	switch t := dt.(type) {
	case *arrow.StringType:
		if lowCard {
			return &lowCardStrings{nullable: nullable}, nil
		}
		return maybeNullable(&strings_{}, nullable), nil
	case *arrow.TimestampType:
		// DateTime64(9) whatever the unit (the contract's is µs): tables
		// created by earlier builds, which stored ns, are DateTime64(9),
		// and block types must match the table's exactly; one type keeps
		// every sink table alike. See docs/CLICKHOUSE.md.
		return maybeNullable(&fixed[int64]{typ: timestampType, scale: int64(t.Unit.Multiplier())}, nullable), nil
	case *arrow.Int64Type:
		return maybeNullable(&fixed[int64]{typ: "Int64"}, nullable), nil
	case *arrow.Int32Type:
		return maybeNullable(&fixed[int32]{typ: "Int32"}, nullable), nil
	case *arrow.Float64Type:
		return maybeNullable(&fixed[float64]{typ: "Float64"}, nullable), nil
	case *arrow.BooleanType:
		return maybeNullable(&bools{}, nullable), nil
	case *arrow.MapType:
		if t.KeyType().ID() != arrow.STRING || t.ItemType().ID() != arrow.STRING {
			return nil, fmt.Errorf("map %s: want map<string, string>", t)
		}
		entries := &tuple{fields: []column{&lowCardStrings{}, &strings_{}}, names: []string{"", ""}}
		return &arrayOf{elem: entries, mapType: true}, nil
	case *arrow.ListType:
		elem, err := newColumn(t.Elem(), t.ElemField().Nullable, false)
		if err != nil {
			return nil, err
		}
		return &arrayOf{elem: elem}, nil
	case *arrow.StructType:
		tp := &tuple{}
		for _, f := range t.Fields() {
			c, err := newColumn(f.Type, f.Nullable, false)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f.Name, err)
			}
			tp.fields = append(tp.fields, c)
			tp.names = append(tp.names, f.Name)
		}
		return tp, nil
	}
	return nil, fmt.Errorf("no ClickHouse type for Arrow %s", dt)
}

// typeName writes a tuple element's name as ClickHouse prints it in
// system.columns: bare when it is a plain identifier, quoted otherwise.
// Block and table types are compared as text, so they must agree.
func typeName(name string) string {
	if plainIdent.MatchString(name) {
		return name
	}
	return quote(name)
}

var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func canBeNullable(dt arrow.DataType) bool {
	switch dt.ID() {
	case arrow.LIST, arrow.MAP, arrow.STRUCT:
		return false
	}
	return true
}

func maybeNullable(c column, nullable bool) column {
	if !nullable {
		return c
	}
	return &nullableOf{inner: c}
}

// timestampType is the ClickHouse type of every timestamp column.
const timestampType = "DateTime64(9, 'UTC')"

// fixed is a column of fixed-width numbers: integers, floats, and
// DateTime64(9), which is an Int64 of nanoseconds on the wire (scale is
// the nanoseconds of one unit of the Arrow timestamps appended).
type fixed[T int64 | int32 | float64] struct {
	typ    proto.ColumnType
	scale  int64
	values []T
}

func (c *fixed[T]) Type() proto.ColumnType    { return c.typ }
func (c *fixed[T]) Rows() int                 { return len(c.values) }
func (c *fixed[T]) EncodeState(*proto.Buffer) {}
func (c *fixed[T]) Prepare() error            { return nil }
func (c *fixed[T]) reset()                    { c.values = c.values[:0] }

func (c *fixed[T]) appendArrow(a arrow.Array) {
	switch a := a.(type) {
	case *array.Int64:
		c.values = appendAs[T](c.values, a.Int64Values())
	case *array.Int32:
		c.values = appendAs[T](c.values, a.Int32Values())
	case *array.Float64:
		c.values = appendAs[T](c.values, a.Float64Values())
	case *array.Timestamp:
		for _, v := range a.TimestampValues() {
			c.values = append(c.values, T(int64(v)*c.scale))
		}
	default:
		panic(fmt.Sprintf("clickhouse: %s column got %s", c.typ, a.DataType()))
	}
}

func appendAs[T, S int64 | int32 | float64](dst []T, src []S) []T {
	for _, v := range src {
		dst = append(dst, T(v))
	}
	return dst
}

func (c *fixed[T]) EncodeColumn(b *proto.Buffer) {
	switch v := any(c.values).(type) {
	case []int64:
		proto.ColInt64(v).EncodeColumn(b)
	case []int32:
		proto.ColInt32(v).EncodeColumn(b)
	case []float64:
		proto.ColFloat64(v).EncodeColumn(b)
	}
}

func (c *fixed[T]) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }

// bools is Bool: one byte per row.
type bools struct{ values proto.ColUInt8 }

func (c *bools) Type() proto.ColumnType       { return "Bool" }
func (c *bools) Rows() int                    { return len(c.values) }
func (c *bools) EncodeState(*proto.Buffer)    {}
func (c *bools) Prepare() error               { return nil }
func (c *bools) reset()                       { c.values = c.values[:0] }
func (c *bools) EncodeColumn(b *proto.Buffer) { c.values.EncodeColumn(b) }
func (c *bools) WriteColumn(w *proto.Writer)  { w.ChainBuffer(c.EncodeColumn) }

func (c *bools) appendArrow(a arrow.Array) {
	v := a.(*array.Boolean)
	for i := range v.Len() {
		var x uint8
		if v.Value(i) {
			x = 1
		}
		c.values = append(c.values, x)
	}
}

// strings_ is String. (The underscore keeps the standard package's name.)
type strings_ struct{ values proto.ColStr }

func (c *strings_) Type() proto.ColumnType       { return "String" }
func (c *strings_) Rows() int                    { return c.values.Rows() }
func (c *strings_) EncodeState(*proto.Buffer)    {}
func (c *strings_) Prepare() error               { return nil }
func (c *strings_) reset()                       { c.values.Reset() }
func (c *strings_) EncodeColumn(b *proto.Buffer) { c.values.EncodeColumn(b) }
func (c *strings_) WriteColumn(w *proto.Writer)  { w.ChainBuffer(c.EncodeColumn) }

func (c *strings_) appendArrow(a arrow.Array) {
	v := a.(*array.String)
	for i := range v.Len() {
		c.values.Append(v.Value(i))
	}
}

// nullableOf is Nullable(T): a byte map of nulls, then the values (any value
// at a null row; ClickHouse ignores it).
type nullableOf struct {
	nulls proto.ColUInt8
	inner column
}

func (c *nullableOf) Type() proto.ColumnType { return "Nullable(" + c.inner.Type() + ")" }
func (c *nullableOf) Rows() int              { return len(c.nulls) }
func (c *nullableOf) EncodeState(b *proto.Buffer) {
	c.inner.EncodeState(b)
}
func (c *nullableOf) Prepare() error { return c.inner.Prepare() }
func (c *nullableOf) reset()         { c.nulls = c.nulls[:0]; c.inner.reset() }

func (c *nullableOf) appendArrow(a arrow.Array) {
	for i := range a.Len() {
		var n uint8
		if a.IsNull(i) {
			n = 1
		}
		c.nulls = append(c.nulls, n)
	}
	c.inner.appendArrow(a)
}

func (c *nullableOf) EncodeColumn(b *proto.Buffer) {
	c.nulls.EncodeColumn(b)
	c.inner.EncodeColumn(b)
}

func (c *nullableOf) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }

// arrayOf is Array(T), and Map(K, V), which travels as Array(Tuple(K, V)):
// cumulative end offsets, then every element as one column.
type arrayOf struct {
	offsets proto.ColUInt64
	elem    column
	mapType bool
}

func (c *arrayOf) Type() proto.ColumnType {
	if c.mapType {
		t := c.elem.(*tuple)
		return proto.ColumnType("Map(" + string(t.fields[0].Type()) + ", " + string(t.fields[1].Type()) + ")")
	}
	return "Array(" + c.elem.Type() + ")"
}
func (c *arrayOf) Rows() int                   { return len(c.offsets) }
func (c *arrayOf) EncodeState(b *proto.Buffer) { c.elem.EncodeState(b) }
func (c *arrayOf) Prepare() error              { return c.elem.Prepare() }
func (c *arrayOf) reset()                      { c.offsets = c.offsets[:0]; c.elem.reset() }

func (c *arrayOf) appendArrow(a arrow.Array) {
	l := a.(array.ListLike)
	begin, _ := l.ValueOffsets(0)
	var end int64
	base := uint64(c.elem.Rows())
	for i := range a.Len() {
		_, end = l.ValueOffsets(i)
		c.offsets = append(c.offsets, base+uint64(end-begin))
	}
	if a.Len() == 0 || end == begin {
		return
	}
	values := array.NewSlice(l.ListValues(), begin, end)
	defer values.Release()
	c.elem.appendArrow(values)
}

func (c *arrayOf) EncodeColumn(b *proto.Buffer) {
	c.offsets.EncodeColumn(b)
	c.elem.EncodeColumn(b)
}

func (c *arrayOf) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }

// tuple is Tuple(a A, b B, ...): each element column after the other.
type tuple struct {
	fields []column
	names  []string
}

func (c *tuple) Type() proto.ColumnType {
	parts := make([]string, len(c.fields))
	for i, f := range c.fields {
		parts[i] = string(f.Type())
		if c.names[i] != "" {
			parts[i] = typeName(c.names[i]) + " " + parts[i]
		}
	}
	return proto.ColumnType("Tuple(" + strings.Join(parts, ", ") + ")")
}

func (c *tuple) Rows() int { return c.fields[0].Rows() }

func (c *tuple) EncodeState(b *proto.Buffer) {
	for _, f := range c.fields {
		f.EncodeState(b)
	}
}

func (c *tuple) Prepare() error {
	for _, f := range c.fields {
		if err := f.Prepare(); err != nil {
			return err
		}
	}
	return nil
}

func (c *tuple) reset() {
	for _, f := range c.fields {
		f.reset()
	}
}

func (c *tuple) appendArrow(a arrow.Array) {
	s := a.(*array.Struct)
	for i, f := range c.fields {
		f.appendArrow(s.Field(i))
	}
}

func (c *tuple) EncodeColumn(b *proto.Buffer) {
	for _, f := range c.fields {
		f.EncodeColumn(b)
	}
}

func (c *tuple) WriteColumn(w *proto.Writer) { w.ChainBuffer(c.EncodeColumn) }
