package otlparrow_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// batches keeps what a converter emits, checks every batch against its
// table's schema, and at the end of the test releases everything and checks
// that no Arrow memory is left.
type batches struct {
	t     *testing.T
	mem   *memory.CheckedAllocator
	recs  map[string][]arrow.RecordBatch
	order []string // "table:rows" of each batch, as emitted
}

func newBatches(t *testing.T) *batches {
	b := &batches{t: t, mem: memory.NewCheckedAllocator(memory.NewGoAllocator()), recs: map[string][]arrow.RecordBatch{}}
	t.Cleanup(func() {
		for _, recs := range b.recs {
			for _, r := range recs {
				r.Release()
			}
		}
		b.mem.AssertSize(t, 0)
	})
	return b
}

func (b *batches) emit(tbl *schema.Table, rec arrow.RecordBatch) error {
	b.recs[tbl.Name] = append(b.recs[tbl.Name], rec)
	b.order = append(b.order, fmt.Sprintf("%s:%d", tbl.Name, rec.NumRows()))
	require.True(b.t, rec.Schema().Equal(tbl.Arrow), "batch schema is the %s table's", tbl.Name)
	return nil
}

func (b *batches) sizes(table string) []int64 {
	var n []int64
	for _, r := range b.recs[table] {
		n = append(n, r.NumRows())
	}
	return n
}

// rows reads every batch of a table back into row structs, checking that
// every string in them is valid UTF-8.
func rows[T any](b *batches, table string) []T {
	b.t.Helper()
	var out []T
	for _, rec := range b.recs[table] {
		assert.Empty(b.t, otlparrowtest.InvalidUTF8(rec), "invalid UTF-8 in %s", table)
		r, err := otlparrowtest.Rows[T](rec)
		require.NoError(b.t, err)
		out = append(out, r...)
	}
	return out
}

func TestTracesThroughArrow(t *testing.T) {
	tests := []struct {
		name      string
		sent      ptrace.Traces
		want      ptrace.Traces
		batchSize int
		sizes     []int64
	}{
		{"every field", otlparrowtest.Traces(otlparrowtest.Sent, 6), otlparrowtest.Traces(otlparrowtest.ReadBack, 6), 5, []int64{5, 5, 5, 5, 4}},
		{"every field, one row per batch", otlparrowtest.Traces(otlparrowtest.Sent, 1), otlparrowtest.Traces(otlparrowtest.ReadBack, 1), 1, []int64{1, 1, 1, 1}},
		{"realistic, remainder batch", otlparrowtest.RealisticTraces(2500), otlparrowtest.RealisticTraces(2500), 1000, []int64{1000, 1000, 500}},
		{"realistic, exact multiple", otlparrowtest.RealisticTraces(2000), otlparrowtest.RealisticTraces(2000), 1000, []int64{1000, 1000}},
		{"batch larger than the data", otlparrowtest.RealisticTraces(10), otlparrowtest.RealisticTraces(10), 1000, []int64{10}},
		{"no spans", ptrace.NewTraces(), ptrace.NewTraces(), 1000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBatches(t)
			c := otlparrow.NewTracesConverter(b.mem, tt.batchSize)
			defer c.Release()
			require.NoError(t, c.Convert(tt.sent, b.emit))
			assert.Equal(t, tt.sizes, b.sizes(schema.TableTraces))
			got, err := otlparrow.SpansToTraces(rows[schema.Span](b, schema.TableTraces))
			require.NoError(t, err)
			otlparrowtest.AssertTracesEqual(t, tt.want, got)
		})
	}
}

// withEvents gives every n-th log record an event name.
func withEvents(ld plog.Logs, n int) plog.Logs {
	i := 0
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if i%n == 0 {
					lr.SetEventName("checkout.completed")
				}
				i++
			}
		}
	}
	return ld
}

func TestLogsThroughArrow(t *testing.T) {
	tests := []struct {
		name      string
		sent      plog.Logs
		want      plog.Logs
		batchSize int
		order     []string // batches emitted, in order
	}{
		{
			name: "every field", sent: otlparrowtest.Logs(otlparrowtest.Sent, 9), want: otlparrowtest.Logs(otlparrowtest.ReadBack, 9),
			batchSize: 4, order: []string{"logs:4", "logs:4", "events:4", "logs:4", "logs:4", "logs:4", "events:4", "logs:4", "logs:3", "events:1"},
		},
		{
			name: "each table cut at its own batch size", sent: withEvents(otlparrowtest.RealisticLogs(2500), 2), want: withEvents(otlparrowtest.RealisticLogs(2500), 2),
			batchSize: 1000, order: []string{"events:1000", "logs:1000", "logs:250", "events:250"},
		},
		{
			name: "no events", sent: otlparrowtest.RealisticLogs(2500), want: otlparrowtest.RealisticLogs(2500),
			batchSize: 1000, order: []string{"logs:1000", "logs:1000", "logs:500"},
		},
		{
			name: "only events", sent: withEvents(otlparrowtest.RealisticLogs(30), 1), want: withEvents(otlparrowtest.RealisticLogs(30), 1),
			batchSize: 1000, order: []string{"events:30"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBatches(t)
			c := otlparrow.NewLogsConverter(b.mem, tt.batchSize)
			defer c.Release()
			require.NoError(t, c.Convert(tt.sent, b.emit))
			assert.Equal(t, tt.order, b.order)

			wantLogs, wantEvents := split(tt.want)
			logs, err := otlparrow.LogRecordsToLogs(rows[schema.LogRecord](b, schema.TableLogs))
			require.NoError(t, err)
			otlparrowtest.AssertLogsEqual(t, wantLogs, logs)
			events, err := otlparrow.LogRecordsToLogs(rows[schema.LogRecord](b, schema.TableEvents))
			require.NoError(t, err)
			otlparrowtest.AssertLogsEqual(t, wantEvents, events)
		})
	}
}

func TestMetricsThroughArrow(t *testing.T) {
	tests := []struct {
		name      string
		sent      pmetric.Metrics
		want      pmetric.Metrics
		batchSize int
		sizes     []int64
	}{
		{"every field", otlparrowtest.Metrics(otlparrowtest.Sent, 4), otlparrowtest.Metrics(otlparrowtest.ReadBack, 4), 7, []int64{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 3}},
		{"every field, one batch", otlparrowtest.Metrics(otlparrowtest.Sent, 4), otlparrowtest.Metrics(otlparrowtest.ReadBack, 4), 1000, []int64{80}},
		{"realistic, remainder batch", otlparrowtest.RealisticMetrics(2500), otlparrowtest.RealisticMetrics(2500), 1000, []int64{1000, 1000, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBatches(t)
			c := otlparrow.NewMetricsConverter(b.mem, tt.batchSize)
			defer c.Release()
			require.NoError(t, c.Convert(tt.sent, b.emit))
			assert.Equal(t, tt.sizes, b.sizes(schema.TableMetrics))
			got, err := otlparrow.PointsToMetrics(rows[schema.MetricPoint](b, schema.TableMetrics))
			require.NoError(t, err)
			otlparrowtest.AssertMetricsEqual(t, tt.want, got)
		})
	}
}

// A converter goes back to the exporter's pool after a failed Convert: it
// must not keep rows that the next Convert would emit.
func TestConvertErrorLeavesNoRows(t *testing.T) {
	type convertFunc func(rows int, emit otlparrow.Emit) error
	tests := []struct {
		name         string
		newConverter func(mem memory.Allocator) (convertFunc, func())
	}{
		{"traces", func(mem memory.Allocator) (convertFunc, func()) {
			c := otlparrow.NewTracesConverter(mem, 3)
			return func(n int, emit otlparrow.Emit) error { return c.Convert(otlparrowtest.RealisticTraces(n), emit) }, c.Release
		}},
		{"logs and events", func(mem memory.Allocator) (convertFunc, func()) {
			c := otlparrow.NewLogsConverter(mem, 3)
			return func(n int, emit otlparrow.Emit) error {
				ld := otlparrowtest.RealisticLogs(n)
				if n > 2 {
					ld = withEvents(ld, 2)
				}
				return c.Convert(ld, emit)
			}, c.Release
		}},
		{"metrics", func(mem memory.Allocator) (convertFunc, func()) {
			c := otlparrow.NewMetricsConverter(mem, 3)
			return func(n int, emit otlparrow.Emit) error { return c.Convert(otlparrowtest.RealisticMetrics(n), emit) }, c.Release
		}},
	}
	errStop := errors.New("stop")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			convert, release := tt.newConverter(mem)
			defer release()

			require.ErrorIs(t, convert(10, func(_ *schema.Table, rec arrow.RecordBatch) error {
				rec.Release()
				return errStop
			}), errStop)
			var got []string
			require.NoError(t, convert(2, func(tbl *schema.Table, rec arrow.RecordBatch) error {
				got = append(got, fmt.Sprintf("%s:%d", tbl.Name, rec.NumRows()))
				rec.Release()
				return nil
			}))
			assert.Len(t, got, 1, "only the second call's rows: %v", got)
			assert.Contains(t, got[0], ":2")
		})
	}
}

// Resource and scope columns are appended per run of rows; a failed
// Convert must also drop the run it had not appended yet, here the events
// table's while the logs table's batch fails.
func TestConvertErrorDropsPendingResourceRows(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := otlparrow.NewLogsConverter(mem, 3)
	defer c.Release()
	errStop := errors.New("stop")
	// Rows 0 and 3 are events, the logs batch of rows 1, 2 and 4 fails.
	require.ErrorIs(t, c.Convert(withEvents(otlparrowtest.RealisticLogs(10), 3), func(tbl *schema.Table, rec arrow.RecordBatch) error {
		rec.Release()
		if tbl == schema.Logs {
			return errStop
		}
		return nil
	}), errStop)

	sent := withEvents(otlparrowtest.RealisticLogs(2), 1)
	var got []string
	require.NoError(t, c.Convert(sent, func(tbl *schema.Table, rec arrow.RecordBatch) error {
		defer rec.Release()
		got = append(got, fmt.Sprintf("%s:%d", tbl.Name, rec.NumRows()))
		service := rec.Column(tbl.FieldIndex("service_name")).(*array.String)
		assert.Equal(t, []string{"api-gateway", "auth-service"}, []string{service.Value(0), service.Value(1)})
		return nil
	}))
	assert.Equal(t, []string{"events:2"}, got)
}
