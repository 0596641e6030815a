package storagetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// WriteNanosecondFile writes rec as the builds before microseconds did:
// every timestamp, nested ones included, in nanoseconds
// (TIMESTAMP(NANOS, UTC)), extra ns past each microsecond, through pqarrow
// as their writer did, in the records' column order.
func WriteNanosecondFile(t testing.TB, path string, extra int64, recs ...arrow.RecordBatch) {
	t.Helper()
	require.NotEmpty(t, recs)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	var w *pqarrow.FileWriter
	for _, rec := range recs {
		ns := schema.TimesIn(rec, arrow.Nanosecond)
		for _, c := range ns.Columns() {
			addNanos(c.Data(), extra)
		}
		if w == nil {
			w, err = pqarrow.NewFileWriter(ns.Schema(), f, pq.NewWriterProperties(pq.WithCompression(compress.Codecs.Zstd)),
				pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)))
			require.NoError(t, err)
		}
		require.NoError(t, w.Write(ns))
		ns.Release()
	}
	require.NoError(t, w.Close())
}

// addNanos adds n to every timestamp value of d, in place (TimesIn's
// buffers are the caller's own).
func addNanos(d arrow.ArrayData, n int64) {
	if _, ok := d.DataType().(*arrow.TimestampType); ok {
		vals := arrow.Int64Traits.CastFromBytes(d.Buffers()[1].Bytes())
		for i := d.Offset(); i < d.Offset()+d.Len(); i++ {
			vals[i] += n
		}
		return
	}
	for _, c := range d.Children() {
		addNanos(c, n)
	}
}

// CopyAsNanoseconds writes a Parquet file of this build again as an
// earlier build would have written it (WriteNanosecondFile), to dst.
func CopyAsNanoseconds(t testing.TB, src, dst string, extra int64) {
	t.Helper()
	pf, err := file.OpenParquetFile(src, false)
	require.NoError(t, err)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	tbl, err := fr.ReadTable(context.Background())
	require.NoError(t, err)
	defer tbl.Release()
	tr := array.NewTableReader(tbl, tbl.NumRows())
	defer tr.Release()
	var recs []arrow.RecordBatch
	for tr.Next() {
		rec := tr.RecordBatch()
		rec.Retain()
		defer rec.Release()
		recs = append(recs, rec)
	}
	require.NoError(t, tr.Err())
	WriteNanosecondFile(t, dst, extra, recs...)
}
