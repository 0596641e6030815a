package storage

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// tinyMerge makes every record batch its own sorted run, spills them in
// batches of a few rows and merges at most three at a time, so that a
// test of a few hundred rows goes through every path of the merge: spills,
// merge passes into longer runs, chunks that span several batches.
var tinyMerge = mergeLimits{runBytes: 1, spillBatchRows: 7, mergeChunkRows: 50, maxFanIn: 3}

// sensorBatch is a measurement batch of n rows at random times in t0's
// hour, with nulls in every nullable column type.
func sensorBatch(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcNanos},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	hour := t0.Truncate(time.Hour)
	for i := range n {
		at := hour.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at.UnixNano()))
		appendOrNull(b.Field(1), i%5 == 0, func() { b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("host-%d", rng.IntN(4))) })
		appendOrNull(b.Field(2), i%4 == 1, func() { b.Field(2).(*array.Float64Builder).Append(rng.Float64()) })
		appendOrNull(b.Field(3), i%3 == 2, func() { b.Field(3).(*array.Int64Builder).Append(rng.Int64()) })
		appendOrNull(b.Field(4), i%6 == 3, func() { b.Field(4).(*array.BooleanBuilder).Append(i%2 == 0) })
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("sensor", rec.Schema())
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec, storagetest.IPC(t, rec)
}

func appendOrNull(b array.Builder, null bool, value func()) {
	if null {
		b.AppendNull()
	} else {
		value()
	}
}

// spanBatch is the every-field traces of the generator (events, links,
// attribute maps, two services) at random times in t0's hour.
func spanBatch(t *testing.T, rng *rand.Rand) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	td := otlparrowtest.Traces(otlparrowtest.Sent, 12)
	hour := t0.Truncate(time.Hour)
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				at := hour.Add(time.Duration(rng.Int64N(int64(time.Hour))))
				s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
				s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Millisecond)))
			}
		}
	}
	c := otlparrow.NewTracesConverter(memory.NewGoAllocator(), 1<<20)
	defer c.Release()
	var rec arrow.RecordBatch
	require.NoError(t, c.Convert(td, func(_ *schema.Table, r arrow.RecordBatch) error {
		require.Nil(t, rec, "one batch")
		r.Retain()
		rec = r
		return nil
	}))
	tbl, err := LookupTable(schema.TableTraces)
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec, storagetest.IPC(t, rec)
}

// tableRows reads every row of a table's Parquet files as text (one
// string per row, every column) with its sort key.
type textRow struct {
	key  []string // the sort columns' values, comparable as text
	text string
}

func tableRows(t *testing.T, dir string, keys []string) []textRow {
	t.Helper()
	var out []textRow
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, parquetExt) {
			return err
		}
		return readBatches(path, memory.DefaultAllocator, func(rec arrow.RecordBatch) error {
			sch := rec.Schema()
			for i := range int(rec.NumRows()) {
				var row textRow
				var cols []string
				for c, f := range sch.Fields() {
					cols = append(cols, f.Name+"="+rec.Column(c).ValueStr(i))
				}
				slices.Sort(cols) // files of one table may order columns differently
				for _, k := range keys {
					col := rec.Column(sch.FieldIndices(k)[0])
					v := col.ValueStr(i)
					if ts, ok := col.(*array.Timestamp); ok && ts.IsValid(i) {
						v = fmt.Sprintf("%020d", ts.Value(i)) // text order is time order
					}
					row.key = append(row.key, v)
				}
				row.text = strings.Join(cols, "|")
				out = append(out, row)
			}
			return nil
		})
	}))
	return out
}

func TestCompactSortsAcrossSpilledRuns(t *testing.T) {
	for _, tt := range []struct {
		name  string
		table string
		keys  []string
		batch func(*testing.T, *rand.Rand) (*Table, arrow.RecordBatch, []byte)
	}{
		{"measurement with nulls", "sensor", []string{"time"}, func(t *testing.T, rng *rand.Rand) (*Table, arrow.RecordBatch, []byte) {
			return sensorBatch(t, rng, 40)
		}},
		{"spans with events, links and maps", schema.TableTraces, []string{schema.ColServiceName, schema.ColTime}, spanBatch},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, CompactSort: true})
			require.NoError(t, err)
			s.mergeLimits = tinyMerge
			rng := rand.New(rand.NewPCG(1, 2))
			ctx := context.Background()
			for range 5 { // five files of two batches each
				for range 2 {
					tbl, rec, payload := tt.batch(t, rng)
					require.NoError(t, s.Append(ctx, NoDedup, "default", tbl, payload, rec))
					rec.Release()
				}
				require.NoError(t, s.Flush())
			}
			tableDir := filepath.Join(dir, "default", tt.table)
			before := tableRows(t, tableDir, tt.keys)

			st, err := s.Compact(ctx, 0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			assert.Equal(t, 5, st.FilesIn)
			assert.Equal(t, 1, st.FilesOut)
			after := tableRows(t, tableDir, tt.keys)
			assert.True(t, slices.IsSortedFunc(after, func(a, b textRow) int { return slices.Compare(a.key, b.key) }),
				"rows ordered by %v", tt.keys)
			text := func(rows []textRow) []string {
				out := make([]string, len(rows))
				for i, r := range rows {
					out[i] = r.text
				}
				slices.Sort(out)
				return out
			}
			assert.Equal(t, text(before), text(after), "the same rows, every column, none lost or doubled")
			tmp, err := os.ReadDir(filepath.Join(dir, systemDirName, tmpDirName))
			require.NoError(t, err)
			assert.Empty(t, tmp, "no sorted run left behind")
		})
	}
}

// TestCompactWithoutSortKeepsFileOrder: with sorting off the merged file
// holds the files' rows in file order.
func TestCompactWithoutSortKeepsFileOrder(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	for _, p := range []string{"c", "a", "b"} {
		appendBatch(t, s, p, t0, t0.Add(-time.Minute))
		require.NoError(t, s.Flush())
	}
	_, err = s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	merged := partitionFiles(t, dir, closedHour)
	require.Len(t, merged, 1)
	rows, err := parquet.ReadFile[schema.LogRecord](filepath.Join(dir, "default", "logs", closedHour, merged[0]))
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		got = append(got, r.Message)
	}
	assert.Equal(t, []string{"c-0", "c-1", "a-0", "a-1", "b-0", "b-1"}, got)
}

// TestCompactedFilesHaveStatisticsOnEveryColumn: flushed files leave the
// dictionary columns without min/max (parquetfile's dictStatistics); the
// compacted files are sorted by them, so they carry them for pruning.
func TestCompactedFilesHaveStatisticsOnEveryColumn(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, CompactSort: true})
	require.NoError(t, err)
	threeFlushes(t, s)
	_, err = s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	merged := partitionFiles(t, dir, closedHour)
	require.Len(t, merged, 1)
	pf, err := file.OpenParquetFile(filepath.Join(dir, "default", "logs", closedHour, merged[0]), false)
	require.NoError(t, err)
	defer pf.Close()
	rg := pf.MetaData().RowGroup(0)
	for _, name := range []string{schema.ColServiceName, schema.ColTime, "level"} {
		idx := pf.MetaData().Schema.ColumnIndexByName(name)
		require.GreaterOrEqual(t, idx, 0, name)
		cc, err := rg.ColumnChunk(idx)
		require.NoError(t, err)
		ok, err := cc.StatsSet()
		require.NoError(t, err)
		assert.True(t, ok, "column %s has min/max statistics", name)
	}
}

// TestCompactMergesFilesOfAnOlderShapeRowByRow: files whose columns the
// table's schema no longer describes are still merged (parquet-go, row by
// row, unsorted), not left behind or refused.
func TestCompactMergesFilesOfAnOlderShapeRowByRow(t *testing.T) {
	type oldLog struct {
		Time    int64  `parquet:"time,timestamp(nanosecond)"`
		Message string `parquet:"message"`
	}
	dir := t.TempDir()
	part := filepath.Join(dir, "default", schema.TableLogs, closedHour)
	require.NoError(t, os.MkdirAll(part, 0o755))
	for i, msgs := range [][]string{{"b", "a"}, {"c"}} {
		var rows []oldLog
		for _, m := range msgs {
			rows = append(rows, oldLog{Time: t0.UnixNano(), Message: m})
		}
		require.NoError(t, parquet.WriteFile(filepath.Join(part, fmt.Sprintf("old-%d%s", i, parquetExt)), rows))
	}
	s, err := Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, CompactSort: true})
	require.NoError(t, err)
	st, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Equal(t, 2, st.FilesIn)
	merged := partitionFiles(t, dir, closedHour)
	require.Len(t, merged, 1)
	rows, err := parquet.ReadFile[oldLog](filepath.Join(part, merged[0]))
	require.NoError(t, err)
	got := slices.SortedFunc(slices.Values(rows), func(a, b oldLog) int { return cmp.Compare(a.Message, b.Message) })
	assert.Equal(t, []oldLog{{t0.UnixNano(), "a"}, {t0.UnixNano(), "b"}, {t0.UnixNano(), "c"}}, got)
}
