package arcmsgpack

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// row is a record of Arc's MessagePack row format, as arc-tsdb-client's
// write_records sends it.
func row(m string, t any, fields, tags map[string]any) map[string]any {
	r := map[string]any{"m": m, "fields": fields}
	if t != nil {
		r["t"] = t
	}
	if tags != nil {
		r["tags"] = tags
	}
	return r
}

func TestDecodeRowFormatShapes(t *testing.T) {
	r1 := row("cpu", nowMs*1000, map[string]any{"usage": 1.5}, map[string]any{"host": "a"})
	r2 := row("cpu", nowMs*1000+1, map[string]any{"usage": 2.5}, map[string]any{"host": "b"})
	col := obj("mem", map[string]any{"time": []int64{nowMs}, "free": []int64{7}})
	tests := []struct {
		name string
		body any
		want map[string]int // rows per measurement
	}{
		{"one record", r1, map[string]int{"cpu": 1}},
		{"array of records", []any{r1, r2}, map[string]int{"cpu": 2}},
		{"batch of records", map[string]any{"batch": []any{r1, r2}}, map[string]int{"cpu": 2}},
		{"records mixed with columnar", map[string]any{"batch": []any{r1, col, r2}}, map[string]int{"cpu": 2, "mem": 1}},
		{"array mixed", []any{col, r1}, map[string]int{"cpu": 1, "mem": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Decode(pack(t, tt.body))
			require.NoError(t, err)
			got := map[string]int{}
			for _, m := range ms {
				got[m.Name] += m.Rows()
				for _, c := range m.Columns {
					assert.Equal(t, m.Rows(), c.Rows(), "column %s", c.Name)
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestDecodeRowFormatColumns checks rows become the columns Arc makes of
// them: tags as strings, fields typed, a field named like a tag suffixed
// "_value", missing values null, per-row time units, "h" as the host tag.
func TestDecodeRowFormatColumns(t *testing.T) {
	body := pack(t, []any{
		row("cpu", nowMs/1000, map[string]any{"usage": 1, "ok": true, "host": "f"}, map[string]any{"host": "a", "rack": 7}),
		row("cpu", nowMs*1_000_000, map[string]any{"usage": 2.5, "note": "hi"}, map[string]any{"host": "b"}),
		map[string]any{"m": "cpu", "t": float64(nowMs), "h": "c", "fields": map[string]any{"usage": nil, "n": uint64(3)}},
	})
	ms, err := Decode(body)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	m := ms[0]
	assert.Equal(t, []int64{(nowMs / 1000) * 1e6, nowMs * 1e3, nowMs * 1e3}, m.Time)
	rec := m.Record(memory.NewGoAllocator())
	defer rec.Release()
	assert.Equal(t, []string{"time", "host", "host_value", "n", "note", "ok", "rack", "usage"}, fieldNames(rec.Schema()))
	get := func(name string) any {
		i := rec.Schema().FieldIndices(name)
		require.Len(t, i, 1, name)
		return rec.Column(i[0])
	}
	host := get("host").(*array.String)
	assert.Equal(t, []string{"a", "b", "c"}, []string{host.Value(0), host.Value(1), host.Value(2)})
	assert.Equal(t, "f", get("host_value").(*array.String).Value(0))
	assert.Equal(t, "7", get("rack").(*array.String).Value(0), "non-string tags become text")
	usage := get("usage").(*array.Float64)
	assert.Equal(t, []float64{1, 2.5}, []float64{usage.Value(0), usage.Value(1)}, "an int then a float: a float column")
	assert.True(t, usage.IsNull(2))
	assert.Equal(t, int64(3), get("n").(*array.Int64).Value(2))
	assert.Equal(t, 2, get("n").(*array.Int64).NullN())
	assert.True(t, get("ok").(*array.Boolean).Value(0))
	assert.Equal(t, "hi", get("note").(*array.String).Value(1))
}

func TestDecodeRowHostWinsOverHostTag(t *testing.T) {
	ms, err := Decode(pack(t, map[string]any{"m": "cpu", "h": "h1", "tags": map[string]any{"host": "t1"}, "fields": map[string]any{"v": 1}}))
	require.NoError(t, err)
	require.Len(t, ms[0].Columns, 2)
	for _, c := range ms[0].Columns {
		if c.Name == "host" {
			assert.Equal(t, []string{"h1"}, c.Strings())
		}
	}
}

func TestDecodeRowWithoutTimeIsNow(t *testing.T) {
	ms, err := Decode(pack(t, row("cpu", nil, map[string]any{"v": 1}, nil)))
	require.NoError(t, err)
	assert.Positive(t, ms[0].Time[0])
}
