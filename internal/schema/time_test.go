package schema

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoredTimes converts a record of an earlier build (nanosecond times,
// top-level and inside a list of structs, beside a map) to the contract's
// unit: values truncated, nulls and offsets kept, other columns shared.
func TestStoredTimes(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ns := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	event := arrow.StructOf(arrow.Field{Name: "time", Type: ns}, arrow.Field{Name: "name", Type: arrow.BinaryTypes.String})
	attrs := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	attrs.SetItemNullable(false)
	old := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: ns},
		{Name: "end_time", Type: ns, Nullable: true},
		{Name: "events", Type: arrow.ListOfNonNullable(event)},
		{Name: "attributes", Type: attrs},
	}, nil)
	b := array.NewRecordBuilder(mem, old)
	defer b.Release()
	tb, eb := b.Field(0).(*array.TimestampBuilder), b.Field(1).(*array.TimestampBuilder)
	lb := b.Field(2).(*array.ListBuilder)
	sb := lb.ValueBuilder().(*array.StructBuilder)
	mb := b.Field(3).(*array.MapBuilder)
	for i := range int64(3) {
		tb.Append(arrow.Timestamp(1_700_000_000_123_456_789 + i))
		if i == 1 {
			eb.AppendNull()
		} else {
			eb.Append(arrow.Timestamp(1_700_000_001_000_000_999))
		}
		lb.Append(true)
		for e := range i {
			sb.Append(true)
			sb.FieldBuilder(0).(*array.TimestampBuilder).Append(arrow.Timestamp(5_999 + e*1000))
			sb.FieldBuilder(1).(*array.StringBuilder).Append("ev")
		}
		mb.Append(true)
		mb.KeyBuilder().(*array.StringBuilder).Append("k")
		mb.ItemBuilder().(*array.StringBuilder).Append("v")
	}
	whole := b.NewRecordBatch()
	defer whole.Release()
	rec := whole.NewSlice(1, 3) // an offset, as a slice of a batch has
	defer rec.Release()

	got := StoredTimes(rec)
	defer got.Release()
	require.Equal(t, int64(2), got.NumRows())
	assert.True(t, arrow.TypeEqual(TimestampType, got.Schema().Field(0).Type))
	assert.True(t, got.Schema().Field(1).Nullable)
	assert.Equal(t, []arrow.Timestamp{1_700_000_000_123_456, 1_700_000_000_123_456}, []arrow.Timestamp{
		got.Column(0).(*array.Timestamp).Value(0), got.Column(0).(*array.Timestamp).Value(1)})
	assert.True(t, got.Column(1).IsNull(0))
	assert.Equal(t, arrow.Timestamp(1_700_000_001_000_000), got.Column(1).(*array.Timestamp).Value(1))
	evs := got.Column(2).(*array.List)
	start, end := evs.ValueOffsets(1)
	times := evs.ListValues().(*array.Struct).Field(0).(*array.Timestamp)
	assert.True(t, arrow.TypeEqual(TimestampType, times.DataType()))
	var nested []arrow.Timestamp
	for i := start; i < end; i++ {
		nested = append(nested, times.Value(int(i)))
	}
	assert.Equal(t, []arrow.Timestamp{5, 6}, nested)
	assert.Equal(t, rec.Column(3).Data().Buffers()[1], got.Column(3).Data().Buffers()[1], "the map is shared")
	assert.False(t, got.Schema().Field(3).Type.(*arrow.MapType).ItemField().Nullable)

	same := StoredTimes(got)
	defer same.Release()
	assert.Same(t, got, same, "a record in the unit is returned as is")
}

// TestTimesInNanosecondsAndBack: TimesIn makes an earlier build's record,
// StoredTimes reads it back the same; StoredSchema matches the record's.
func TestTimesInNanosecondsAndBack(t *testing.T) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: TimestampType},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.TimestampBuilder).Append(1_700_000_000_123_456)
	b.Field(1).(*array.Int64Builder).Append(7)
	rec := b.NewRecordBatch()
	defer rec.Release()
	ns := TimesIn(rec, arrow.Nanosecond)
	defer ns.Release()
	assert.Equal(t, arrow.Timestamp(1_700_000_000_123_456_000), ns.Column(0).(*array.Timestamp).Value(0))
	assert.True(t, StoredSchema(ns.Schema()).Equal(rec.Schema()))
	back := StoredTimes(ns)
	defer back.Release()
	assert.True(t, array.RecordEqual(rec, back))
}

// TestParquetTimesIn: a table's schema in nanoseconds (an earlier build's
// files) and back is the table's schema, column for column; nothing but the
// timestamps changes.
func TestParquetTimesIn(t *testing.T) {
	for _, name := range Names() {
		tbl, _ := Lookup(name)
		ns, changed := ParquetTimesIn(tbl.Parquet, arrow.Nanosecond)
		require.True(t, changed, name)
		assert.Contains(t, ns.String(), "NANOS", name)
		assert.NotContains(t, ns.String(), "MICROS", name)
		assert.Equal(t, tbl.Parquet.Columns(), ns.Columns(), "%s: column order", name)
		back, changed := StoredParquet(ns)
		require.True(t, changed, name)
		assert.Equal(t, tbl.Parquet.String(), back.String(), name)
		assert.True(t, parquet.EqualNodes(tbl.Parquet, back), name)
		same, changed := StoredParquet(tbl.Parquet)
		assert.False(t, changed, name)
		assert.Same(t, tbl.Parquet, same)
	}
}
