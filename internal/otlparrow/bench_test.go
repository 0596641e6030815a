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

// The BenchmarkConvert* benchmarks measure pdata -> Arrow with a reused
// converter, as the exporter runs it: one batch of batchSize realistic rows
// per op. allocs/op stays flat as the batch grows (builders are reserved
// from the previous batch's sizes, text is rendered into scratch buffers);
// what is left is arrow-go's per-array bookkeeping, about one allocation per
// column buffer.
func BenchmarkConvertTraces(b *testing.B) {
	for _, n := range benchSizes {
		td := otlparrowtest.RealisticTraces(n)
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			c := otlparrow.NewTracesConverter(memory.DefaultAllocator, n)
			defer c.Release()
			benchRows(b, n, func() error { return c.Convert(td, release) })
		})
	}
}

func BenchmarkConvertLogs(b *testing.B) {
	for _, n := range benchSizes {
		ld := otlparrowtest.RealisticLogs(n)
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			c := otlparrow.NewLogsConverter(memory.DefaultAllocator, n)
			defer c.Release()
			benchRows(b, n, func() error { return c.Convert(ld, release) })
		})
	}
}

func BenchmarkConvertMetrics(b *testing.B) {
	for _, n := range benchSizes {
		md := otlparrowtest.RealisticMetrics(n)
		b.Run(fmt.Sprintf("batch=%d", n), func(b *testing.B) {
			c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, n)
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
