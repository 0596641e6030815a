package clickhouse

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

// measurement builds an Arc measurement batch of n rows with the given
// extra columns (name -> Arrow type), every value non-null but the last
// row's, and its table.
func measurement(t *testing.T, name string, n int, extra ...arrow.Field) (*storage.Table, arrow.RecordBatch) {
	t.Helper()
	fields := append([]arrow.Field{{Name: "time", Type: schema.TimestampType}, {Name: "host", Type: arrow.BinaryTypes.String, Nullable: true}}, extra...)
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixMicro()
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at + int64(i)))
		for j := 1; j < len(fields); j++ {
			if i == n-1 {
				b.Field(j).AppendNull()
				continue
			}
			switch fb := b.Field(j).(type) {
			case *array.StringBuilder:
				fb.Append("h" + string(rune('a'+i%3)))
			case *array.Float64Builder:
				fb.Append(float64(i) + 0.5)
			case *array.Int64Builder:
				fb.Append(int64(i))
			case *array.BooleanBuilder:
				fb.Append(i%2 == 0)
			}
		}
	}
	rec := b.NewRecordBatch()
	tbl, err := storage.MeasurementTable(name, rec.Schema())
	require.NoError(t, err)
	require.NoError(t, tbl.Check(rec))
	return tbl, rec
}

// TestMeasurementsGrowColumns writes an Arc measurement whose schema
// changes: the ClickHouse table gains the new columns (older rows read
// NULL there), and a column whose type changed is refused for good.
func TestMeasurementsGrowColumns(t *testing.T) {
	srv := chtest.Start(t)
	s := newSink(t, srv)
	ctx := context.Background()
	write := func(token string, tbl *storage.Table, rec arrow.RecordBatch) error {
		defer rec.Release()
		return s.Write(ctx, storage.SinkWrite{Token: token, Database: "arc", Table: tbl, Records: []arrow.RecordBatch{rec}, Rows: rec.NumRows()})
	}
	usage := arrow.Field{Name: "usage", Type: arrow.PrimitiveTypes.Float64, Nullable: true}
	cores := arrow.Field{Name: "cores", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	up := arrow.Field{Name: "up", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}

	tbl, rec := measurement(t, "cpu", 4, usage)
	require.NoError(t, write("v1", tbl, rec))
	tbl, rec = measurement(t, "cpu", 3, usage, cores, up)
	require.NoError(t, write("v2", tbl, rec))

	assert.Equal(t, "time\tDateTime64(9, \\'UTC\\')\nhost\tNullable(String)\nusage\tNullable(Float64)\ncores\tNullable(Int64)\nup\tNullable(Bool)",
		srv.MustQuery("SELECT name, type FROM system.columns WHERE database = 'arc' AND table = 'cpu' ORDER BY position FORMAT TSV"))
	assert.Equal(t, "7\t5\t5\t1\t6.5\t1", srv.MustQuery(
		"SELECT count(), countIf(host IS NOT NULL), countIf(cores IS NULL), countIf(up), sum(usage), sum(cores) FROM arc.cpu FORMAT TSV"),
		"rows of both schemas, nulls where a schema had no column or a null value")

	tbl, rec = measurement(t, "cpu", 2, arrow.Field{Name: "usage", Type: arrow.BinaryTypes.String, Nullable: true})
	err := write("v3", tbl, rec)
	require.ErrorIs(t, err, storage.ErrRejected, "a column whose type changed cannot go in")
	t.Log(err)
	assert.Equal(t, "7", srv.MustQuery("SELECT count() FROM arc.cpu"), "and nothing of it went in")
}

// TestMeasurementNullabilityIsOneTable writes one measurement with its
// fields declared nullable (line protocol, MessagePack) and not nullable
// (an Arrow Flight client's default), in either order: Parquet stores both
// as optional columns, so ClickHouse must take both into the same table.
func TestMeasurementNullabilityIsOneTable(t *testing.T) {
	srv := chtest.Start(t)
	s := newSink(t, srv)
	ctx := context.Background()
	fields := []arrow.Field{
		{Name: "usage", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "cores", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "zone", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "up", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}
	for _, tc := range []struct {
		name  string
		order []bool // nullability of each write's fields
	}{
		{"nullable then not", []bool{true, false}},
		{"not nullable then nullable", []bool{false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := "mem" + strings.ReplaceAll(tc.name, " ", "_")
			for i, nullable := range tc.order {
				tbl, rec := measurement(t, table, 3, fields...)
				if !nullable {
					rec = withoutNulls(t, tbl, rec)
					var err error
					tbl, err = storage.MeasurementTable(table, rec.Schema())
					require.NoError(t, err)
				}
				err := s.Write(ctx, storage.SinkWrite{Token: fmt.Sprintf("%s-%d", table, i), Database: "arc", Table: tbl, Records: []arrow.RecordBatch{rec}, Rows: rec.NumRows()})
				rec.Release()
				require.NoError(t, err, "write %d (nullable %v)", i, nullable)
			}
			assert.Equal(t, "5\t4", srv.MustQuery(fmt.Sprintf("SELECT count(), countIf(usage IS NOT NULL) FROM arc.`%s` FORMAT TSV", table)),
				"every row of both writes, the nullable one's last row null")
		})
	}
}

// withoutNulls returns rec's first rows up to its first null (the
// measurement helper nulls the last row), its fields declared not
// nullable as a Go Arrow client declares them by default.
func withoutNulls(t *testing.T, tbl *storage.Table, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	defer rec.Release()
	head := rec.NewSlice(0, rec.NumRows()-1)
	defer head.Release()
	fields := slices.Clone(tbl.Arrow.Fields())
	for i := 1; i < len(fields); i++ {
		fields[i].Nullable = false
	}
	out := array.NewRecordBatch(arrow.NewSchema(fields, nil), head.Columns(), head.NumRows())
	return out
}

// TestMeasurementVariantsDoNotHoldMemory writes many schema variants of
// one measurement (line protocol's field sets vary from request to
// request): once their inserts are done, the sink must not keep a block,
// and its column buffers, for each variant it has seen; the store's
// cache of measurement tables is bounded for the same reason.
func TestMeasurementVariantsDoNotHoldMemory(t *testing.T) {
	srv := chtest.Start(t)
	s := newSink(t, srv)
	ctx := context.Background()
	const variants, rows = 40, 256
	value := strings.Repeat("x", 2048) // 512 KiB of strings a variant
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	write := func(i int) {
		fields := []arrow.Field{
			{Name: "time", Type: schema.TimestampType},
			{Name: fmt.Sprintf("f%d", i), Type: arrow.BinaryTypes.String, Nullable: true},
		}
		b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
		defer b.Release()
		at := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC).UnixMicro()
		for r := range rows {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at + int64(r)))
			b.Field(1).(*array.StringBuilder).Append(value)
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		tbl, err := storage.MeasurementTable("sparse", rec.Schema())
		require.NoError(t, err)
		require.NoError(t, s.Write(ctx, storage.SinkWrite{Token: fmt.Sprintf("sparse-%d", i), Database: "arc", Table: tbl, Records: []arrow.RecordBatch{rec}, Rows: rows}))
	}
	write(0) // the connection and the first table's state
	before := heap()
	for i := 1; i <= variants; i++ {
		write(i)
	}
	grown := int64(heap()) - int64(before)
	assert.Less(t, grown, int64(8<<20), "heap after %d variants of 512 KiB each", variants)
	assert.Equal(t, fmt.Sprint(rows*(variants+1)), srv.MustQuery("SELECT count() FROM arc.sparse"), "every variant's rows went in")
}

// TestBackfillSpanningManyDaysGoesIn writes one segment's rows of a
// backfill, a year of daily points: the table is partitioned by day, and
// ClickHouse refuses an insert touching more than 100 partitions unless
// told otherwise. Retrying it cannot help, and the sink would hold the
// WAL until the sidecar refused every write.
func TestBackfillSpanningManyDaysGoesIn(t *testing.T) {
	srv := chtest.Start(t)
	s := newSink(t, srv)
	const days = 366
	fields := []arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	start := time.Date(2025, 11, 1, 12, 0, 0, 0, time.UTC)
	for d := range days {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(start.AddDate(0, 0, d).UnixMicro()))
		b.Field(1).(*array.Float64Builder).Append(float64(d))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl, err := storage.MeasurementTable("backfill", rec.Schema())
	require.NoError(t, err)
	require.NoError(t, s.Write(context.Background(), storage.SinkWrite{Token: "backfill-1", Database: "arc", Table: tbl, Records: []arrow.RecordBatch{rec}, Rows: days}))
	assert.Equal(t, fmt.Sprintf("%d\t%d\t%d", days, days, days*(days-1)/2), srv.MustQuery("SELECT count(), uniqExact(toDate(time)), sum(value) FROM arc.backfill FORMAT TSV"))
}
