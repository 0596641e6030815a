package storage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// writeLegacyFile writes rec as builds before this one did
// (storagetest.WriteNanosecondFile), in the column order of the table's
// Parquet schema (a measurement's is by name), as their writer did.
func writeLegacyFile(t *testing.T, path string, extra int64, rec arrow.RecordBatch) {
	t.Helper()
	tbl, err := tableFor(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))), rec.Schema())
	require.NoError(t, err)
	var fields []arrow.Field
	var cols []arrow.Array
	for _, f := range tbl.Parquet.Fields() {
		i := rec.Schema().FieldIndices(f.Name())
		require.Len(t, i, 1, f.Name())
		fields, cols = append(fields, rec.Schema().Field(i[0])), append(cols, rec.Column(i[0]))
	}
	ordered := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	defer ordered.Release()
	storagetest.WriteNanosecondFile(t, path, extra, ordered)
}

// spansOf converts the contract generator's traces (span events, links,
// every attribute type) to one record batch.
func spansOf(t *testing.T, spansPerScope int) arrow.RecordBatch {
	t.Helper()
	var out arrow.RecordBatch
	c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 100_000)
	defer c.Release()
	require.NoError(t, c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, spansPerScope), func(_ *schema.Table, rec arrow.RecordBatch) error {
		require.Nil(t, out, "one batch")
		out = rec
		return nil
	}))
	return out
}

func parquetFilesIn(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	require.NoError(t, err)
	return paths
}

// TestCompactRewritesEarlierBuildsNanoseconds: files of builds that stored
// nanoseconds are rewritten in microseconds by compaction, their rows
// truncated to the microsecond and otherwise unchanged: merged with the
// current files of their shape in a closed partition (nested event times
// included), alone in a closed partition, and in a partition whose hour
// has not ended, which compaction otherwise leaves alone. A second run
// finds nothing to do.
func TestCompactRewritesEarlierBuildsNanoseconds(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	defer s.Close()

	// Traces (closed hour): one flushed file, one of an earlier build.
	spans := spansOf(t, 3)
	defer spans.Release()
	tracesTable, err := LookupTable(schema.TableTraces)
	require.NoError(t, err)
	require.NoError(t, s.Append(context.Background(), NoDedup, "default", tracesTable, storagetest.IPC(t, spans), spans))
	require.NoError(t, s.Flush())
	tracesDir := filepath.Join(dir, "default", "traces", "date=2026-11-22", "hour=9")
	require.Len(t, parquetFilesIn(t, tracesDir), 1, "the flushed file")
	writeLegacyFile(t, filepath.Join(tracesDir, "0-old.parquet"), 789, spans)

	// A measurement (closed hour): one file of an earlier build, alone.
	_, cpu, _ := cpuBatchAt(t, 5, false, t0)
	defer cpu.Release()
	cpuDir := filepath.Join(dir, "default", "cpu", "date=2026-11-22", "hour=9")
	writeLegacyFile(t, filepath.Join(cpuDir, "old.parquet"), 999, cpu)

	// Logs in an hour that has not ended.
	now := time.Now().UTC().Truncate(time.Microsecond)
	logs, _ := storagetest.LogBatch(t, "open", now)
	defer logs.Release()
	logsDir := filepath.Join(dir, "default", "logs", "date="+now.Format(time.DateOnly), "hour="+strconv.Itoa(now.Hour()))
	writeLegacyFile(t, filepath.Join(logsDir, "old.parquet"), 1, logs)

	st, err := s.Compact(context.Background(), 10*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 3, st.Partitions)
	assert.Equal(t, 4, st.FilesIn)
	assert.Equal(t, 3, st.FilesOut)

	files := parquetFilesIn(t, tracesDir)
	require.Len(t, files, 1, "flushed and earlier files merged")
	assertMicros(t, files[0])
	got, err := parquet.ReadFile[schema.Span](files[0])
	require.NoError(t, err)
	want, err := otlparrowtest.Rows[schema.Span](spans)
	require.NoError(t, err)
	want = append(want, want...)
	bySpan := func(a, b schema.Span) int {
		return cmp.Or(cmp.Compare(a.SpanID, b.SpanID), cmp.Compare(a.Time, b.Time))
	}
	slices.SortStableFunc(got, bySpan)
	slices.SortStableFunc(want, bySpan)
	require.Len(t, got, len(want))
	for i := range want {
		w, g := spanJSON(t, want[i]), spanJSON(t, got[i])
		require.True(t, w == g, "span %d: the earlier build's copy reads as the flushed one:\nwant %.600s\ngot  %.600s", i, w, g)
	}
	assert.True(t, slices.ContainsFunc(got, func(s schema.Span) bool { return len(s.Events) > 0 }), "nested times are covered")

	files = parquetFilesIn(t, cpuDir)
	require.Len(t, files, 1)
	assertMicros(t, files[0])
	type cpuRow struct {
		Time int64 `parquet:"time,timestamp(microsecond)"`
	}
	cpuRows, err := parquet.ReadFile[cpuRow](files[0])
	require.NoError(t, err)
	require.Len(t, cpuRows, 5)
	for i, r := range cpuRows {
		assert.Equal(t, t0.UnixMicro()+int64(i), r.Time, "row %d truncated to its microsecond", i)
	}

	files = parquetFilesIn(t, logsDir)
	require.Len(t, files, 1)
	assertMicros(t, files[0])
	logRows, err := parquet.ReadFile[schema.LogRecord](files[0])
	require.NoError(t, err)
	require.Len(t, logRows, 1)
	assert.Equal(t, []int64{now.UnixMicro(), now.UnixMicro()}, []int64{logRows[0].Time, logRows[0].ObservedTime})

	st, err = s.Compact(context.Background(), 10*time.Minute)
	require.NoError(t, err)
	assert.Zero(t, st.Partitions, "nothing left to rewrite")
	assert.Equal(t, 3, compactKnownFiles(s), "each file's footer read once")
}

// spanJSON renders a row for comparison; an empty list reads as none.
func spanJSON(t *testing.T, s schema.Span) string {
	t.Helper()
	if len(s.Events) == 0 {
		s.Events = nil
	}
	if len(s.Links) == 0 {
		s.Links = nil
	}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}

// TestFlushedAndCompactedFilesShareASchema: a table reader (Iceberg) needs
// every file of a table to have one schema, map value and list element
// nullability included: the files a flush writes, the ones compaction
// merges them into, and the ones it rewrites from an earlier build's
// nanoseconds are alike, column for column.
func TestFlushedAndCompactedFilesShareASchema(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	defer s.Close()
	batches := map[string]arrow.RecordBatch{}
	for name, signal := range map[string]func(otlparrow.Emit) error{
		schema.TableTraces: func(emit otlparrow.Emit) error {
			c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 100_000)
			defer c.Release()
			return c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 3), emit)
		},
		schema.TableLogs: func(emit otlparrow.Emit) error {
			c := otlparrow.NewLogsConverter(memory.DefaultAllocator, 100_000)
			defer c.Release()
			return c.Convert(otlparrowtest.Logs(otlparrowtest.Sent, 3), emit)
		},
		schema.TableMetrics: func(emit otlparrow.Emit) error {
			c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 100_000)
			defer c.Release()
			return c.Convert(otlparrowtest.Metrics(otlparrowtest.Sent, 3), emit)
		},
	} {
		require.NoError(t, signal(func(tbl *schema.Table, rec arrow.RecordBatch) error {
			if tbl.Name == name {
				batches[name] = rec
			} else {
				rec.Release()
			}
			return nil
		}), name)
	}
	_, cpu, _ := cpuBatchAt(t, 5, false, t0)
	batches["cpu"] = cpu
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()

	flushed := map[string]string{}
	for name, rec := range batches {
		tbl, err := tableFor(name, rec.Schema())
		require.NoError(t, err)
		for range 2 {
			require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, storagetest.IPC(t, rec), rec))
			require.NoError(t, s.Flush())
		}
		part := partitionOf(t, dir, name)
		files := parquetFilesIn(t, part)
		require.Len(t, files, 2, name)
		flushed[name] = fileSchemas(t, files[0])
		writeLegacyFile(t, filepath.Join(part, "0-old.parquet"), 1, rec)
	}
	_, err := s.Compact(context.Background(), 0)
	require.NoError(t, err)
	for name := range batches {
		files := parquetFilesIn(t, partitionOf(t, dir, name))
		require.Len(t, files, 1, "%s: flushed and earlier files merged", name)
		assert.Equal(t, flushed[name], fileSchemas(t, files[0]), name)
	}
}

// partitionOf is the one partition folder of a table.
func partitionOf(t *testing.T, dir, table string) string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "default", table, "date=*", "hour=*"))
	require.NoError(t, err)
	require.Len(t, parts, 1, table)
	return parts[0]
}

// fileSchemas renders a file's Parquet schema (every node's repetition,
// without the root's name, a writer's choice) and the Arrow schema pqarrow
// reads it as.
func fileSchemas(t *testing.T, path string) string {
	t.Helper()
	ps, _, _, err := readSchema(path)
	require.NoError(t, err)
	_, columns, _ := strings.Cut(ps.String(), "\n")
	pf, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	require.NoError(t, err)
	as, err := fr.Schema()
	require.NoError(t, err)
	var nullability []string
	var walk func(string, arrow.DataType)
	walk = func(path string, dt arrow.DataType) {
		if nt, ok := dt.(arrow.NestedType); ok {
			for _, f := range nt.Fields() {
				nullability = append(nullability, fmt.Sprintf("%s.%s nullable=%t", path, f.Name, f.Nullable))
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	for _, f := range as.Fields() {
		nullability = append(nullability, fmt.Sprintf("%s nullable=%t", f.Name, f.Nullable))
		walk(f.Name, f.Type)
	}
	return columns + "\n" + as.String() + "\n" + strings.Join(nullability, "\n")
}

// tokenSink records each write's token and time column type.
type tokenSink struct {
	mu     sync.Mutex
	tokens []string
	types  []string
}

func (s *tokenSink) Name() string { return "fake" }
func (s *tokenSink) Close() error { return nil }
func (s *tokenSink) Write(_ context.Context, w SinkWrite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = append(s.tokens, w.Token)
	for _, r := range w.Records {
		s.types = append(s.types, r.Schema().Field(0).Type.String())
	}
	return nil
}

// TestSinkSendsEarlierBuildsRecordsUnderTheirTokens: a WAL segment an
// earlier build wrote (a measurement in nanoseconds) goes to a sink in
// microseconds, under the token that build gave it (its schema's
// variant), so a destination that already has it drops the repeat.
func TestSinkSendsEarlierBuildsRecordsUnderTheirTokens(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	seg := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	seq := s.wal.Seq()
	crash(s)
	_, cpu, _ := cpuBatchAt(t, 3, false, t0)
	defer cpu.Release()
	ns := schema.TimesIn(cpu, arrow.Nanosecond)
	defer ns.Release()
	ipc := storagetest.IPC(t, ns)
	head := appendBatchHeader([]byte{payloadVersion, 1, 0, 0, 0}, "default", "cpu", NoDedup, len(ipc))
	require.NoError(t, os.WriteFile(seg, wal.Frame(head, ipc), 0o644))

	sink := &tokenSink{}
	s = openWithSink(t, dir, nil, sink, Options{})
	require.NoError(t, s.Close())
	sink.mu.Lock()
	defer sink.mu.Unlock()
	require.Len(t, sink.tokens, 1)
	assert.Equal(t, fmt.Sprintf("arcstore-%s-%d-default-cpu-%x-0", s.sinks.sidecarID, seq, variantOf(ns.Schema())), sink.tokens[0])
	assert.Equal(t, []string{schema.TimestampType.String()}, sink.types, "sent in microseconds")
}
