package parquetfile

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// leaf collects the values of one Parquet leaf column for the rows being
// written; the slice is reused across chunks.
type leaf struct {
	column int
	values []parquet.Value
}

func (l *leaf) add(v parquet.Value, rep, def int16) {
	l.values = append(l.values, v.Level(int(rep), int(def), l.column))
}

// writer emits the Parquet values of one Arrow array element. rep is the
// repetition level of the first value emitted; def counts the optional and
// repeated ancestors that are present.
type writer interface {
	write(arr arrow.Array, i int, rep, def int16)
	// writeNull emits an absent value (null, or an empty list above) to every
	// leaf beneath.
	writeNull(rep, def int16)
}

type primitive struct {
	leaf     *leaf
	optional bool
	value    func(arr arrow.Array, i int) parquet.Value
}

func (p *primitive) write(arr arrow.Array, i int, rep, def int16) {
	if p.optional {
		if arr.IsNull(i) {
			p.leaf.add(parquet.Value{}, rep, def)
			return
		}
		def++
	}
	p.leaf.add(p.value(arr, i), rep, def)
}

func (p *primitive) writeNull(rep, def int16) { p.leaf.add(parquet.Value{}, rep, def) }

type group struct {
	optional bool
	children []writer
	// fields maps each child to its index in the Arrow struct.
	fields []int
}

func (g *group) write(arr arrow.Array, i int, rep, def int16) {
	if g.optional {
		if arr.IsNull(i) {
			g.writeNull(rep, def)
			return
		}
		def++
	}
	s := arr.(*array.Struct)
	for c, w := range g.children {
		w.write(s.Field(g.fields[c]), i, rep, def)
	}
}

func (g *group) writeNull(rep, def int16) {
	for _, w := range g.children {
		w.writeNull(rep, def)
	}
}

// repeated writes an Arrow list or map as a Parquet LIST or MAP: an outer
// group (maybe optional) around a repeated group around the element.
type repeated struct {
	optional bool
	// depth is the repetition level of the second and later elements.
	depth int16
	elem  writer
}

func (r *repeated) write(arr arrow.Array, i int, rep, def int16) {
	if r.optional {
		if arr.IsNull(i) {
			r.elem.writeNull(rep, def)
			return
		}
		def++
	}
	l := arr.(array.ListLike)
	start, end := l.ValueOffsets(i)
	if start == end {
		r.elem.writeNull(rep, def)
		return
	}
	values := listValues(arr)
	for j := start; j < end; j++ {
		r.elem.write(values, int(j), rep, def+1)
		rep = r.depth
	}
}

func (r *repeated) writeNull(rep, def int16) { r.elem.writeNull(rep, def) }

func listValues(arr arrow.Array) arrow.Array {
	switch a := arr.(type) {
	case *array.Map:
		return a.ListValues()
	case *array.List:
		return a.ListValues()
	}
	panic(fmt.Sprintf("parquetfile: %T is not a list", arr))
}

// plan builds the writer of one Parquet node fed by Arrow fields of type dt.
// depth is the number of repeated ancestors.
func plan(node parquet.Node, dt arrow.DataType, depth int16, leaves *[]*leaf) (writer, error) {
	if node.Leaf() {
		value, err := valueFunc(node, dt)
		if err != nil {
			return nil, err
		}
		l := &leaf{column: len(*leaves)}
		*leaves = append(*leaves, l)
		return &primitive{leaf: l, optional: node.Optional(), value: value}, nil
	}
	switch logicalType(node).(type) {
	case *format.ListType:
		lst, ok := dt.(*arrow.ListType)
		if !ok {
			return nil, fmt.Errorf("want an Arrow list for a Parquet LIST, got %s", dt)
		}
		elem, err := plan(node.Fields()[0].Fields()[0], lst.Elem(), depth+1, leaves)
		if err != nil {
			return nil, err
		}
		return &repeated{optional: node.Optional(), depth: depth + 1, elem: elem}, nil
	case *format.MapType:
		m, ok := dt.(*arrow.MapType)
		if !ok {
			return nil, fmt.Errorf("want an Arrow map for a Parquet MAP, got %s", dt)
		}
		elem, err := planGroup(node.Fields()[0], m.Elem().(*arrow.StructType), depth+1, leaves)
		if err != nil {
			return nil, err
		}
		elem.optional = false
		return &repeated{optional: node.Optional(), depth: depth + 1, elem: elem}, nil
	}
	st, ok := dt.(*arrow.StructType)
	if !ok {
		return nil, fmt.Errorf("want an Arrow struct for a Parquet group, got %s", dt)
	}
	return planGroup(node, st, depth, leaves)
}

func logicalType(node parquet.Node) format.LogicalTypeValue {
	if lt := node.Type().LogicalType(); lt != nil {
		return lt.Value
	}
	return nil
}

func planGroup(node parquet.Node, st *arrow.StructType, depth int16, leaves *[]*leaf) (*group, error) {
	g := &group{optional: node.Optional()}
	for _, f := range node.Fields() {
		idx, ok := st.FieldIdx(f.Name())
		if !ok {
			return nil, fmt.Errorf("no Arrow field for Parquet column %q", f.Name())
		}
		w, err := plan(f, st.Field(idx).Type, depth, leaves)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		g.children = append(g.children, w)
		g.fields = append(g.fields, idx)
	}
	return g, nil
}

func valueFunc(node parquet.Node, dt arrow.DataType) (func(arrow.Array, int) parquet.Value, error) {
	kind := node.Type().Kind()
	switch {
	case kind == parquet.ByteArray && (dt.ID() == arrow.STRING):
		return stringValue, nil
	case kind == parquet.ByteArray && dt.ID() == arrow.BINARY:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.ByteArrayValue(arr.(*array.Binary).Value(i))
		}, nil
	case kind == parquet.Int64 && dt.ID() == arrow.INT64:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.Int64Value(arr.(*array.Int64).Value(i))
		}, nil
	case kind == parquet.Int64 && dt.ID() == arrow.TIMESTAMP:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.Int64Value(int64(arr.(*array.Timestamp).Value(i)))
		}, nil
	case kind == parquet.Int32 && dt.ID() == arrow.INT32:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.Int32Value(arr.(*array.Int32).Value(i))
		}, nil
	case kind == parquet.Double && dt.ID() == arrow.FLOAT64:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.DoubleValue(arr.(*array.Float64).Value(i))
		}, nil
	case kind == parquet.Boolean && dt.ID() == arrow.BOOL:
		return func(arr arrow.Array, i int) parquet.Value {
			return parquet.BooleanValue(arr.(*array.Boolean).Value(i))
		}, nil
	}
	return nil, fmt.Errorf("no conversion from Arrow %s to Parquet %s", dt, node.Type())
}

// stringValue references the Arrow buffer without copying: parquet-go copies
// the bytes into its column buffer when the value is written.
func stringValue(arr arrow.Array, i int) parquet.Value {
	s := arr.(*array.String).Value(i)
	return parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(s), len(s)))
}
