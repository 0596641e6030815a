package otlparrow_test

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// files collects emitted batches into one Parquet file per table, checking
// that every batch is within batch size and that nothing leaks.
type files struct {
	t       *testing.T
	mem     *memory.CheckedAllocator
	writers map[string]*parquetfile.Writer
	bufs    map[string]*bytes.Buffer
	sizes   map[string][]int64
}

func newFiles(t *testing.T) *files {
	return &files{t: t, mem: memory.NewCheckedAllocator(memory.NewGoAllocator()),
		writers: map[string]*parquetfile.Writer{}, bufs: map[string]*bytes.Buffer{}, sizes: map[string][]int64{}}
}

func (f *files) emit(tbl *schema.Table, rec arrow.RecordBatch) error {
	defer rec.Release()
	w := f.writers[tbl.Name]
	if w == nil {
		f.bufs[tbl.Name] = &bytes.Buffer{}
		var err error
		w, err = parquetfile.NewWriter(f.bufs[tbl.Name], tbl.Parquet, tbl.Arrow, parquetfile.Options{RowGroupRows: 7})
		require.NoError(f.t, err)
		f.writers[tbl.Name] = w
	}
	require.True(f.t, rec.Schema().Equal(tbl.Arrow), "batch schema is the table's")
	f.sizes[tbl.Name] = append(f.sizes[tbl.Name], rec.NumRows())
	return w.Write(rec, nil)
}

func read[T any](f *files, table string) []T {
	require.NoError(f.t, f.writers[table].Close())
	data := f.bufs[table].Bytes()
	rows, err := parquet.Read[T](bytes.NewReader(data), int64(len(data)))
	require.NoError(f.t, err)
	return rows
}

func TestRoundTripTraces(t *testing.T) {
	f := newFiles(t)
	c := otlparrow.NewTracesConverter(f.mem, 5)
	require.NoError(t, c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 6), f.emit))
	c.Release()
	assert.Equal(t, []int64{5, 5, 5, 5, 4}, f.sizes[schema.TableTraces], "cut every batch size rows")
	rows := read[schema.Span](f, schema.TableTraces)
	got, err := otlparrow.SpansToTraces(rows)
	require.NoError(t, err)
	f.mem.AssertSize(t, 0) // writers keep records until their row group is written
	// Times read back at the microsecond (ReadBack truncates them) ...
	otlparrowtest.AssertTracesEqual(t, otlparrowtest.Traces(otlparrowtest.ReadBack, 6), got)
	// ... durations exactly, in nanoseconds, negative ones included.
	var want []int64
	sent := otlparrowtest.Traces(otlparrowtest.Sent, 6)
	for _, rs := range sent.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				want = append(want, int64(sp.EndTimestamp())-int64(sp.StartTimestamp()))
			}
		}
	}
	require.Len(t, rows, len(want))
	for i, r := range rows {
		assert.Equal(t, want[i], r.DurationNs, "span %d", i)
		assert.NotEqual(t, want[i], (r.EndTime-r.Time)*1000, "span %d: the generator's times are not whole microseconds", i)
	}
}

func TestRoundTripLogsAndEvents(t *testing.T) {
	f := newFiles(t)
	c := otlparrow.NewLogsConverter(f.mem, 4)
	require.NoError(t, c.Convert(otlparrowtest.Logs(otlparrowtest.Sent, 9), f.emit))
	c.Release()

	want := otlparrowtest.Logs(otlparrowtest.ReadBack, 9)
	wantLogs, wantEvents := split(want)
	logs, err := otlparrow.LogRecordsToLogs(read[schema.LogRecord](f, schema.TableLogs))
	require.NoError(t, err)
	otlparrowtest.AssertLogsEqual(t, wantLogs, logs)
	events, err := otlparrow.LogRecordsToLogs(read[schema.LogRecord](f, schema.TableEvents))
	require.NoError(t, err)
	otlparrowtest.AssertLogsEqual(t, wantEvents, events)
	f.mem.AssertSize(t, 0)
	assert.Equal(t, 27, logs.LogRecordCount())
	assert.Equal(t, 9, events.LogRecordCount())
}

// split separates plain log records from event records, keeping the
// resource and scope structure.
func split(ld plog.Logs) (logs, events plog.Logs) {
	logs, events = plog.NewLogs(), plog.NewLogs()
	ld.CopyTo(logs)
	ld.CopyTo(events)
	keep := func(l plog.Logs, wantEvent bool) {
		l.ResourceLogs().RemoveIf(func(rl plog.ResourceLogs) bool {
			rl.ScopeLogs().RemoveIf(func(sl plog.ScopeLogs) bool {
				sl.LogRecords().RemoveIf(func(lr plog.LogRecord) bool { return (lr.EventName() != "") != wantEvent })
				return sl.LogRecords().Len() == 0
			})
			return rl.ScopeLogs().Len() == 0
		})
	}
	keep(logs, false)
	keep(events, true)
	return logs, events
}

func TestRoundTripMetrics(t *testing.T) {
	f := newFiles(t)
	c := otlparrow.NewMetricsConverter(f.mem, 1000)
	md := otlparrowtest.Metrics(otlparrowtest.Sent, 4)
	require.NoError(t, c.Convert(md, f.emit))
	c.Release()
	assert.Equal(t, []int64{int64(md.DataPointCount())}, f.sizes[schema.TableMetrics])
	got, err := otlparrow.PointsToMetrics(read[schema.MetricPoint](f, schema.TableMetrics))
	require.NoError(t, err)
	f.mem.AssertSize(t, 0)
	otlparrowtest.AssertMetricsEqual(t, otlparrowtest.Metrics(otlparrowtest.ReadBack, 4), got)
}

func TestConverterIsReusable(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	c := otlparrow.NewTracesConverter(mem, 1000)
	defer c.Release()
	for range 3 {
		var rows int64
		require.NoError(t, c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 2), func(_ *schema.Table, rec arrow.RecordBatch) error {
			rows += rec.NumRows()
			rec.Release()
			return nil
		}))
		assert.EqualValues(t, 8, rows)
	}
}
