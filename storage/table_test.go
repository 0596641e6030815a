package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// withColumn returns rec with column name replaced by arr.
func withColumn(t *testing.T, rec arrow.RecordBatch, name string, arr arrow.Array) arrow.RecordBatch {
	t.Helper()
	idx := rec.Schema().FieldIndices(name)
	require.Len(t, idx, 1)
	cols := append([]arrow.Array(nil), rec.Columns()...)
	cols[idx[0]] = arr
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// shortKeys returns the map column name of rec with its keys one row
// shorter than its entries, as a message declaring so decodes.
func shortKeys(t *testing.T, rec arrow.RecordBatch, name string) arrow.Array {
	t.Helper()
	m := rec.Column(rec.Schema().FieldIndices(name)[0]).(*array.Map)
	entries := m.ListValues().Data()
	k := entries.Children()[0]
	require.Positive(t, k.Len())
	keys := array.NewSliceData(k, 0, int64(k.Len()-1))
	defer keys.Release()
	e := array.NewData(entries.DataType(), entries.Len(), entries.Buffers(), []arrow.ArrayData{keys, entries.Children()[1]}, entries.NullN(), entries.Offset())
	defer e.Release()
	d := array.NewData(m.DataType(), m.Len(), m.Data().Buffers(), []arrow.ArrayData{e}, m.NullN(), m.Data().Offset())
	defer d.Release()
	return array.MakeFromData(d)
}

func strings1(vals ...string) arrow.Array {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(vals, nil)
	return b.NewArray()
}

func TestCheckRejectsBadBatches(t *testing.T) {
	tbl, err := LookupTable(schema.TableLogs)
	require.NoError(t, err)
	good, _ := storagetest.LogBatch(t, "m", t0, t0)
	defer good.Release()
	require.NoError(t, tbl.Check(good))

	nullMsg := array.NewStringBuilder(memory.DefaultAllocator)
	nullMsg.Append("ok")
	nullMsg.AppendNull()
	times := func(ts ...int64) arrow.Array {
		b := array.NewTimestampBuilder(memory.DefaultAllocator, schema.TimestampType)
		for _, v := range ts {
			b.Append(arrow.Timestamp(v))
		}
		return b.NewArray()
	}
	tests := []struct {
		name string
		rec  arrow.RecordBatch
		err  error
		msg  string
	}{
		{"invalid UTF-8 in a string column", withColumn(t, good, "message", strings1("ok", "bad\xff")), ErrInvalidUTF8, `column "message" row 1`},
		// Valid together, not apart: the one-pass check must see the cut.
		{"a character cut across two rows", withColumn(t, good, "message", strings1("\xc3", "\xbc")), ErrInvalidUTF8, `column "message" row 0`},
		{"null in a non-nullable column", withColumn(t, good, "message", nullMsg.NewArray()), ErrNullInRequired, `"message"`},
		{"time before 1970", withColumn(t, good, "time", times(t0.UnixMicro(), -1)), ErrTimeRange, "row 1 has time -1 us"},
		// Offsets within the entries, keys that end before them: the flush's
		// encoder slices keys past their end and panics.
		{"map keys fewer than its entries", withColumn(t, good, "resource_attributes", shortKeys(t, good, "resource_attributes")),
			ErrMalformed, `column "resource_attributes": 1 keys and 2 values for 2 map entries`},
		{"time in seconds read as far future", withColumn(t, good, "time", times(t0.UnixMicro(), time.Now().Add(400*24*time.Hour).UnixMicro())), ErrTimeRange, "row 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer tt.rec.Release()
			err := tbl.Check(tt.rec)
			assert.ErrorIs(t, err, tt.err)
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}

// TestCheckAcceptsEmptyNestedLists: spans without events have an empty
// events child array, whose value buffers may be absent.
func TestCheckAcceptsEmptyNestedLists(t *testing.T) {
	tbl, err := LookupTable(schema.TableTraces)
	require.NoError(t, err)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, tbl.Arrow, strings.NewReader(`[{"time":1700000000000000,"end_time":1700000000000000,
		"duration_ns":0,"trace_id":"","span_id":"","parent_span_id":"","trace_state":"","flags":0,"operation_name":"op","span_kind":"server",
		"span_status":"unset","span_status_message":"","error":false,"service_name":"s","resource_attributes":[],"resource_attribute_types":[],
		"resource_dropped_attributes_count":0,"resource_schema_url":"","scope_name":"","scope_version":"","scope_attributes":[],
		"scope_attribute_types":[],"scope_dropped_attributes_count":0,"scope_schema_url":"","attributes":[],"attribute_types":[],
		"dropped_attributes_count":0,"events":[],"dropped_events_count":0,"links":[],"dropped_links_count":0}]`))
	require.NoError(t, err)
	defer rec.Release()
	rt, err := arcflightRoundTrip(t, rec)
	require.NoError(t, err)
	defer rt.Release()
	assert.NoError(t, tbl.Check(rt))
}

// arcflightRoundTrip sends rec through IPC encoding and decoding, as the
// receiver sees it.
func arcflightRoundTrip(t *testing.T, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	return arcflight.DecodeRecord(storagetest.IPC(t, rec), memory.DefaultAllocator)
}
