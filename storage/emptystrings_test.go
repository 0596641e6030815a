package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// hostsBatch is a measurement batch of n rows in t0's hour whose host
// tag is "hc", "hd", "he" or, every fourth row, empty, and whose note
// field is empty every third row.
func hostsBatch(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	fields := []arrow.Field{{Name: "time", Type: utcMicros},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	hour := t0.Truncate(time.Hour)
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(rng.Int64N(int64(time.Hour)))).UnixMicro()))
		host := []string{"hc", "hd", "he"}[rng.IntN(3)]
		if i%4 == 0 {
			host = ""
		}
		b.Field(1).(*array.StringBuilder).Append(host)
		note := fmt.Sprintf("note-%d", rng.IntN(5))
		if i%3 == 0 {
			note = ""
		}
		b.Field(2).(*array.StringBuilder).Append(note)
		b.Field(3).(*array.Float64Builder).Append(rng.Float64())
	}
	rec := b.NewRecordBatch()
	tbl, err := MeasurementTable("hosts", rec.Schema())
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec, storagetest.IPC(t, rec)
}

// spansWithEmptyStrings converts n spans in t0's hour to one batch:
// four to a trace, the first its root (parent_span_id empty), every
// third with an empty status message and every other with an empty
// peer.service attribute.
func spansWithEmptyStrings(t *testing.T, rng *rand.Rand, n int) (*Table, arrow.RecordBatch, []byte) {
	t.Helper()
	start := t0.Truncate(time.Hour)
	td := traceSpans(rng, n, func(int) time.Time { return start.Add(time.Duration(rng.Int64N(int64(time.Hour)))) },
		func(i int, s ptrace.Span, at time.Time) {
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Millisecond)))
			if i%3 != 0 {
				s.Status().SetMessage(fmt.Sprintf("retried %d times", rng.IntN(3)))
			}
			peer := "db"
			if i%2 == 0 {
				peer = ""
			}
			s.Attributes().PutStr("peer.service", peer)
		})
	out := oneTracesBatch(t, td)
	tbl, err := LookupTable(schema.TableTraces)
	require.NoError(t, err)
	return tbl, out, storagetest.IPC(t, out)
}

// TestCompactedStatisticsCountEmptyStrings: where a column of a
// compacted file holds empty strings, its min statistic (the column
// chunk's and every page's in the column index) is the empty string, so
// engines that prune row groups and pages by them find those rows.
// arrow-go 18.8 leaves empty values out of the min of dictionary-encoded
// strings, which the compacted measurement files carry: DuckDB found no
// row for host < 'ha' (iceberg-go, whose manifests take their bounds
// from these statistics, none where host is empty). The OTLP tables'
// compacted files, which parquet-go writes, were right: their case
// guards them (parent_span_id is empty for root spans).
func TestCompactedStatisticsCountEmptyStrings(t *testing.T) {
	for _, tt := range []struct {
		name, table string
		batch       func(*testing.T, *rand.Rand, int) (*Table, arrow.RecordBatch, []byte)
		// queries are each a filter and the rows it must find among
		// 2 x 1000 rows.
		queries map[string]int
		columns []string // whose min must be empty
	}{
		{"measurement tag and field", "hosts", hostsBatch, map[string]int{
			"host < 'ha'": 500, "host = ''": 500, "note = ''": 668, "note < 'a'": 668,
		}, []string{"host", "note"}},
		{"spans", schema.TableTraces, spansWithEmptyStrings, map[string]int{
			"parent_span_id = ''": 500, "parent_span_id < '0'": 500, "span_status_message = ''": 668,
			"attributes['peer.service'] = ''": 1000,
		}, []string{"parent_span_id", "span_status_message"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			rng := rand.New(rand.NewPCG(5, 6))
			for range 2 {
				tbl, rec, payload := tt.batch(t, rng, 1000)
				require.NoError(t, s.Append(context.Background(), NoDedup, "default", tbl, payload, rec))
				rec.Release()
				require.NoError(t, s.Flush())
			}
			_, err := s.Compact(context.Background(), 0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			merged := parquetFilesUnder(t, filepath.Join(dir, "default", tt.table))
			require.Len(t, merged, 1)
			for _, col := range tt.columns {
				assertEmptyMin(t, merged[0], col)
			}
			duckdb, err := exec.LookPath("duckdb")
			if err != nil {
				t.Skip("duckdb CLI not installed (make tools installs it)")
			}
			for filter, want := range tt.queries {
				q := `SELECT count(*) AS n FROM '` + merged[0] + `' WHERE ` + filter
				out, err := exec.Command(duckdb, "-json", "-c", q).CombinedOutput()
				require.NoError(t, err, string(out))
				var got []map[string]int
				require.NoError(t, json.Unmarshal(out, &got), string(out))
				require.Len(t, got, 1)
				assert.Equal(t, want, got[0]["n"], "DuckDB's rows WHERE %s", filter)
			}
		})
	}
}

// assertEmptyMin checks that every row group of a file has a min
// statistic of "" for column (whose values include "" in each), and that
// its pages in the column index, where there is one, begin at "" too.
func assertEmptyMin(t *testing.T, path, column string) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	require.NoError(t, err)
	defer pf.Close()
	idx := pf.MetaData().Schema.ColumnIndexByName(column)
	require.GreaterOrEqual(t, idx, 0, column)
	pages := pf.GetPageIndexReader()
	for g := range pf.NumRowGroups() {
		cc, err := pf.MetaData().RowGroup(g).ColumnChunk(idx)
		require.NoError(t, err)
		stats, err := cc.Statistics()
		require.NoError(t, err)
		if assert.NotNil(t, stats, "%s has statistics", column) && assert.True(t, stats.HasMinMax(), "%s has a min and max", column) {
			assert.Equal(t, "", string(stats.(*metadata.ByteArrayStatistics).Min()), "min of %s in row group %d", column, g)
		}
		if pages == nil {
			continue
		}
		rg, err := pages.RowGroup(g)
		require.NoError(t, err)
		ci, err := rg.GetColumnIndex(idx)
		require.NoError(t, err)
		if ci == nil {
			continue
		}
		mins := ci.GetMinValues()
		require.NotEmpty(t, mins, column)
		lowest := string(mins[0])
		for p, m := range mins {
			assert.False(t, ci.GetNullPages()[p], "page %d of %s marked all null", p, column)
			lowest = min(lowest, string(m))
		}
		assert.Equal(t, "", lowest, "lowest page min of %s in row group %d", column, g)
	}
}
