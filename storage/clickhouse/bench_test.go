package clickhouse

import (
	"context"
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

// benchSegments are rows per insert: one WAL segment's rows of a table
// (the exporter's batches are 1000 rows; a segment holds many).
var benchSegments = []int{1000, 10_000, 100_000}

// realisticTraces returns n rows of realistic spans as 1000-row batches,
// the exporter's batch size.
func realisticTraces(b *testing.B, n int) []arrow.RecordBatch {
	var recs []arrow.RecordBatch
	c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000)
	defer c.Release()
	require.NoError(b, c.Convert(otlparrowtest.RealisticTraces(n), func(_ *schema.Table, rec arrow.RecordBatch) error {
		recs = append(recs, rec)
		return nil
	}))
	return recs
}

// BenchmarkSinkInsert inserts realistic spans into a real ClickHouse (on
// this machine, sharing its cores), one segment's rows per op, each with a
// fresh token. It reports rows/s, our CPU per row (building native
// columns, sending) and the server's CPU per row (parsing, sorting,
// compressing, writing parts, background merges during the run).
// BenchmarkParquetWrite encodes the same rows to Parquet, the other sink,
// for a side-by-side ratio.
func BenchmarkSinkInsert(b *testing.B) {
	srv := chtest.Start(b)
	s, err := New(Config{Addr: srv.Native, Logger: quiet})
	require.NoError(b, err)
	defer s.Close()
	tbl, err := storage.LookupTable(schema.TableTraces)
	require.NoError(b, err)
	for _, n := range benchSegments {
		recs := realisticTraces(b, n)
		b.Run(fmt.Sprintf("traces/rows=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			serverStart, err := srv.CPUTime()
			require.NoError(b, err)
			ourStart := benchcpu.Process()
			b.ResetTimer()
			for i := range b.N {
				w := storage.SinkWrite{Token: fmt.Sprintf("bench-%d-%d-%d", n, i, time.Now().UnixNano()), Database: "bench", Table: tbl, Records: recs, Rows: int64(n)}
				if err := s.Write(ctx, w); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			serverEnd, err := srv.CPUTime()
			require.NoError(b, err)
			rows := float64(n) * float64(b.N)
			b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(benchcpu.Process()-ourStart)/rows, "our-cpu-ns/row")
			b.ReportMetric(float64(serverEnd-serverStart)/rows, "server-cpu-ns/row")
		})
		for _, r := range recs {
			r.Release()
		}
	}
}

func BenchmarkParquetWrite(b *testing.B) {
	tbl, err := storage.LookupTable(schema.TableTraces)
	require.NoError(b, err)
	for _, n := range benchSegments {
		recs := realisticTraces(b, n)
		b.Run(fmt.Sprintf("traces/rows=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			ourStart := benchcpu.Process()
			for range b.N {
				w, err := parquetfile.NewWriter(io.Discard, tbl.Parquet, tbl.Arrow, parquetfile.Options{BloomColumns: tbl.BloomColumns})
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range recs {
					if err := w.Write(r, nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			rows := float64(n) * float64(b.N)
			b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(benchcpu.Process()-ourStart)/rows, "our-cpu-ns/row")
		})
		for _, r := range recs {
			r.Release()
		}
	}
}
