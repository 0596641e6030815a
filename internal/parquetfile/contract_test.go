package parquetfile_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// The writer changed, the files did not: for every table, a file of the
// new writer has the schema (column order, logical types, repetition, root
// name) and the rows, value by value with their levels, of the per-value
// parquet-go writer it replaced, read back by parquet-go. Row subsets
// (records spanning hours) included.
func TestSameFilesAsTheOldWriter(t *testing.T) {
	for _, tt := range benchTables() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.batches(t, 3000)
			defer func() {
				for _, r := range recs {
					r.Release()
				}
			}()
			scattered := []int32{0, 1, 2, 3, 10, 11, 500, 7, 999} // gathered
			var runs []int32                                      // sliced
			for i := range int32(300) {
				runs = append(runs, 100+i, 700+i)
			}
			slices.Sort(runs)
			write := func(newWriter bool) []byte {
				var buf bytes.Buffer
				opts := parquetfile.Options{BloomColumns: tt.bloom, RowGroupRows: 1200}
				var w interface {
					Write(arrow.RecordBatch, []int32) error
					Close() error
				}
				var err error
				if newWriter {
					w, err = parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, opts)
				} else {
					w, err = parquetfile.NewOldWriter(&buf, tt.parquet, tt.arrow, opts)
				}
				require.NoError(t, err)
				for _, rec := range recs {
					require.NoError(t, w.Write(rec, nil))
				}
				require.NoError(t, w.Write(recs[0], scattered))
				require.NoError(t, w.Write(recs[1], runs))
				require.NoError(t, w.Close())
				return buf.Bytes()
			}
			oldSchema, oldRows := readAll(t, write(false))
			newSchema, newRows := readAll(t, write(true))
			assert.Equal(t, oldSchema.String(), newSchema.String())
			assert.Equal(t, oldSchema.Name(), newSchema.Name())
			require.Len(t, newRows, len(oldRows))
			for i := range oldRows {
				if !oldRows[i].Equal(newRows[i]) {
					t.Fatalf("row %d differs:\nold %v\nnew %v", i, oldRows[i], newRows[i])
				}
			}
		})
	}
}

func readAll(t *testing.T, data []byte) (*parquet.Schema, []parquet.Row) {
	f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	var out []parquet.Row
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 100)
		for {
			n, err := rows.ReadRows(buf)
			for _, r := range buf[:n] {
				out = append(out, r.Clone())
			}
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
		}
		require.NoError(t, rows.Close())
	}
	return f.Schema(), out
}
