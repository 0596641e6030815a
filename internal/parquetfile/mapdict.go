package parquetfile

import (
	"bytes"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
)

// Which leaves of the top-level map<string, string> columns (the attribute
// maps and their type maps) get a dictionary: see mapDict.
const (
	mapDictNone = iota
	mapDictKeys
	mapDictKeysAndValues
)

// mapDict says which leaves of the map columns are dictionary-encoded
// (each still only where the file's first row group shows its values
// repeating, dictLimit). Keys repeat on every row; value columns mix
// repeated values (resource attributes, methods, routes, type tags) with
// a few unique ones (paths, request ids). Keys and values together cost
// the least CPU at 10 000 rows (BenchmarkEncode's new against
// new-mapdict-keys and new-mapdict-none: -10 to -15 % against either on
// otlp_traces and otlp_metrics), for files 1 % smaller (traces), 19 %
// smaller (metrics) or 8 % larger (logs, whose generated request ids
// repeat every 1000 rows, so their dictionary stays on and its indices
// compress worse than the PLAIN ids did).
var mapDict = mapDictKeysAndValues

// mapDictMinRows is the fewest rows a file's first row group needs for its
// map columns to get dictionaries. In smaller files the extra dictionary
// page per leaf and the hashing cost more than zstd saves on the smaller
// pages: BenchmarkEncode's new against new-mapdict-none, CPU per row on
// the OTLP tables, +10-20 % at 1000 rows, even at 2000, -5 to -25 % at
// 4000 and 10 000.
var mapDictMinRows = 4096

// mapDictColumn dictionary-encodes the keys and the values of one top-level
// map<string, string> column for a row group, with the dictionaries of
// stringDict, and hands pqarrow one map array for the whole row group whose
// key and value arrays are dictionary arrays (its offsets and validity are
// the runs' own, rebased). The Parquet schema does not change: the map's
// key and value columns are still BYTE_ARRAY strings, only their encoding
// is RLE_DICTIONARY instead of PLAIN.
type mapDictColumn struct {
	keyPath, valuePath string // Parquet column paths of the leaves
	mapType            *arrow.MapType
	keys, values       mapLeaf

	offsets []int32 // of the row group's rows, from 0
	valid   []byte  // validity bitmap when nulls > 0
	nulls   int
	levels  mapLevels // for writeDirect
}

// mapLeaf is the key or the value column of a map column for a row group:
// dictionary indices, or (when the dictionary is off) the values copied
// into one string array (plainOffsets, plainData).
type mapLeaf struct {
	off          bool
	dict         stringDict
	indices      []int32
	plainOffsets []int32
	plainData    []byte
}

// on reports whether either leaf is written with a dictionary (otherwise
// the column is written as the records hold it).
func (m *mapDictColumn) on() bool { return !m.keys.off || !m.values.off }

// build encodes the column's keys and values of the pending runs. In the
// first row group (first), a leaf whose values repeat too little
// (dictLimit of its entries) turns its dictionary off for the file.
func (m *mapDictColumn) build(runs []run, field int, first bool) {
	if !m.on() {
		return
	}
	rows := 0
	for _, r := range runs {
		rows += int(r.end - r.start)
	}
	if m.offsets == nil {
		m.offsets = int32s.get()
	}
	m.offsets = append(slices.Grow(m.offsets[:0], rows+1), 0)
	for _, r := range runs {
		arr := r.rec.Column(field).(*array.Map)
		offs := arr.Offsets()[arr.Data().Offset():]
		end := m.offsets[len(m.offsets)-1]
		for i := r.start; i < r.end; i++ {
			end += offs[i+1] - offs[i]
			m.offsets = append(m.offsets, end)
		}
	}
	entries := int64(m.offsets[len(m.offsets)-1])
	if first && (rows < mapDictMinRows || entries == 0) {
		// (maps that are empty in the first row group, as type maps of
		// string-only attributes are, would get an empty dictionary page)
		m.keys.off, m.values.off = true, true
		return
	}
	m.validity(runs, field, rows)
	limit := 0
	if first {
		limit = dictLimit(entries)
	}
	for child, leaf := range []*mapLeaf{&m.keys, &m.values} {
		if leaf.off {
			continue
		}
		if !leaf.encode(runs, field, child, int(entries), limit) {
			leaf.off = true
			leaf.dict.reset()
		}
	}
	if !m.on() {
		return
	}
	for child, leaf := range []*mapLeaf{&m.keys, &m.values} {
		if leaf.off {
			leaf.copy(runs, field, child, int(entries))
		}
	}
}

// validity counts the null maps of the runs and, if there are any, builds
// the row group's validity bitmap.
func (m *mapDictColumn) validity(runs []run, field int, rows int) {
	m.nulls = 0
	for _, r := range runs {
		col := r.rec.Column(field)
		if col.NullN() == 0 {
			continue
		}
		for i := r.start; i < r.end; i++ {
			if col.IsNull(int(i)) {
				m.nulls++
			}
		}
	}
	if m.nulls == 0 {
		return
	}
	m.valid = append(m.valid[:0], make([]byte, bitutil.BytesForBits(int64(rows)))...)
	row := 0
	for _, r := range runs {
		col := r.rec.Column(field)
		for i := r.start; i < r.end; i++ {
			if col.IsValid(int(i)) {
				bitutil.SetBit(m.valid, row)
			}
			row++
		}
	}
}

// leafOf is the keys (child 0) or the values (child 1) of a map array,
// indexed like its offsets: arrow-go's Keys and Items do not apply the
// entries struct's own offset, so it is returned to add.
func leafOf(arr *array.Map, child int) (*array.String, int32) {
	base := int32(arr.Data().Children()[0].Offset())
	if child == 0 {
		return arr.Keys().(*array.String), base
	}
	return arr.Items().(*array.String), base
}

// encode appends the indices of the leaf's values of the runs. Maps of
// consecutive rows tend to be alike: a resource's attributes repeat on
// every one of its spans, and spans of one kind carry the same keys. So a
// row whose entries are byte for byte those of the previous row's map
// takes its indices (one comparison of the row's bytes), and otherwise a
// value equal to the one at the same position of the previous row's map
// takes its index without hashing. With limit > 0 it gives up (false)
// once the dictionary holds more than limit values, or when steadyGrowth
// says it will.
func (l *mapLeaf) encode(runs []run, field, child, entries, limit int) bool {
	if l.indices == nil {
		l.indices = int32s.get()
	}
	l.indices = slices.Grow(l.indices[:0], entries)
	var (
		prev                       strView
		prevStart, prevLen, prevAt int
	)
	growth := newSteadyGrowth(limit, entries)
	for _, r := range runs {
		arr := r.rec.Column(field).(*array.Map)
		col, base := leafOf(arr, child)
		cur := viewOf(col)
		offs := arr.Offsets()[arr.Data().Offset():]
		for i := r.start; i < r.end; i++ {
			s, e := int(base+offs[i]), int(base+offs[i+1])
			if e == s {
				continue
			}
			at := len(l.indices)
			if e-s == prevLen && sameEntries(cur, s, prev, prevStart, prevLen) {
				l.indices = append(l.indices, l.indices[prevAt:prevAt+prevLen]...)
			} else {
				for j := s; j < e; j++ {
					v := cur.at(j)
					if p := j - s; p < prevLen && bytes.Equal(prev.at(prevStart+p), v) {
						l.indices = append(l.indices, l.indices[prevAt+p])
						continue
					}
					idx, ok := l.dict.add(v, limit)
					if !ok {
						return false
					}
					l.indices = append(l.indices, idx)
				}
			}
			prev, prevStart, prevLen, prevAt = cur, s, e-s, at
			if growth.passes(len(l.indices), l.dict.size()) {
				return false
			}
		}
	}
	return true
}

// strView is a string array's value offsets, indexed like the array, and
// its value bytes: the values as byte slices that alias the array.
type strView struct {
	offs []int32
	data []byte
}

func viewOf(a *array.String) strView {
	d := a.Data()
	v := strView{offs: arrow.Int32Traits.CastFromBytes(d.Buffers()[1].Bytes())[d.Offset():]}
	if b := d.Buffers()[2]; b != nil {
		v.data = b.Bytes()
	}
	return v
}

func (v strView) at(j int) []byte { return v.data[v.offs[j]:v.offs[j+1]] }

// sameEntries reports whether values [s, s+n) of v are those of values
// [ps, ps+n) of p: the same lengths and the same bytes.
func sameEntries(v strView, s int, p strView, ps, n int) bool {
	a, b := v.offs[s:s+n+1], p.offs[ps:ps+n+1]
	for k := 1; k <= n; k++ {
		if a[k]-a[0] != b[k]-b[0] {
			return false
		}
	}
	return bytes.Equal(v.data[a[0]:a[n]], p.data[b[0]:b[n]])
}

// copy gathers the leaf's values of the runs into one string array, for a
// leaf without dictionary in a map whose other leaf has one. A run's
// values are one range of its leaf array, so their bytes are copied at
// once and their offsets rebased (appending value by value was 3 % of the
// sidecar's CPU on OTLP traces and logs).
func (l *mapLeaf) copy(runs []run, field, child, entries int) {
	if l.plainOffsets == nil {
		l.plainOffsets, l.plainData = int32s.get(), bytePool.get()
	}
	offs := append(slices.Grow(l.plainOffsets[:0], entries+1), 0)
	data := slices.Grow(l.plainData[:0], leafBytes(runs, field, child))
	for _, r := range runs {
		arr := r.rec.Column(field).(*array.Map)
		col, base := leafOf(arr, child)
		v := viewOf(col)
		mapOffs := arr.Offsets()[arr.Data().Offset():]
		first, last := int(base+mapOffs[r.start]), int(base+mapOffs[r.end])
		lo, hi := v.offs[first], v.offs[last]
		shift := int32(len(data)) - lo
		for _, o := range v.offs[first+1 : last+1] {
			offs = append(offs, o+shift)
		}
		data = append(data, v.data[lo:hi]...)
	}
	l.plainOffsets, l.plainData = offs, data
}

// leafBytes is the size of the leaf's values of the runs.
func leafBytes(runs []run, field, child int) int {
	n := 0
	for _, r := range runs {
		arr := r.rec.Column(field).(*array.Map)
		col, base := leafOf(arr, child)
		offs, mapOffs := viewOf(col).offs, arr.Offsets()[arr.Data().Offset():]
		n += int(offs[base+mapOffs[r.end]] - offs[base+mapOffs[r.start]])
	}
	return n
}

// data is the leaf's array data for the row group.
func (l *mapLeaf) data() (arrow.DataType, arrow.ArrayData) {
	if l.off {
		buffers := []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(l.plainOffsets)), memory.NewBufferBytes(l.plainData)}
		return arrow.BinaryTypes.String, array.NewData(arrow.BinaryTypes.String, len(l.plainOffsets)-1, buffers, nil, 0, 0)
	}
	dict := l.dict.finish()
	defer dict.Release()
	idx := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(l.indices))
	return dictType, array.NewDataWithDictionary(dictType, len(l.indices), []*memory.Buffer{nil, idx}, 0, 0, dict.Data().(*array.Data))
}

// array returns the map array of the row group.
func (m *mapDictColumn) array() arrow.Array {
	keyType, keys := m.keys.data()
	defer keys.Release()
	valueType, values := m.values.data()
	defer values.Release()
	mt := arrow.MapOf(keyType, valueType)
	mt.SetItemNullable(m.mapType.ItemField().Nullable)
	entries := array.NewData(mt.Elem(), keys.Len(), []*memory.Buffer{nil}, []arrow.ArrayData{keys, values}, 0, 0)
	defer entries.Release()
	var valid *memory.Buffer
	if m.nulls > 0 {
		valid = memory.NewBufferBytes(m.valid)
	}
	offsets := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(m.offsets))
	data := array.NewData(mt, len(m.offsets)-1, []*memory.Buffer{valid, offsets}, []arrow.ArrayData{entries}, m.nulls, 0)
	defer data.Release()
	return array.MakeFromData(data)
}

// int32s keeps the index and offset slices of the map columns of closed
// writers for the next ones: a file of 10 000 spans fills 2 MB of them,
// a tenth of what its encoding allocates, and growing them anew for every
// file meant allocating, zeroing and copying them again.
var int32s slicePool[int32]

// bytePool keeps the value bytes of map leaves copied without a
// dictionary, as int32s keeps their offsets.
var bytePool slicePool[byte]

// slicePool keeps emptied slices of one element type for reuse.
type slicePool[T any] struct{ p sync.Pool }

func (sp *slicePool[T]) get() []T {
	if p, ok := sp.p.Get().(*[]T); ok {
		return (*p)[:0]
	}
	return nil
}

func (sp *slicePool[T]) put(s []T) {
	if cap(s) > 0 {
		sp.p.Put(&s)
	}
}

// release gives the column's slices back to int32s once the file is
// written (pqarrow holds no reference to them after that).
func (m *mapDictColumn) release() {
	int32s.put(m.offsets)
	int32s.put(m.keys.indices)
	int32s.put(m.values.indices)
	m.offsets, m.keys.indices, m.values.indices = nil, nil, nil
	for _, l := range []*mapLeaf{&m.keys, &m.values} {
		int32s.put(l.plainOffsets)
		bytePool.put(l.plainData)
		l.plainOffsets, l.plainData = nil, nil
	}
	m.keys.dict.release()
	m.values.dict.release()
	m.levels.release()
}

// reset empties the column for the next row group; the choices of the
// first row group stay.
func (m *mapDictColumn) reset() {
	for _, l := range []*mapLeaf{&m.keys, &m.values} {
		l.dict.reset()
		l.indices = l.indices[:0]
		l.plainOffsets, l.plainData = l.plainOffsets[:0], l.plainData[:0]
	}
}

// mapDictOf returns the mapDictColumn of a top-level Parquet MAP column
// whose keys and values are strings (Arrow type typ), nil for any other
// column or when mapDict is mapDictNone.
func mapDictOf(node parquet.Field, typ arrow.DataType) *mapDictColumn {
	mt, ok := typ.(*arrow.MapType)
	if !ok || mapDict == mapDictNone || mt.KeyType().ID() != arrow.STRING || mt.ItemType().ID() != arrow.STRING {
		return nil
	}
	prefix := node.Name() + "." + node.Fields()[0].Name() + "." // fit checked the key and value fields
	m := &mapDictColumn{keyPath: prefix + "key", valuePath: prefix + "value", mapType: mt}
	m.values.off = mapDict == mapDictKeys
	return m
}
