package parquetfile

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// intDict is stringDict's counterpart for an int64 column of few values
// (status codes, milliseconds, small counts): written plain, such a column
// costs zstd eight bytes a row to find what a dictionary index says in a
// few bits. Compaction chose the same columns by sampling
// (storage.lowCardinalityInts); the flush finds them as the string
// columns are found, and gives the dictionary up on the others
// (durations, ids) as early.
type intDict struct {
	slots  []intSlot // len is a power of two, at most half full
	values []int64   // in index order
}

// intSlot is one entry of intDict's table: idx+1 of v (0 marks an empty
// slot).
type intSlot struct {
	v    int64
	idx1 int32
}

var intDictType = &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.PrimitiveTypes.Int64}

// add returns the index of v, adding it to the dictionary. With limit > 0
// it reports false instead of adding a value beyond the limit'th.
func (d *intDict) add(v int64, limit int) (int32, bool) {
	if d.slots == nil {
		d.slots = tableOf(&intSlotTables)
	}
	mask := uint64(len(d.slots) - 1)
	i := slotOf(intHash(v), len(d.slots))
	for {
		s := &d.slots[i]
		if s.idx1 == 0 {
			break
		}
		if s.v == v {
			return s.idx1 - 1, true
		}
		i = (i + 1) & mask
	}
	if limit > 0 && len(d.values) >= limit {
		return 0, false
	}
	idx := int32(len(d.values))
	d.values = append(d.values, v)
	d.slots[i] = intSlot{v: v, idx1: idx + 1}
	if 2*len(d.values) > len(d.slots) {
		d.grow()
	}
	return idx, true
}

func intHash(v int64) uint64 { return mix(uint64(v)) }

// grow doubles the table and places every value again.
func (d *intDict) grow() {
	d.slots = growTable(d.slots, func(s *intSlot) uint64 { return intHash(s.v) }, func(s *intSlot) bool { return s.idx1 != 0 })
}

func (d *intDict) size() int { return len(d.values) }

// finish returns the dictionary of the values added.
func (d *intDict) finish() *array.Int64 {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(d.values, nil)
	return b.NewInt64Array()
}

// reset empties the dictionary for the next row group, keeping its table.
func (d *intDict) reset() {
	clear(d.slots)
	d.values = d.values[:0]
}

// release empties the dictionary and gives its table to intSlotTables.
func (d *intDict) release() {
	d.reset()
	keepTable(&intSlotTables, d.slots)
	d.slots = nil
}

// intSlotTables keeps closed writers' tables, as slotTables does.
var intSlotTables slicePool[intSlot]

// buildInts is build for an int64 column.
func (d *dictColumn) buildInts(runs []run, field int, limit int, hasNulls bool) bool {
	at, probe := 0, probeAt(limit)
	for _, r := range runs {
		col := r.rec.Column(field).(*array.Int64)
		vals, nullable := col.Int64Values(), col.NullN() > 0
		for i := int(r.start); i < int(r.end); i, at = i+1, at+1 {
			if nullable && col.IsNull(i) {
				d.indices[at] = 0
				d.nulls++
				continue
			}
			if hasNulls {
				bitutil.SetBit(d.valid, at)
			}
			idx, ok := d.ints.add(vals[i], limit)
			if !ok {
				return false
			}
			d.indices[at] = idx
			if probe > 0 && at+1-d.nulls >= probe {
				if mostlyNew(probe, d.ints.size()) {
					return false
				}
				probe = -1
			}
		}
	}
	d.dict = d.ints.finish()
	return true
}
