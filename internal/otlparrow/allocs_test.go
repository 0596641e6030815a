package otlparrow_test

import (
	"io"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// A reused converter allocates per batch, not per row: ten times the rows in
// one batch cost about the same allocations. The every-field data covers
// the paths realistic data does not take (maps, arrays, bytes, invalid
// UTF-8, events, links, exemplars, every metric type).
func TestAllocationsDoNotGrowWithRows(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations of 10 conversions per case")
	}
	tests := []struct {
		name    string
		convert func(scale int) func() // returns one conversion of scale units
	}{
		{"realistic traces", func(n int) func() {
			c, td := otlparrow.NewTracesConverter(memory.DefaultAllocator, 100_000), otlparrowtest.RealisticTraces(100*n)
			return func() { _ = c.Convert(td, release) }
		}},
		{"realistic logs", func(n int) func() {
			c, ld := otlparrow.NewLogsConverter(memory.DefaultAllocator, 100_000), otlparrowtest.RealisticLogs(100*n)
			return func() { _ = c.Convert(ld, release) }
		}},
		{"realistic metrics", func(n int) func() {
			c, md := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 100_000), otlparrowtest.RealisticMetrics(100*n)
			return func() { _ = c.Convert(md, release) }
		}},
		{"every-field traces", func(n int) func() {
			c, td := otlparrow.NewTracesConverter(memory.DefaultAllocator, 100_000), otlparrowtest.Traces(otlparrowtest.Sent, 5*n)
			return func() { _ = c.Convert(td, release) }
		}},
		{"every-field logs", func(n int) func() {
			c, ld := otlparrow.NewLogsConverter(memory.DefaultAllocator, 100_000), otlparrowtest.Logs(otlparrowtest.Sent, 5*n)
			return func() { _ = c.Convert(ld, release) }
		}},
		{"every-field metrics", func(n int) func() {
			c, md := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 100_000), otlparrowtest.Metrics(otlparrowtest.Sent, 5*n)
			return func() { _ = c.Convert(md, release) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			small := testing.AllocsPerRun(10, tt.convert(1))
			large := testing.AllocsPerRun(10, tt.convert(10))
			t.Logf("allocs per conversion: %.0f at 1x rows, %.0f at 10x rows", small, large)
			assert.LessOrEqual(t, large, small*1.02+5, "allocations grow with rows")
		})
	}
}

// Encoding to Parquet allocates per batch and per page, not per row: the
// marginal allocations of one more 1000-row batch written to an open file
// stay far below its row count.
func TestParquetAllocationsPerBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("counts allocations of Parquet encoding")
	}
	for _, tt := range []struct {
		name  string
		table *schema.Table
		batch func() arrow.RecordBatch
	}{
		{"traces", schema.Traces, func() arrow.RecordBatch { return convertOne(t, schema.Traces, otlparrowtest.RealisticTraces(1000)) }},
		{"logs", schema.Logs, func() arrow.RecordBatch { return convertOne(t, schema.Logs, otlparrowtest.RealisticLogs(1000)) }},
		{"metrics", schema.Metrics, func() arrow.RecordBatch { return convertOne(t, schema.Metrics, otlparrowtest.RealisticMetrics(1000)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := tt.batch()
			defer rec.Release()
			write := func(batches int) func() {
				return func() {
					w, err := parquetfile.NewWriter(io.Discard, tt.table.Parquet, tt.table.Arrow, parquetfile.Options{BloomColumns: tt.table.BloomColumns})
					require.NoError(t, err)
					for range batches {
						require.NoError(t, w.Write(rec, nil))
					}
					require.NoError(t, w.Close())
				}
			}
			one := testing.AllocsPerRun(3, write(1))
			eleven := testing.AllocsPerRun(3, write(11))
			perBatch := (eleven - one) / 10
			t.Logf("allocs: %.0f for a file of one batch, %.0f per further 1000-row batch", one, perBatch)
			// Per column, page and batch, never per row (a value-level
			// allocation costs 1000 per column): the writer hands every
			// batch to arrow-go column by column, some tens of allocations
			// each. The race detector's builds count a few more, so the
			// bound leaves room; parquetfile's TestAllocationsDoNotGrowWithRows
			// checks the growth with rows itself.
			assert.Less(t, perBatch, 100.0*float64(len(tt.table.Parquet.Columns())), "allocations grow with rows")
		})
	}
}

// convertOne converts telemetry into one record of the table.
func convertOne[T interface {
	ptrace.Traces | plog.Logs | pmetric.Metrics
}](t *testing.T, table *schema.Table, data T) arrow.RecordBatch {
	t.Helper()
	var out arrow.RecordBatch
	keep := func(tb *schema.Table, rec arrow.RecordBatch) error {
		if tb == table && out == nil {
			rec.Retain()
			out = rec
		}
		return nil
	}
	var err error
	switch d := any(data).(type) {
	case ptrace.Traces:
		c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 100_000)
		defer c.Release()
		err = c.Convert(d, keep)
	case plog.Logs:
		c := otlparrow.NewLogsConverter(memory.DefaultAllocator, 100_000)
		defer c.Release()
		err = c.Convert(d, keep)
	case pmetric.Metrics:
		c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 100_000)
		defer c.Release()
		err = c.Convert(d, keep)
	}
	require.NoError(t, err)
	require.NotNil(t, out)
	return out
}

// A reused converter whose records are released reuses their buffers: a
// conversion allocates a small fraction of the bytes its batches hold
// (arrow-go's array and data objects), not a new set of column buffers.
func TestReleasedBuffersAreReused(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the bytes of 20 conversions per signal")
	}
	for _, tt := range []struct {
		name    string
		convert func() func(otlparrow.Emit) error
	}{
		{"traces", func() func(otlparrow.Emit) error {
			c, td := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000), otlparrowtest.RealisticTraces(1000)
			return func(emit otlparrow.Emit) error { return c.Convert(td, emit) }
		}},
		{"logs", func() func(otlparrow.Emit) error {
			c, ld := otlparrow.NewLogsConverter(memory.DefaultAllocator, 1000), otlparrowtest.RealisticLogs(1000)
			return func(emit otlparrow.Emit) error { return c.Convert(ld, emit) }
		}},
		{"metrics", func() func(otlparrow.Emit) error {
			c, md := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 1000), otlparrowtest.RealisticMetrics(1000)
			return func(emit otlparrow.Emit) error { return c.Convert(md, emit) }
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			convert, held := tt.convert(), 0
			once := func() {
				require.NoError(t, convert(func(_ *schema.Table, rec arrow.RecordBatch) error {
					held = 0
					for _, col := range rec.Columns() {
						held += bufferBytes(col.Data())
					}
					rec.Release()
					return nil
				}))
			}
			once() // sizes the columns
			once() // fills the recyclers
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for range 20 {
				once()
			}
			runtime.ReadMemStats(&after)
			perBatch := float64(after.TotalAlloc-before.TotalAlloc) / 20
			t.Logf("%.0f bytes allocated per batch holding %d bytes of buffers", perBatch, held)
			assert.Less(t, perBatch, float64(held)/4, "column buffers are allocated anew")
		})
	}
}

func bufferBytes(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	for _, c := range d.Children() {
		n += bufferBytes(c)
	}
	return n
}
