package parquetfile

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
}

var dictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}

// add returns the index of k, adding it to the dictionary. With limit > 0
// it reports false instead of adding a value beyond the limit'th.
func (d *stringDict) add(k string, limit int) (int32, bool) {
	if d.index == nil {
		d.index = make(map[string]int32, 256)
	}
	if d.values == nil {
		d.values = array.NewStringBuilder(memory.DefaultAllocator)
	}
	idx, ok := d.index[k]
	if !ok {
		if limit > 0 && len(d.index) >= limit {
			return 0, false
		}
		idx = int32(len(d.index))
		d.index[k] = idx
		d.values.Append(k)
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

	values  stringDict
	indices *array.Int32Builder // of every pending run, in order
	dict    *array.String
}

// build encodes the column's values of the pending runs. With limit > 0
// it gives up (returning false, and the column is then written without a
// dictionary) as soon as the dictionary holds more than limit values: a
// column of ids is found out after a few of its values, not after
// hashing every one.
func (d *dictColumn) build(runs []run, field int, limit int) bool {
	if d.indices == nil {
		d.indices = array.NewInt32Builder(memory.DefaultAllocator)
	}
	b := d.indices
	total := 0
	for _, r := range runs {
		total += int(r.end - r.start)
	}
	b.Reserve(total)
	// Values come in runs (the resource and scope columns repeat for
	// every span of a resource): a value equal to the one before takes its
	// index without hashing.
	last, lastIdx := "", int32(-1)
	for _, r := range runs {
		col := r.rec.Column(field).(*array.String)
		for i := r.start; i < r.end; i++ {
			if col.IsNull(int(i)) {
				b.UnsafeAppendBoolToBitmap(false)
				continue
			}
			k := col.Value(int(i))
			if lastIdx >= 0 && k == last {
				b.UnsafeAppend(lastIdx)
				continue
			}
			idx, ok := d.values.add(k, limit)
			if !ok {
				return false
			}
			last, lastIdx = k, idx
			b.UnsafeAppend(idx)
		}
	}
	d.dict = d.values.finish()
	return true
}

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
	idx := d.indices.NewInt32Array()
	defer idx.Release()
	return array.NewDictionaryArray(dictType, idx, d.dict)
}

func (d *dictColumn) reset() {
	d.values.reset()
	if d.indices != nil {
		d.indices.Release()
		d.indices = nil
	}
	if d.dict != nil {
		d.dict.Release()
		d.dict = nil
	}
}
