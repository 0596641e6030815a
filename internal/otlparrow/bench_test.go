package otlparrow_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
)

var benchSizes = []int{100, 1000, 10000}

func release(_ *schema.Table, rec arrow.RecordBatch) error {
	rec.Release()
	return nil
}

// BenchmarkConvert measures pdata -> Arrow with a reused converter, as the
// exporter runs it. allocs/op should not grow with rows.
func BenchmarkConvert(b *testing.B) {
	for _, n := range benchSizes {
		td, ld, md := otlparrowtest.RealisticTraces(n), otlparrowtest.RealisticLogs(n), otlparrowtest.RealisticMetrics(n)
		b.Run(fmt.Sprintf("traces/rows=%d", n), func(b *testing.B) {
			c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000)
			defer c.Release()
			benchRows(b, n, func() error { return c.Convert(td, release) })
		})
		b.Run(fmt.Sprintf("logs/rows=%d", n), func(b *testing.B) {
			c := otlparrow.NewLogsConverter(memory.DefaultAllocator, 1000)
			defer c.Release()
			benchRows(b, n, func() error { return c.Convert(ld, release) })
		})
		b.Run(fmt.Sprintf("metrics/rows=%d", n), func(b *testing.B) {
			c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 1000)
			defer c.Release()
			benchRows(b, n, func() error { return c.Convert(md, release) })
		})
	}
}

func benchRows(b *testing.B, n int, f func() error) {
	b.ReportAllocs()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkParquet measures Arrow -> Parquet (zstd) of one converted batch
// per op, as the sidecar's flush runs it.
func BenchmarkParquet(b *testing.B) {
	for _, n := range benchSizes {
		recs := map[*schema.Table]arrow.RecordBatch{}
		keep := func(t *schema.Table, rec arrow.RecordBatch) error {
			recs[t] = rec
			return nil
		}
		tc := otlparrow.NewTracesConverter(memory.DefaultAllocator, n)
		require.NoError(b, tc.Convert(otlparrowtest.RealisticTraces(n), keep))
		lc := otlparrow.NewLogsConverter(memory.DefaultAllocator, n)
		require.NoError(b, lc.Convert(otlparrowtest.RealisticLogs(n), keep))
		mc := otlparrow.NewMetricsConverter(memory.DefaultAllocator, n)
		require.NoError(b, mc.Convert(otlparrowtest.RealisticMetrics(n), keep))
		for _, t := range []*schema.Table{schema.Traces, schema.Logs, schema.Metrics} {
			rec := recs[t]
			b.Run(fmt.Sprintf("%s/rows=%d", t.Name, n), func(b *testing.B) {
				benchRows(b, n, func() error {
					w, err := parquetfile.NewWriter(io.Discard, t.Parquet, t.Arrow, parquetfile.Options{BloomColumns: t.BloomColumns})
					if err != nil {
						return err
					}
					if err := w.Write(rec, nil); err != nil {
						return err
					}
					return w.Close()
				})
			})
		}
		for _, r := range recs {
			r.Release()
		}
		tc.Release()
		lc.Release()
		mc.Release()
	}
}
