package parquetfile

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// writeEmptyStrings writes rec into a file with every column's
// statistics (as compaction does) in row groups of rowGroup rows, its
// columns encoded on workers goroutines.
func writeEmptyStrings(t *testing.T, rec arrow.RecordBatch, rowGroup int64, workers int) []byte {
	t.Helper()
	defer func(old int) { forcedWorkers = old }(forcedWorkers)
	forcedWorkers = workers
	ps, err := tableschema.Measurement("m", rec.Schema())
	require.NoError(t, err)
	var out bytes.Buffer
	w, err := NewWriter(&out, ps, rec.Schema(), Options{AllStatistics: true, RowGroupRows: rowGroup})
	require.NoError(t, err)
	require.NoError(t, w.Write(rec, nil))
	require.NoError(t, w.Close())
	return out.Bytes()
}

// TestEmptyMinChangesOnlyStatistics: a dictionary string column whose
// values include "" (host also nulls) has the min "" in every row group,
// page and column index, written serially or on several goroutines;
// its pages are dictionary-encoded, and the file is byte for byte the one
// pqarrow writes when handed the plain strings (whose statistics count
// empty strings), so the seeded min changed nothing else.
func TestEmptyMinChangesOnlyStatistics(t *testing.T) {
	for _, rows := range []int{1000, 20_000} {
		t.Run(fmt.Sprint(rows), func(t *testing.T) {
			rec := emptyStringsRecord(t, rows, 4)
			defer rec.Release()
			seeded := writeEmptyStrings(t, rec, 8192, 1)
			for _, workers := range []int{2, 3} {
				assert.True(t, bytes.Equal(seeded, writeEmptyStrings(t, rec, 8192, workers)), "%d workers: the file differs from the serial one", workers)
			}
			emptyMinSeeded = false
			plain := writeEmptyStrings(t, rec, 8192, 1)
			emptyMinSeeded = true
			assert.True(t, bytes.Equal(seeded, plain), "the file differs from pqarrow's from plain strings")

			pf, err := file.NewParquetReader(bytes.NewReader(seeded))
			require.NoError(t, err)
			defer pf.Close()
			for _, col := range []string{"host", "region", "status_message"} {
				idx := pf.MetaData().Schema.ColumnIndexByName(col)
				require.GreaterOrEqual(t, idx, 0, col)
				for g := range pf.NumRowGroups() {
					cc, err := pf.MetaData().RowGroup(g).ColumnChunk(idx)
					require.NoError(t, err)
					assert.Contains(t, fmt.Sprint(cc.Encodings()), "RLE_DICTIONARY", "%s in row group %d", col, g)
					stats, err := cc.Statistics()
					require.NoError(t, err)
					require.True(t, stats.HasMinMax(), "%s in row group %d has a min and max", col, g)
					st := stats.(*metadata.ByteArrayStatistics)
					assert.Equal(t, "", string(st.Min()), "min of %s in row group %d", col, g)
					assert.Equal(t, fmt.Sprintf("value-%s-9", map[string]string{"host": "1", "region": "2", "status_message": "3"}[col]), string(st.Max()), "max of %s in row group %d", col, g)
					rg, err := pf.GetPageIndexReader().RowGroup(g)
					require.NoError(t, err)
					ci, err := rg.GetColumnIndex(idx)
					require.NoError(t, err)
					require.NotNil(t, ci, "%s has a column index", col)
					require.Len(t, ci.GetMinValues(), 1, "pages of %s", col)
					assert.Equal(t, "", string(ci.GetMinValues()[0]), "page min of %s in row group %d", col, g)
					assert.False(t, ci.GetNullPages()[0], "page of %s in row group %d all null", col, g)
				}
			}
		})
	}
}
