package parquetfile

import (
	"bytes"
	"slices"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// stringDict is one dictionary of strings for a row group. pqarrow would
// hash every value into its own memo table, which allocates a closure per
// value (arrow-go 18.8); handed an Arrow dictionary array whose dictionary
// is the same for the whole row group, it writes the dictionary page once
// and the indices as they are. One Go map lookup per value does the hashing
// here, without allocating: the map's keys point into the Arrow buffers
// (arrow-go's String.Value aliases them), which the writer keeps until the
// row group is written.
type stringDict struct {
	index  map[string]int32
	values *array.StringBuilder
	// small holds the first smallDict values, in index order: while the
	// dictionary is no larger, a value is found by comparing it with each
	// (most of our dictionaries are a handful of service names, levels,
	// kinds, regions; a comparison of short strings costs less than
	// hashing one).
	small  [smallDict]string
	nsmall int
}

const smallDict = 8

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// add returns the index of k, adding it to the dictionary. With limit > 0
// it reports false instead of adding a value beyond the limit'th.
func (d *stringDict) add(k string, limit int) (int32, bool) {
	if d.index == nil {
		d.index = getIndex()
	}
	if d.values == nil {
		d.values = array.NewStringBuilder(memory.DefaultAllocator)
	}
	var (
		idx int32
		ok  bool
	)
	if n := len(d.index); n <= smallDict {
		for i, v := range d.small[:d.nsmall] {
			if v == k {
				return int32(i), true
			}
		}
	} else {
		idx, ok = d.index[k]
	}
	if !ok {
		if limit > 0 && len(d.index) >= limit {
			return 0, false
		}
		idx = int32(len(d.index))
		d.index[k] = idx
		d.values.Append(k)
		if d.nsmall < smallDict {
			d.small[d.nsmall] = k
			d.nsmall++
		}
	}
	return idx, true
}

// finish returns the dictionary of the values added.
func (d *stringDict) finish() *array.String {
	if d.values == nil {
		d.values = array.NewStringBuilder(memory.DefaultAllocator)
	}
	return d.values.NewStringArray()
}

// reset empties the dictionary for the next row group, keeping its map.
func (d *stringDict) reset() {
	if d.values != nil {
		d.values.Release()
		d.values = nil
	}
	clear(d.index)
	d.small, d.nsmall = [smallDict]string{}, 0
}

// release empties the dictionary and gives its map to indexes.
func (d *stringDict) release() {
	d.reset()
	if d.index != nil {
		indexes.Put(d.index)
		d.index = nil
	}
}

// indexes keeps the emptied maps of closed writers' dictionaries for the
// next ones: growing a map anew for every column of every file was most
// of the dictionaries' allocations.
var indexes sync.Pool

func getIndex() map[string]int32 {
	if m, ok := indexes.Get().(map[string]int32); ok {
		return m
	}
	return make(map[string]int32, 256)
}

// dictColumn dictionary-encodes one top-level string column for a row
// group before pqarrow sees it (see stringDict). The indices of all the
// row group's runs go into one array: pqarrow compares each chunk's
// dictionary with the one it took first and recomputes the chunk's
// referenced values for the statistics (a hash of every index through
// arrow's compute engine), so one chunk per row group instead of one per
// record saves that per record.
type dictColumn struct {
	name string
	// off: the first row group had mostly distinct values, so the column
	// is written without a dictionary.
	off bool
	// distinct: when the dictionary was given up, nearly every value seen
	// until then was new (uniqueShare), as in a column of ids.
	distinct bool

	values  stringDict
	indices []int32 // of every pending run, in order (0 for a null)
	valid   []byte  // validity bitmap of indices when nulls > 0
	nulls   int
	dict    *array.String
}

// build encodes the column's values of the pending runs. With limit > 0
// it gives up (returning false, and the column is then written without a
// dictionary) as soon as the dictionary holds more than limit values: a
// column of ids is found out after a few of its values, not after
// hashing every one. The values are read straight from the string
// arrays' offsets and bytes (arrow-go's String.Value and a builder's
// appends were a third of this).
func (d *dictColumn) build(runs []run, field int, limit int) bool {
	total := 0
	d.nulls = 0
	for _, r := range runs {
		total += int(r.end - r.start)
		if r.rec.Column(field).NullN() > 0 {
			d.nulls = -1 // counted below
		}
	}
	if d.indices == nil {
		d.indices = int32s.get()
	}
	d.indices = slices.Grow(d.indices[:0], total)[:total]
	hasNulls := d.nulls != 0
	if hasNulls {
		d.nulls = 0
		d.valid = append(d.valid[:0], make([]byte, bitutil.BytesForBits(int64(total)))...)
	}
	// Values come in runs (the resource and scope columns repeat for
	// every span of a resource): a value equal to the one before takes its
	// index without hashing.
	var last []byte
	lastIdx, at := int32(-1), 0
	for _, r := range runs {
		col := r.rec.Column(field).(*array.String)
		v, nullable := viewOf(col), col.NullN() > 0
		for i := int(r.start); i < int(r.end); i, at = i+1, at+1 {
			if nullable && col.IsNull(i) {
				d.indices[at] = 0
				d.nulls++
				continue
			}
			if hasNulls {
				bitutil.SetBit(d.valid, at)
			}
			k := v.at(i)
			if lastIdx >= 0 && bytes.Equal(k, last) {
				d.indices[at] = lastIdx
				continue
			}
			idx, ok := d.values.add(unsafe.String(unsafe.SliceData(k), len(k)), limit)
			if !ok {
				seen := at + 1 - d.nulls
				d.distinct = (limit+1)*100 >= seen*uniqueShare
				return false
			}
			last, lastIdx = k, idx
			d.indices[at] = idx
		}
	}
	d.dict = d.values.finish()
	return true
}

// uniqueShare is the percentage of new values among those a column's
// dictionary saw before giving up above which its values count as
// distinct (Options.LiteralPages).
const uniqueShare = 95

// dictLimit is the most distinct values a column's dictionary may take
// from the first row group of rows rows: each value must repeat about eight
// times or more (unless there are too few rows to tell). Below that a
// dictionary saves few bytes and costs CPU: arrow-go allocates twice per
// distinct value when it takes the dictionary in.
func dictLimit(rows int64) int {
	if rows < 256 {
		return 0
	}
	return int(rows / 8)
}

// array returns the dictionary array of the pending runs' values.
func (d *dictColumn) array() arrow.Array {
	var valid *memory.Buffer
	if d.nulls > 0 {
		valid = memory.NewBufferBytes(d.valid)
	}
	idx := memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(d.indices))
	data := array.NewDataWithDictionary(dictType, len(d.indices), []*memory.Buffer{valid, idx}, d.nulls, 0, d.dict.Data().(*array.Data))
	defer data.Release()
	return array.MakeFromData(data)
}

func (d *dictColumn) reset() {
	d.values.reset()
	d.indices = d.indices[:0]
	if d.dict != nil {
		d.dict.Release()
		d.dict = nil
	}
}

// release gives the column's index slice back to int32s once the file is
// written.
func (d *dictColumn) release() {
	int32s.put(d.indices)
	d.indices = nil
	d.values.release()
}
