package parquetfile

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// directEmptyLevels: whether a top-level list or map column that holds no
// entry in a whole row group (a span's events and links, the attribute
// type maps of string-only attributes, a gauge point's histogram lists)
// is written with levels computed once for all of its leaves, instead of
// through pqarrow's WriteColumnChunked. pqarrow walks every row of every
// leaf with its generic path builder to find the same levels for each:
// on a flush of 93 000 spans of the load harness, with no events or
// links, the 15 leaves of those two lists were 15 % of the column
// writes. Every leaf of such a column, when the column is required (as
// every list and map of the tables is), has the same levels: 0 for
// repetition and 0 for definition (the LIST or MAP group present, its
// repeated group absent), one of each per row. The files are byte for byte the same
// (TestDirectEmptyLevelsWriteTheSameFiles).
var directEmptyLevels = true

// emptyColumn is a top-level list or map column whose leaves may be
// written with directEmptyLevels.
type emptyColumn struct {
	leaves []arrow.DataType // in Parquet column order
	// zeros are the row group's levels, repetition and definition, of
	// every leaf.
	zeros []int16
	// written counts the row groups the column was written so in.
	written int
}

// emptyColumnOf returns the emptyColumn of a top-level field, nil when it
// is neither a list nor a map, or when it is nullable (no table has such
// a column: its null rows would take other definition levels).
func emptyColumnOf(f arrow.Field) *emptyColumn {
	switch f.Type.ID() {
	case arrow.LIST, arrow.MAP:
		if !f.Nullable {
			return &emptyColumn{leaves: leafTypes(f.Type, nil)}
		}
	}
	return nil
}

// leafTypes appends the leaf types of typ in the order pqarrow writes
// its leaf columns (a map's key before its value, a struct's fields in
// order; fit checked that this is the Parquet schema's order).
func leafTypes(typ arrow.DataType, out []arrow.DataType) []arrow.DataType {
	switch t := typ.(type) {
	case *arrow.MapType:
		return leafTypes(t.ItemType(), leafTypes(t.KeyType(), out))
	case *arrow.ListType:
		return leafTypes(t.Elem(), out)
	case *arrow.StructType:
		for _, f := range t.Fields() {
			out = leafTypes(f.Type, out)
		}
		return out
	}
	return append(out, typ)
}

// empty reports whether no row of the runs' column holds an entry.
func empty(runs []run, field int) bool {
	for _, r := range runs {
		col := r.rec.Column(field).(array.ListLike)
		if start, _ := col.ValueOffsets(int(r.start)); start != endOffset(col, int(r.end)) {
			return false
		}
	}
	return true
}

// endOffset is where the values of the rows before row end end: the
// start of row end, or past the last row the end of the last one.
func endOffset(col array.ListLike, end int) int64 {
	if end < col.Len() {
		start, _ := col.ValueOffsets(end)
		return start
	}
	_, last := col.ValueOffsets(end - 1)
	return last
}

// build sizes the levels for the runs' rows: zero, every one.
func (e *emptyColumn) build(runs []run) {
	rows := 0
	for _, r := range runs {
		rows += int(r.end - r.start)
	}
	if e.zeros == nil {
		e.zeros = int16s.get()
	}
	e.zeros = grow16(e.zeros, rows)
	clear(e.zeros)
}

// write writes the column's leaves, each to the writer column returns
// next, with the levels of build and no value.
func (e *emptyColumn) write(ctx context.Context, column func() (file.ColumnChunkWriter, error)) error {
	e.written++
	for _, typ := range e.leaves {
		cw, err := column()
		if err != nil {
			return err
		}
		leaf := array.MakeArrayOfNull(memory.DefaultAllocator, typ, 0)
		err = pqarrow.WriteArrowToColumn(ctx, cw, leaf, e.zeros, e.zeros, false)
		leaf.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (e *emptyColumn) release() {
	int16s.put(e.zeros)
	e.zeros = nil
}
