package otlparrow_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
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
