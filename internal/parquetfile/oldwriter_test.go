package parquetfile

// The writer this package had before it wrote through arrow-go's pqarrow:
// it builds one parquet.Value per value and hands them to parquet-go's
// column writers. It stays here, in a test file, so BenchmarkEncode can
// compare the two on the same records.

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// chunkRows is how many rows are converted before their values are handed to
// parquet-go: it bounds the scratch value buffers.
const chunkRows = 1024

// oldWriter writes record batches of one schema to one Parquet file.
type oldWriter struct {
	pw      *parquet.Writer
	columns []writer
	fields  []int
	leaves  []*leaf
	maxRows int64
	rows    int64 // rows in the current row group
	total   int64
}

// newOldWriter starts a Parquet file with the given schema on out. Every record
// written must have an Arrow schema that fits it (see Check).
func newOldWriter(out io.Writer, schema *parquet.Schema, arrowSchema *arrow.Schema, opts Options) (*oldWriter, error) {
	codec, err := Codec(opts.Compression)
	if err != nil {
		return nil, err
	}
	w := &oldWriter{maxRows: opts.RowGroupRows}
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
	const bits = 10
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

func (w *oldWriter) planColumns(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
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

// oldCheck reports whether records of arrowSchema can be written with schema.
func oldCheck(schema *parquet.Schema, arrowSchema *arrow.Schema) error {
	var w oldWriter
	return w.planColumns(schema, arrowSchema)
}

// Write appends the given rows of rec, in that order; rows == nil means all
// rows.
func (w *oldWriter) Write(rec arrow.RecordBatch, rows []int32) error {
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

func (w *oldWriter) convert(rec arrow.RecordBatch, rows []int32, start, end int) {
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

func (w *oldWriter) emit() error {
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
func (w *oldWriter) Rows() int64 { return w.total }

// Close writes the last row group and the footer. It does not close the
// underlying io.Writer.
func (w *oldWriter) Close() error {
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("close parquet writer: %w", err)
	}
	return nil
}

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
