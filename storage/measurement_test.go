package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// utcMicros is the time column of a measurement.
var utcMicros = schema.TimestampType

// cpuBatch builds a measurement batch: time, host and value, plus a core
// column when withCore is set (a second schema of the same measurement).
func cpuBatch(t *testing.T, rows int, withCore bool) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	return cpuBatchAt(t, rows, withCore, time.Now())
}

func cpuBatchAt(t *testing.T, rows int, withCore bool, at time.Time) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcMicros}, {Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}
	if withCore {
		fields = append(fields, arrow.Field{Name: "core", Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	now := at.UnixMicro()
	for i := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(now + int64(i)))
		b.Field(1).(*array.StringBuilder).Append("host-" + string(rune('a'+i%3)))
		if i%4 == 3 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.Float64Builder).Append(float64(i) / 2)
		}
		if withCore {
			b.Field(3).(*array.Int64Builder).Append(int64(i % 8))
		}
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("cpu", rec.Schema())
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec, storagetest.IPC(t, rec)
}

// parquetFiles returns the row count and column names of each file under
// a table's folder.
func parquetFiles(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		return out
	}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, parquetExt) {
			return err
		}
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		info, _ := f.Stat()
		pf, err := parquet.OpenFile(f, info.Size())
		require.NoError(t, err)
		var cols []string
		for _, c := range pf.Schema().Columns() {
			cols = append(cols, c[0])
		}
		sort.Strings(cols)
		out[strings.Join(cols, ",")] += pf.NumRows()
		return nil
	}))
	return out
}

func TestMeasurementTablesKeepEverySchemaAndRepeatedContent(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	narrow, rec1, ipc1 := cpuBatch(t, 10, false)
	defer rec1.Release()
	wide, rec2, ipc2 := cpuBatch(t, 7, true)
	defer rec2.Release()
	assert.NotEqual(t, narrow.variant, wide.variant)

	ctx := context.Background()
	require.NoError(t, s.AppendAll(ctx, []Batch{{ID: NoDedup, Database: "default", Table: narrow, IPC: ipc1, Rec: rec1},
		{ID: NoDedup, Database: "default", Table: wide, IPC: ipc2, Rec: rec2}}))
	// The same content again is a new write, not a retry.
	require.NoError(t, s.Append(ctx, NoDedup, "default", narrow, ipc1, rec1))

	// Durable before any flush: a crash and a replay keep all of it.
	crash(s)
	s = openStore(t, dir, nil)
	require.NoError(t, s.Close())

	got := parquetFiles(t, filepath.Join(dir, "default", "cpu"))
	assert.Equal(t, map[string]int64{"host,time,value": 20, "core,host,time,value": 7}, got)
}

func TestAppendAllIsOneCommit(t *testing.T) {
	dir := t.TempDir()
	faults := &walFaults{}
	s := openStore(t, dir, faults)
	narrow, rec1, ipc1 := cpuBatch(t, 5, false)
	defer rec1.Release()
	wide, rec2, ipc2 := cpuBatch(t, 5, true)
	defer rec2.Release()
	faults.FailSync.Store(true)
	err := s.AppendAll(context.Background(), []Batch{{ID: NoDedup, Database: "default", Table: narrow, IPC: ipc1, Rec: rec1},
		{ID: NoDedup, Database: "default", Table: wide, IPC: ipc2, Rec: rec2}})
	require.ErrorIs(t, err, errInjected)
	require.NoError(t, s.Close())
	assert.Empty(t, parquetFiles(t, filepath.Join(dir, "default", "cpu")), "neither batch of the failed commit is stored")
}

func TestMeasurementTableRejects(t *testing.T) {
	good := []arrow.Field{{Name: "time", Type: utcMicros}}
	tests := []struct {
		name    string
		table   string
		fields  []arrow.Field
		wantErr error
		msg     string
	}{
		{"an OTLP table's name", "traces", good, ErrBadName, "name of an OTLP table"},
		{"path traversal", "../etc", good, ErrBadName, `"../etc"`},
		{"a name, not its folder", "disk io", good, ErrBadName, `stores "disk io" as "disk%20io"`},
		{"time not first", "cpu", []arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, good[0]}, ErrSchemaMismatch, "first column"},
		{"nullable time", "cpu", []arrow.Field{{Name: "time", Type: utcMicros, Nullable: true}}, ErrSchemaMismatch, "non-null"},
		{"unsupported type", "cpu", append(good, arrow.Field{Name: "v", Type: arrow.PrimitiveTypes.Int32, Nullable: true}), ErrSchemaMismatch, `column "v": type int32`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MeasurementTable(tt.table, arrow.NewSchema(tt.fields, nil))
			require.ErrorIs(t, err, tt.wantErr)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestMeasurementTraceIDGetsABloomFilter(t *testing.T) {
	withID, err := MeasurementTable("spans", arrow.NewSchema([]arrow.Field{{Name: "time", Type: utcMicros},
		{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true}}, nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"trace_id"}, withID.BloomColumns)
	without, err := MeasurementTable("spans", arrow.NewSchema([]arrow.Field{{Name: "time", Type: utcMicros}}, nil))
	require.NoError(t, err)
	assert.Empty(t, without.BloomColumns)
}

// TestFingerprintIsUnambiguous: with fields joined by NUL, one column
// named "a\x00utf8\x00true\x00b" hashed as the two columns a and b, and the
// table cached for one schema served the other (every later write of a and
// b then failed with a schema mismatch until restart).
func TestFingerprintIsUnambiguous(t *testing.T) {
	str := func(name string) arrow.Field {
		return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
	}
	ts := arrow.Field{Name: "time", Type: utcMicros}
	crafted := arrow.NewSchema([]arrow.Field{ts, str("a\x00utf8\x00true\x00b")}, nil)
	normal := arrow.NewSchema([]arrow.Field{ts, str("a"), str("b")}, nil)
	assert.NotEqual(t, fingerprint(crafted), fingerprint(normal))

	_, err := MeasurementTable("collide", crafted)
	require.NoError(t, err)
	tbl, err := MeasurementTable("collide", normal)
	require.NoError(t, err)
	assert.True(t, tbl.Arrow.Equal(normal), "the table of the normal schema is its own")
}

// TestMeasurementTableCacheIsBounded: every distinct schema a client sends
// used to stay cached for good; past the bound the oldest are rebuilt when
// written again, with the same variant.
func TestMeasurementTableCacheIsBounded(t *testing.T) {
	first := arrow.NewSchema([]arrow.Field{{Name: "time", Type: utcMicros}, {Name: "c0", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	t0, err := MeasurementTable("many", first)
	require.NoError(t, err)
	for i := range maxCachedSchemas + 10 {
		s := arrow.NewSchema([]arrow.Field{{Name: "time", Type: utcMicros}, {Name: "n" + strconv.Itoa(i), Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
		_, err := MeasurementTable("many", s)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, measurements.len(), maxCachedSchemas)
	again, err := MeasurementTable("many", first)
	require.NoError(t, err)
	assert.Equal(t, t0.variant, again.variant, "a rebuilt table keeps its variant")
}

// TestMeasurementTableCacheIsBoundedByBytes: wide schemas are evicted by
// the bytes they hold, long before the count bound (4 096 tables of 1 000
// columns held 1.6 GiB).
func TestMeasurementTableCacheIsBoundedByBytes(t *testing.T) {
	wide := func(k int) *arrow.Schema {
		fields := []arrow.Field{{Name: "time", Type: utcMicros}}
		for i := range 1000 {
			fields = append(fields, arrow.Field{Name: fmt.Sprintf("w%d_column_%04d", k, i), Type: arrow.BinaryTypes.String, Nullable: true})
		}
		return arrow.NewSchema(fields, nil)
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	const n = 200 // 80 MiB of tables uncapped
	for k := range n {
		_, err := MeasurementTable("wide", wide(k))
		require.NoError(t, err)
	}
	grown := heap() - before
	t.Logf("grown %d MiB, cached %d", grown>>20, measurements.len())
	assert.LessOrEqual(t, measurements.bytes, int64(maxCachedSchemaBytes))
	assert.Less(t, measurements.len(), n, "wide tables evicted by bytes")
	assert.Less(t, grown, int64(maxCachedSchemaBytes+8<<20), "the heap grew %d MiB", grown>>20)
}

// TestTableCostBoundsTheHeap: tableCost is at least what a table holds, so
// the cache's byte bound is a bound of the heap it keeps.
func TestTableCostBoundsTheHeap(t *testing.T) {
	for _, n := range []int{1, 10, 100, 1000} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			fields := []arrow.Field{{Name: "time", Type: utcMicros}}
			for i := range n {
				fields = append(fields, arrow.Field{Name: fmt.Sprintf("column_name_%04d", i), Type: arrow.BinaryTypes.String, Nullable: true})
			}
			s := arrow.NewSchema(fields, nil)
			const tables = 20
			kept := make([]*Table, 0, tables)
			runtime.GC()
			var a, b runtime.MemStats
			runtime.ReadMemStats(&a)
			for k := range tables {
				tb, err := MeasurementTable(fmt.Sprintf("cost_%d_%d", n, k), s)
				require.NoError(t, err)
				kept = append(kept, tb)
			}
			runtime.GC()
			runtime.ReadMemStats(&b)
			perTable := (int64(b.HeapAlloc) - int64(a.HeapAlloc)) / tables
			assert.LessOrEqual(t, perTable, tableCost(s), "a table of %d columns holds %d bytes", n, perTable)
			runtime.KeepAlive(kept)
		})
	}
}
