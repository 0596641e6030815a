package parquetfile

import (
	"context"
	"reflect"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// directMapLevels: whether the map columns built by mapDictColumn are
// written leaf by leaf with repetition and definition levels computed here,
// once per map for both its key and value columns, instead of through
// pqarrow's WriteColumnChunked. pqarrow derives the levels of every leaf
// separately with its generic path walker (per row: a level builder call,
// buffers grown from its package-global pool and zeroed on release): 12 %
// of the encoding CPU profile of the OTLP tables, and the garbage of those
// buffers most of their garbage collection. For a map of strings the
// levels are a fixed function of the offsets: computing them here cut the
// instructions per row at 10 000 rows by 8-10 % (cachegrind; files byte
// for byte the same; BenchmarkEncode's new-pqarrow-map-levels case is the
// previous way).
var directMapLevels = true

// fileWriterInternals reaches the row group writer and the column counter
// of a pqarrow.FileWriter, which it does not export: writing a column
// through pqarrow.WriteArrowToColumn with our own levels needs the row
// group's next column writer, and pqarrow must then skip the columns
// written. It returns ok == false if arrow-go's FileWriter no longer has
// these fields (a newer version): the writer then uses WriteColumnChunked
// for every column (TestDirectMapLevelsWriteTheSameFiles fails first).
func fileWriterInternals(fw *pqarrow.FileWriter) (rgw *file.RowGroupWriter, colIdx *int, ok bool) {
	v := reflect.ValueOf(fw).Elem()
	r, c := v.FieldByName("rgw"), v.FieldByName("colIdx")
	if !r.IsValid() || !c.IsValid() || r.Type() != reflect.TypeFor[file.RowGroupWriter]() || c.Kind() != reflect.Int {
		return nil, nil, false
	}
	return (*file.RowGroupWriter)(unsafe.Pointer(r.UnsafeAddr())), (*int)(unsafe.Pointer(c.UnsafeAddr())), true
}

// mapLevels are the repetition and definition levels of the leaves of one
// map<string, string> column for a row group; both leaves share them when
// the value is required.
type mapLevels struct {
	rep, def []int16
}

var int16s slicePool[int16]

// build computes the levels of rows with the given offsets (from 0) and
// validity (nil: all valid): a row with n entries gives n levels (the
// first with repetition level 0, the others 1, all at definition level
// entryDef), an empty map one level at entryDef-1, a null map one at
// entryDef-2.
func (l *mapLevels) build(offsets []int32, valid []byte, entryDef int16) {
	rows := len(offsets) - 1
	n := int(offsets[rows])
	for i := range rows {
		if offsets[i+1] == offsets[i] {
			n++
		}
	}
	if l.rep == nil {
		l.rep = int16s.get()
	}
	if l.def == nil {
		l.def = int16s.get()
	}
	l.rep = grow16(l.rep, n)
	l.def = grow16(l.def, n)
	rep, def := l.rep, l.def
	// Every level is an entry's but the first of a row: fill them so, a
	// doubling copy at a time, then mark rows' starts and empty maps.
	fill16(rep, 1)
	fill16(def, entryDef)
	at := 0
	for i := range rows {
		rep[at] = 0
		k := int(offsets[i+1] - offsets[i])
		if k == 0 {
			def[at] = entryDef - 1
			if valid != nil && !bitutil.BitIsSet(valid, i) {
				def[at] = entryDef - 2
			}
			k = 1
		}
		at += k
	}
}

// fill16 sets every element of s to v.
func fill16(s []int16, v int16) {
	if len(s) == 0 {
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

func grow16(s []int16, n int) []int16 {
	if cap(s) < n {
		return make([]int16, n)
	}
	return s[:n]
}

func (l *mapLevels) release() {
	int16s.put(l.rep)
	int16s.put(l.def)
	l.rep, l.def = nil, nil
}

// writeDirect writes the map column's key and value columns of the row
// group to the next two writers column returns, with levels computed from
// the row group's offsets.
func (m *mapDictColumn) writeDirect(ctx context.Context, column func() (file.ColumnChunkWriter, error), arr arrow.Array) error {
	entries := arr.Data().Children()[0]
	for child := range 2 {
		cw, err := column()
		if err != nil {
			return err
		}
		if child == 0 {
			// key: required, under the repeated key_value group
			m.levels.build(m.offsets, m.validOrNil(), cw.Descr().MaxDefinitionLevel())
		}
		leaf := array.MakeFromData(entries.Children()[child])
		err = pqarrow.WriteArrowToColumn(ctx, cw, leaf, m.levels.def, m.levels.rep, false)
		leaf.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func (m *mapDictColumn) validOrNil() []byte {
	if m.nulls == 0 {
		return nil
	}
	return m.valid
}

// direct reports whether the column can be written with writeDirect: a
// map whose value is required, so both leaves have the key's levels.
func (m *mapDictColumn) direct() bool {
	return directMapLevels && !m.mapType.ItemField().Nullable
}
