package parquetfile_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// Encoding allocates per batch, per column and per page, never per value:
// a file of one batch of ten times the rows costs about the allocations of
// a file of one batch, and each further batch a bounded number per column.
// The per-value writer this package had, or pqarrow hashing dictionary
// strings itself (a closure per value), fail the first check by thousands.
func TestAllocationsDoNotGrowWithRows(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations of Parquet encoding")
	}
	// Both file sizes with the same encodings: map dictionaries, which
	// files below mapDictMinRows rows do without, in both.
	defer parquetfile.SetMapDictMinRows(parquetfile.SetMapDictMinRows(0))
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			var dictValues int64
			small := oneRecord(t, tt, 1000)
			defer small.Release()
			large := oneRecord(t, tt, 10000)
			defer large.Release()
			// arrow-go allocates twice per distinct value when it takes a
			// dictionary in (PutDictionary): per value of a dictionary,
			// not per value written. A file's count leaves those out, so
			// that a dictionary the larger file keeps and the smaller one
			// turns off (dictLimit) does not count as growth.
			file := func(recs ...arrow.RecordBatch) func() {
				return func() {
					w, err := parquetfile.NewWriter(io.Discard, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 1000, LiteralPages: true})
					require.NoError(t, err)
					for _, rec := range recs {
						require.NoError(t, w.Write(rec, nil))
					}
					require.NoError(t, w.Close())
					dictValues = w.DictionaryValues()
				}
			}
			allocs := func(recs ...arrow.RecordBatch) float64 {
				n := testing.AllocsPerRun(3, file(recs...))
				return n - float64(2*dictValues)
			}
			one := allocs(small)
			tenfold := allocs(large)
			eleven := allocs(small, small, small, small, small, small, small, small, small, small, small)
			perBatch := (eleven - one) / 10
			columns := len(tt.parquet.Columns())
			t.Logf("allocs: %.0f for a file of 1000 rows, %.0f for 10000 rows in one batch, %.0f per further batch (%d leaf columns)",
				one, tenfold, perBatch, columns)
			// Pages and buffers grow with rows: a few per column. arrow-go's
			// DELTA_BINARY_PACKED encoder allocates once per miniblock of
			// 32 values (the byte of its bit width), and so for the lengths
			// of DELTA_LENGTH_BYTE_ARRAY (ids): those columns may grow by
			// that much, and no more.
			miniblocks := float64(deltaColumns(t, tt, large) * (10000 - 1000) / 32)
			assert.Less(t, tenfold-one, 0.1*one+float64(8*columns)+miniblocks, "allocations grow with the rows of a batch")
			// A further record costs pqarrow a chunk per column; handing it
			// a dictionary chunk per record as well (arrow compute's Unique
			// and Take for its statistics) was twice this on the flat tables.
			assert.Less(t, perBatch, float64(80*columns), "allocations per batch")
		})
	}
}

// oneRecord is the records of tt for n rows, concatenated into one.
func oneRecord(t *testing.T, tt benchTable, n int) arrow.RecordBatch {
	recs := tt.batches(t, n)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	cols := make([]arrow.Array, len(tt.arrow.Fields()))
	for c := range cols {
		parts := make([]arrow.Array, len(recs))
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		col, err := array.Concatenate(parts, memory.DefaultAllocator)
		require.NoError(t, err)
		defer col.Release()
		cols[c] = col
	}
	return array.NewRecordBatch(tt.arrow, cols, int64(n))
}

// deltaColumns counts the columns of a file of rec encoded
// DELTA_BINARY_PACKED or DELTA_LENGTH_BYTE_ARRAY.
func deltaColumns(t *testing.T, tt benchTable, rec arrow.RecordBatch) int {
	var buf bytes.Buffer
	w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 1000, LiteralPages: true})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	require.NoError(t, err)
	n := 0
	for _, c := range f.Metadata().RowGroups[0].Columns {
		if slices.ContainsFunc(c.MetaData.Encoding, func(e format.Encoding) bool {
			return e == format.DeltaBinaryPacked || e == format.DeltaLengthByteArray
		}) {
			n++
		}
	}
	return n
}
