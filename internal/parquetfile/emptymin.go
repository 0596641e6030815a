package parquetfile

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/bitutil"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// arrow-go 18.8 leaves the empty string out of the min/max statistics of
// a dictionary-encoded string chunk: pqarrow takes them from the
// dictionary values the chunk references, through
// (*metadata.ByteArrayStatistics).UpdateFromArrow, which skips values of
// length zero (as if they were nulls). A compacted measurement file
// whose host column held "", "hc" and "hd" said min "hc", in the column
// chunk, the page header and the column index: DuckDB found no row for
// host < 'ha', and iceberg-go, whose manifests take their bounds from
// these statistics, none where host is empty. Strings written without a
// dictionary go through UpdateFromArrowOffsets, which counts them.
//
// So when a dictionary column has statistics (Options.AllStatistics)
// and its row group's values include "", its chunk is written here:
// through pqarrow's WriteArrowToColumn with the levels WriteColumnChunked
// would give it, after its page statistics are set to the min (and max)
// "", which pqarrow's update then only widens. The file is byte for byte
// the one pqarrow writes when handed the chunk's plain strings, whose
// statistics count empty values (TestEmptyMinChangesOnlyStatistics).
// That is the way when pqarrow's internals are out of reach (or
// emptyMinSeeded is false), but pqarrow then hashes every value into its
// own dictionary again, allocating for each: 2-3x the encoding time of
// such columns and 390 000 allocations per row group of 131 072 rows
// instead of 5 600 (BenchmarkDictionaryWithEmptyStrings).
var emptyMinSeeded = true

// emptyMin reports whether dictionary column d's chunk of the row group
// needs its min seeded: it has statistics and its values include "".
func (w *Writer) emptyMin(d *dictColumn) bool {
	return w.dictStats && d.ints == nil && d.values.has(nil)
}

// writeEmptyMin writes the column's dictionary array of the row group to
// the next writer column returns, its page statistics seeded with "".
// nullable is the Arrow field's.
func (d *dictColumn) writeEmptyMin(ctx context.Context, column func() (file.ColumnChunkWriter, error), nullable bool) error {
	cw, err := column()
	if err != nil {
		return err
	}
	if st, ok := cw.PageStatistics().(*metadata.ByteArrayStatistics); ok {
		st.SetMinMax(pq.ByteArray{}, pq.ByteArray{})
	}
	var def []int16
	if cw.Descr().MaxDefinitionLevel() > 0 {
		def = d.defLevels()
	}
	arr := d.array()
	defer arr.Release()
	// pqarrow's path builder calls a leaf nullable only when it holds a
	// null.
	return pqarrow.WriteArrowToColumn(ctx, cw, arr, def, nil, nullable && d.nulls > 0)
}

// defLevels are the definition levels of the row group's values of a
// top-level optional column: 1, or 0 for a null.
func (d *dictColumn) defLevels() []int16 {
	if d.def == nil {
		d.def = int16s.get()
	}
	d.def = grow16(d.def, len(d.indices))
	if d.nulls == 0 {
		fill16(d.def, 1)
		return d.def
	}
	for i := range d.def {
		d.def[i] = 0
		if bitutil.BitIsSet(d.valid, i) {
			d.def[i] = 1
		}
	}
	return d.def
}

// has reports whether k is in the dictionary.
func (d *stringDict) has(k []byte) bool {
	if d.slots == nil {
		return false
	}
	head, tail := dictKey(k)
	n := uint32(len(k))
	mask := uint64(len(d.slots) - 1)
	for i := slotOf(dictHash(head, tail, n), len(d.slots)); d.slots[i].idx1 != 0; i = (i + 1) & mask {
		if s := &d.slots[i]; s.n == n && s.head == head && s.tail == tail && (n <= 16 || d.keys[s.idx1-1] == string(k)) {
			return true
		}
	}
	return false
}
