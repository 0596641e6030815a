package parquetfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// parallelFile writes recs as the flush does, in row groups of 2000 rows
// (the last one smaller, the second starting inside a record) with a row
// subset among the records, with the columns encoded on workers
// goroutines (1: one after the other, as before parallel encoding).
func parallelFile(t *testing.T, tt benchTable, recs []arrow.RecordBatch, out io.Writer, workers int) (*parquetfile.Writer, error) {
	t.Helper()
	defer parquetfile.SetEncodeWorkers(parquetfile.SetEncodeWorkers(workers))
	w, err := parquetfile.NewWriter(out, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, ExpectedRows: 5000, RowGroupRows: 2000, LiteralPages: true})
	require.NoError(t, err)
	for i, rec := range recs {
		rows := []int32(nil)
		if i == 1 {
			rows = []int32{0, 1, 2, 500, 501, 999}
		}
		if err := w.Write(rec, rows); err != nil {
			return w, err
		}
	}
	return w, w.Close()
}

// A row group's columns encoded on several goroutines make the file the
// columns written one after the other make, byte for byte (pages, their
// encodings and statistics, dictionary pages, page index, bloom filters,
// footer), for every table, with map dictionaries and without; and
// parquet-go reads every row of it back.
func TestParallelColumnsWriteTheSameFiles(t *testing.T) {
	for _, mapDicts := range []bool{false, true} {
		if mapDicts {
			defer parquetfile.SetMapDictMinRows(parquetfile.SetMapDictMinRows(0))
		}
		for _, tt := range benchTables() {
			t.Run(fmt.Sprintf("%s/map-dictionaries=%v", tt.name, mapDicts), func(t *testing.T) {
				recs := tt.batches(t, 5000)
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				var serial bytes.Buffer
				w, err := parallelFile(t, tt, recs, &serial, 1)
				require.NoError(t, err)
				require.Zero(t, w.ParallelRowGroups())
				for _, workers := range []int{2, 3, 4} {
					var par bytes.Buffer
					w, err := parallelFile(t, tt, recs, &par, workers)
					require.NoError(t, err)
					assert.Equal(t, 3, w.ParallelRowGroups(), "row groups encoded in parallel")
					assert.True(t, bytes.Equal(serial.Bytes(), par.Bytes()), "%d workers: the file differs from the serial one", workers)
				}
				f, err := parquet.OpenFile(bytes.NewReader(serial.Bytes()), int64(serial.Len()))
				require.NoError(t, err)
				assert.Equal(t, int64(4006), f.NumRows())
				assert.Len(t, f.RowGroups(), 3)
			})
		}
	}
}

// A column whose encoding fails fails the file with its error, naming the
// column, whichever column it is and however many workers encode: every
// worker stops (goleak checks that none is left), and the writer returns
// the error from then on instead of finishing a file without the column.
func TestParallelColumnsEncodeError(t *testing.T) {
	tt := benchTables()[0] // otlp_traces: maps, lists, dictionaries
	recs := tt.batches(t, 5000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	injected := errors.New("injected")
	fields := tt.arrow.Fields()
	for _, column := range []string{fields[0].Name, fields[len(fields)/2].Name, fields[len(fields)-1].Name} {
		for _, workers := range []int{1, 2, 4} {
			t.Run(fmt.Sprintf("%s/workers=%d", column, workers), func(t *testing.T) {
				defer parquetfile.SetColumnFault(parquetfile.SetColumnFault(func(c string) error {
					if c == column {
						return injected
					}
					return nil
				}))
				w, err := parallelFile(t, tt, recs, io.Discard, workers)
				require.ErrorIs(t, err, injected)
				assert.Contains(t, err.Error(), fmt.Sprintf("%q", column))
				assert.ErrorIs(t, w.Write(recs[0], nil), injected, "a write after the failure")
				assert.ErrorIs(t, w.Close(), injected, "closing after the failure")
			})
		}
	}
}

// failingWriter fails every write from the n-th byte on.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errDiskFull
	}
	f.n -= len(p)
	return len(p), nil
}

// A file whose output fails while the columns are written in order fails
// with the output's error, and no worker is left behind.
func TestParallelColumnsOutputError(t *testing.T) {
	tt := benchTables()[0]
	recs := tt.batches(t, 5000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var whole countWriter
	_, err := parallelFile(t, tt, recs, &whole, 2)
	require.NoError(t, err)
	for _, at := range []int64{10, whole.n / 3, whole.n - 100} {
		t.Run(fmt.Sprintf("at=%d", at), func(t *testing.T) {
			_, err := parallelFile(t, tt, recs, &failingWriter{n: int(at)}, 2)
			require.ErrorIs(t, err, errDiskFull)
		})
	}
}

// A column whose values end on a page's end (a float column without a
// dictionary, 8 bytes a value, in a row group of 131072 rows: 1 MiB)
// gets no empty page from the worker that flushes the last pages.
func TestParallelColumnsPageEnd(t *testing.T) {
	tt := benchTables()[6]
	require.Equal(t, "arc_logs_new", tt.name)
	recs := tt.batches(t, parquetfile.DefaultRowGroupRows+1000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	file := func(workers int) []byte {
		defer parquetfile.SetEncodeWorkers(parquetfile.SetEncodeWorkers(workers))
		var buf bytes.Buffer
		w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{BloomColumns: tt.bloom, LiteralPages: true})
		require.NoError(t, err)
		for _, rec := range recs {
			require.NoError(t, w.Write(rec, nil))
		}
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	serial := file(1)
	assert.True(t, bytes.Equal(serial, file(2)), "the file differs from the serial one")
	f, err := parquet.OpenFile(bytes.NewReader(serial), int64(len(serial)))
	require.NoError(t, err)
	pages := f.OffsetIndexes()
	require.NotEmpty(t, pages)
	// The float column's first row group: exactly one full page.
	col, ok := f.Schema().Lookup("response_time_ms")
	require.True(t, ok)
	assert.Len(t, pages[col.ColumnIndex].PageLocations, 1, "pages of response_time_ms in the first row group")
}

// With EncodeWorkers as the flush sets it (not forced), the row groups of
// parallelMinRows rows or more are encoded in parallel and a smaller last
// one, written by Close, one column after the other: the file is still the
// serial one, byte for byte, whether the bloom filters are sized for the
// rows expected or adaptive.
func TestParallelColumnsThenSerialLastRowGroup(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("parallel encoding needs 2 CPUs")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, tt := range benchTables() {
		for _, expected := range []int64{0, 11000} {
			t.Run(fmt.Sprintf("%s/expected-rows=%d", tt.name, expected), func(t *testing.T) {
				recs := tt.batches(t, 11000)
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				file := func(workers int) ([]byte, int) {
					var buf bytes.Buffer
					w, err := parquetfile.NewWriter(&buf, tt.parquet, tt.arrow, parquetfile.Options{
						BloomColumns: tt.bloom, ExpectedRows: expected, RowGroupRows: 5000, LiteralPages: true, EncodeWorkers: workers,
					})
					require.NoError(t, err)
					for _, rec := range recs {
						require.NoError(t, w.Write(rec, nil))
					}
					require.NoError(t, w.Close())
					return buf.Bytes(), w.ParallelRowGroups()
				}
				serial, n := file(1)
				require.Zero(t, n)
				par, n := file(2)
				assert.Equal(t, 2, n, "row groups encoded in parallel")
				assert.True(t, bytes.Equal(serial, par), "the file differs from the serial one")
				f, err := parquet.OpenFile(bytes.NewReader(par), int64(len(par)))
				require.NoError(t, err)
				assert.Equal(t, int64(11000), f.NumRows())
				assert.Len(t, f.RowGroups(), 3)
			})
		}
	}
}

// Where pqarrow's write context is out of reach (an arrow-go that renamed
// it), the columns are written one after the other: the file is the
// serial one, not a failed flush.
func TestParallelColumnsWithoutWriteContext(t *testing.T) {
	tt := benchTables()[0]
	recs := tt.batches(t, 5000)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	var serial bytes.Buffer
	_, err := parallelFile(t, tt, recs, &serial, 1)
	require.NoError(t, err)
	defer parquetfile.HideWriteContext()()
	for _, workers := range []int{2, 4} {
		var par bytes.Buffer
		w, err := parallelFile(t, tt, recs, &par, workers)
		require.NoError(t, err, "%d workers", workers)
		assert.Zero(t, w.ParallelRowGroups(), "row groups encoded in parallel")
		assert.True(t, bytes.Equal(serial.Bytes(), par.Bytes()), "%d workers: the file differs from the serial one", workers)
	}
}
