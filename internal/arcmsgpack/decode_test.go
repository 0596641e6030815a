package arcmsgpack

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func pack(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(t, err)
	return b
}

func obj(m string, cols map[string]any) map[string]any {
	return map[string]any{"m": m, "columns": cols}
}

const nowMs = int64(1_763_800_000_000) // 2025-11-22, in ms

func TestDecodeForms(t *testing.T) {
	one := obj("cpu", map[string]any{"time": []int64{nowMs}, "host": []string{"a"}})
	tests := []struct {
		name  string
		body  any
		names []string
	}{
		{name: "one object", body: one, names: []string{"cpu"}},
		{name: "array of objects", body: []any{one, obj("mem", map[string]any{"time": []int64{nowMs}})}, names: []string{"cpu", "mem"}},
		{name: "batch", body: map[string]any{"batch": []any{one, one}}, names: []string{"cpu", "cpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Decode(pack(t, tt.body))
			require.NoError(t, err)
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			assert.Equal(t, tt.names, names)
		})
	}
}

func TestDecodeTimeUnits(t *testing.T) {
	const us = nowMs * 1000
	tests := []struct {
		name  string
		time  any
		delta float64
	}{
		{"seconds", []int64{nowMs / 1000}, 0},
		{"milliseconds", []int64{nowMs}, 0},
		{"microseconds", []int64{us}, 0},
		{"nanoseconds", []int64{us * 1000}, 0},
		{"nanoseconds truncated to the microsecond", []int64{us*1000 + 999}, 0},
		{"float seconds", []float64{float64(nowMs) / 1000}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := Decode(pack(t, obj("cpu", map[string]any{"time": tt.time})))
			require.NoError(t, err)
			assert.InDelta(t, us, ms[0].Time[0], tt.delta, "stored in µs")
		})
	}
}

func TestDecodeColumnKinds(t *testing.T) {
	body := pack(t, obj("m1", map[string]any{
		"time":    []int64{nowMs, nowMs + 1, nowMs + 2},
		"i":       []any{1, -2, int64(math.MaxInt64)},
		"f":       []any{1, 2.5, nil}, // ints then a float: the column is float
		"s":       []any{nil, "x", "ü"},
		"b":       []any{true, false, nil},
		"nothing": []any{nil, nil, nil},
	}))
	ms, err := Decode(body)
	require.NoError(t, err)
	cols := map[string]*Column{}
	for _, c := range ms[0].Columns {
		cols[c.Name] = &c
	}
	assert.Equal(t, []int64{1, -2, math.MaxInt64}, cols["i"].Ints)
	assert.Equal(t, KindFloat, cols["f"].Kind)
	assert.Equal(t, []float64{1, 2.5, 0}, cols["f"].Floats)
	assert.Equal(t, []bool{false, false, true}, cols["f"].Null)
	assert.Equal(t, []string{"", "x", "ü"}, cols["s"].Strings())
	assert.Equal(t, []bool{true, false, false}, cols["s"].Null)
	assert.Equal(t, KindBool, cols["b"].Kind)
	assert.Equal(t, KindNull, cols["nothing"].Kind)

	rec := ms[0].Record(memory.NewGoAllocator())
	defer rec.Release()
	assert.Equal(t, []string{"time", "b", "f", "i", "nothing", "s"}, fieldNames(rec.Schema()), "time first, then by name")
	assert.Equal(t, int64(3), rec.NumRows())
	f := rec.Column(2).(*array.Float64)
	assert.True(t, f.IsNull(2))
	assert.Equal(t, 2.5, f.Value(1))
	s := rec.Column(5).(*array.String)
	assert.True(t, s.IsNull(0))
	assert.Equal(t, "ü", s.Value(2))
	assert.Equal(t, 3, rec.Column(4).NullN())
	assert.Equal(t, arrow.Timestamp(nowMs*1000), rec.Column(0).(*array.Timestamp).Value(0))
}

func fieldNames(s *arrow.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// raw builds bodies msgpack.Marshal would not: duplicate keys, odd types.
func raw(t *testing.T, build func(e *msgpack.Encoder)) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	build(e)
	return buf.Bytes()
}

func TestDecodeRejects(t *testing.T) {
	good := pack(t, obj("cpu", map[string]any{"time": []int64{nowMs}}))
	tests := []struct {
		name string
		body []byte
		msg  string
	}{
		{"empty body", nil, "empty or truncated body"},
		{"not a map", pack(t, "hello"), "body must be a map or an array"},
		{"truncated", good[:len(good)-3], "truncated"},
		{"trailing bytes", append(append([]byte{}, good...), 0x01), "trailing bytes"},
		{"empty array", pack(t, []any{}), "no measurement"},
		{"array element not a map", pack(t, []any{1}), "element 0 of the array is not a map"},
		{"missing measurement", pack(t, map[string]any{"columns": map[string]any{"time": []int64{nowMs}}}), `missing measurement name "m"`},
		{"missing time", pack(t, obj("cpu", map[string]any{"v": []int{1}})), `measurement "cpu": missing the "time" column`},
		{"unknown key", pack(t, map[string]any{"m": "cpu", "columns": map[string]any{}, "colums": 1}), `unknown key "colums"`},
		{"columns mixed with fields", pack(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{nowMs}}, "fields": map[string]any{"v": 1}}), `"columns" (columnar) cannot be mixed`},
		{"row without fields", pack(t, map[string]any{"m": "cpu", "t": nowMs, "tags": map[string]any{"h": "a"}}), `a row needs at least one field`},
		{"row without name", pack(t, map[string]any{"t": nowMs, "fields": map[string]any{"v": 1}}), `missing measurement name`},
		{"row string time", pack(t, map[string]any{"m": "cpu", "t": "now", "fields": map[string]any{"v": 1}}), `"t" must be an integer or float`},
		{"row type clash", pack(t, []any{
			map[string]any{"m": "cpu", "t": nowMs, "fields": map[string]any{"v": 1}},
			map[string]any{"m": "cpu", "t": nowMs, "fields": map[string]any{"v": "x"}},
		}), `element 1: measurement "cpu": column "v" row 1: a string among int values`},
		{"row fields not a map", pack(t, map[string]any{"m": "cpu", "fields": []int{1}}), `"fields" must be a map`},
		{"row nested field", pack(t, map[string]any{"m": "cpu", "fields": map[string]any{"v": []int{1}}}), `fields "v": unsupported msgpack type`},
		{"batch inside batch", pack(t, map[string]any{"batch": []any{map[string]any{"batch": []any{}}}}), `only allowed at the top level`},
		{"batch mixed with m", pack(t, map[string]any{"m": "cpu", "batch": []any{}}), `"batch" cannot be mixed`},
		{"column lengths differ", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs, nowMs}, "v": []int{1}})),
			`column "v" has 1 values, "time" has 2`},
		{"mixed types", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs, nowMs}, "v": []any{1, "x"}})),
			`column "v" row 1: a string among int values`},
		{"NaN", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs}, "v": []float64{math.NaN()}})), `column "v" row 0: NaN`},
		{"invalid UTF-8", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs}, "v": []string{"\xff"}})), `column "v" row 0: string is not valid UTF-8`},
		{"a character cut across two rows", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs, nowMs, nowMs}, "v": []string{"ok", "\xc3", "\xbc"}})), `column "v" row 1: string is not valid UTF-8`},
		{"a renamed column too long", ordered(t, "cpu", "time", nowMs, "v"+strings.Repeat("x", 250), 1, "V"+strings.Repeat("x", 250), 2), "longer than 255 bytes"},
		{"null time", pack(t, obj("cpu", map[string]any{"time": []any{nil}})), "null timestamps"},
		{"string time", pack(t, obj("cpu", map[string]any{"time": []string{"now"}})), "integer or float timestamps"},
		{"uint64 overflow", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs}, "v": []uint64{math.MaxUint64}})), "does not fit"},
		{"binary value", pack(t, obj("cpu", map[string]any{"time": []int64{nowMs}, "v": [][]byte{{1}}})), "unsupported msgpack type"},
		{"columns not a map", pack(t, map[string]any{"m": "cpu", "columns": []int{1}}), `"columns" must be a map`},
		{"duplicate column", raw(t, func(e *msgpack.Encoder) {
			e.EncodeMapLen(2)
			e.EncodeString("m")
			e.EncodeString("cpu")
			e.EncodeString("columns")
			e.EncodeMapLen(2)
			e.EncodeString("time")
			e.Encode([]int64{nowMs})
			e.EncodeString("time")
			e.Encode([]int64{nowMs})
		}), `column "time" appears twice`},
		{"huge array length claim", raw(t, func(e *msgpack.Encoder) {
			e.EncodeMapLen(2)
			e.EncodeString("m")
			e.EncodeString("cpu")
			e.EncodeString("columns")
			e.EncodeMapLen(1)
			e.EncodeString("time")
			e.EncodeArrayLen(math.MaxInt32)
			e.EncodeInt(nowMs)
		}), `column "time": truncated at row 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.body)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInput)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(pack(f, obj("cpu", map[string]any{"time": []int64{nowMs, nowMs + 1}, "v": []any{1, 2.5}, "s": []any{"a", nil}, "b": []bool{true, false}})))
	f.Add(pack(f, []any{obj("a", map[string]any{"time": []int64{1}}), obj("b", map[string]any{"time": []float64{1.5}})}))
	f.Add(pack(f, map[string]any{"batch": []any{obj("a", map[string]any{"time": []int64{nowMs}})}}))
	mem := memory.NewGoAllocator()
	f.Add(pack(f, []any{row("cpu", nowMs, map[string]any{"v": 1, "s": "x"}, map[string]any{"h": "a"}), row("cpu", nil, map[string]any{"v": 2.5}, nil)}))
	f.Add(claimsMore(3))
	f.Add(tinyRows(3))
	const limit = 1 << 20
	f.Fuzz(func(t *testing.T, body []byte) {
		var ms []Measurement
		var err error
		// The memory guard: whatever the body, decoding it allocates no
		// more than its budget allows, plus the decoder's own small change.
		got := allocated(func() { ms, err = DecodeWithin(body, NewBudget(limit)) })
		require.LessOrEqual(t, got, int64(limit+8*len(body)+64<<10), "a %d-byte body allocated %d bytes", len(body), got)
		// The body in memory and the body read a byte at a time decode
		// alike.
		streamed, serr := DecodeReader(iotest.OneByteReader(bytes.NewReader(body)), NewBudget(limit))
		require.Equal(t, err == nil, serr == nil, "in memory: %v; streamed: %v", err, serr)
		require.Equal(t, values(ms), values(streamed))
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				require.ErrorIs(t, err, ErrInput)
			}
			return
		}
		for _, m := range ms {
			rec := m.Record(mem)
			require.Equal(t, int64(m.Rows()), rec.NumRows())
			require.Equal(t, len(m.Columns)+1, int(rec.NumCols()))
			// The arrays are built on the columns' own slices: they must
			// be well formed as Arrow sees them.
			for _, c := range rec.Columns() {
				if v, ok := c.(interface{ ValidateFull() error }); ok {
					require.NoError(t, v.ValidateFull())
				}
			}
			rec.Release()
		}
	})
}

// values is what ms holds, for comparing decodes: rows without a time
// are stamped when decoded, so times are left out.
func values(ms []Measurement) []any {
	var out []any
	for _, m := range ms {
		out = append(out, m.Name, len(m.Time))
		for _, c := range m.Columns {
			out = append(out, c.Name, c.Kind, c.Ints, c.Floats, c.Bools, c.Offsets, c.Data, c.Null)
		}
	}
	return out
}

// TestDecodeStringsAcrossTheWindow: string columns longer than the
// decoder's window, with values of every header size, some cut by the
// window's edge, come out byte for byte.
func TestDecodeStringsAcrossTheWindow(t *testing.T) {
	const n = 3000
	times := make([]int64, n)
	strs := make([]string, n)
	for i := range strs {
		times[i] = nowMs + int64(i)
		switch i % 4 {
		case 0:
			strs[i] = fmt.Sprintf("%d", i) // fixstr
		case 1:
			strs[i] = fmt.Sprintf("%032x", i) // str 8
		case 2:
			strs[i] = strings.Repeat("ü", 150+i%7) // str 16
		default:
			strs[i] = ""
		}
	}
	ms, err := Decode(pack(t, obj("cpu", map[string]any{"time": times, "s": strs})))
	require.NoError(t, err)
	require.Len(t, ms[0].Columns, 1)
	assert.Equal(t, strs, ms[0].Columns[0].Strings())
}

// ordered is a one-row columnar object whose columns come in the order
// given (name, value, name, value, ...): msgpack.Marshal orders a map's
// keys as it likes.
func ordered(t *testing.T, m string, cols ...any) []byte {
	return raw(t, func(e *msgpack.Encoder) {
		require.NoError(t, e.EncodeMapLen(2))
		require.NoError(t, e.EncodeString("m"))
		require.NoError(t, e.EncodeString(m))
		require.NoError(t, e.EncodeString("columns"))
		require.NoError(t, e.EncodeMapLen(len(cols)/2))
		for i := 0; i < len(cols); i += 2 {
			require.NoError(t, e.EncodeString(cols[i].(string)))
			require.NoError(t, e.Encode([]any{cols[i+1]}))
		}
	})
}

// TestDecodeTakenColumnNames: a column named, in any case, like the
// timestamp or a partition key, or like an earlier column but for case,
// is stored as <name>_value (issue 31 item 6: "TIME", "Date" and "HOUR"
// were stored as they came, and DuckDB then read the client's TIME as
// time and the partition's values as Date and HOUR).
func TestDecodeTakenColumnNames(t *testing.T) {
	columnar := ordered(t, "cpu", "time", nowMs, "TIME", "t", "Date", "d", "HOUR", 7, "hour_x", 8,
		"usage", 1.5, "usage_value", 2, "Usage", 2.5, "USAGE_VALUE2", 3)
	rows := pack(t, []any{
		row("cpu", nowMs, map[string]any{"TIME": "t", "hour": 7}, map[string]any{"Date": "d"}),
		row("cpu", nowMs, map[string]any{"TIME": "t2", "Hour": 9}, nil),
	})
	for name, tt := range map[string]struct {
		body []byte
		want []string
	}{
		"columnar": {columnar, []string{"time", "TIME_value", "Date_value", "HOUR_value", "hour_x", "usage", "usage_value", "Usage_value_value", "USAGE_VALUE2"}},
		"rows":     {rows, []string{"time", "Date_value", "TIME_value", "hour_value", "Hour_value_value"}},
	} {
		t.Run(name, func(t *testing.T) {
			ms, err := Decode(tt.body)
			require.NoError(t, err)
			require.Len(t, ms, 1)
			rec := ms[0].Record(memory.NewGoAllocator())
			defer rec.Release()
			assert.ElementsMatch(t, tt.want, fieldNames(rec.Schema()))
		})
	}
}

// TestDecodeRunsOfValues: a column's values are read in runs while they
// keep to its kind and fit the window (source.run); whatever breaks a run
// (another width, a null, a long string, a bad value) is read value by
// value, with the same values and the same errors, naming the same row.
func TestDecodeRunsOfValues(t *testing.T) {
	long := strings.Repeat("é", 200) // str 16
	times := func(n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = nowMs + int64(i)
		}
		return out
	}
	t.Run("values", func(t *testing.T) {
		ints := []any{1, -1, 200, -100, 60_000, -30_000, 4_000_000_000, -2_000_000_000, uint64(math.MaxInt64), int64(math.MinInt64), nil, 7, 8}
		floats := []any{1.5, float32(2.5), 3.25, 4, 5.5, nil, 6.5}
		strs := []any{"a", "bb", strings.Repeat("x", 40), long, "c", nil, "d", ""}
		ms, err := Decode(pack(t, obj("m", map[string]any{
			"time": times(len(ints)), "i": ints,
			"f": append(floats, make([]any, len(ints)-len(floats))...),
			"s": append(strs, make([]any, len(ints)-len(strs))...),
		})))
		require.NoError(t, err)
		cols := map[string]*Column{}
		for i := range ms[0].Columns {
			cols[ms[0].Columns[i].Name] = &ms[0].Columns[i]
		}
		assert.Equal(t, []int64{1, -1, 200, -100, 60_000, -30_000, 4_000_000_000, -2_000_000_000, math.MaxInt64, math.MinInt64, 0, 7, 8}, cols["i"].Ints)
		assert.Equal(t, []float64{1.5, 2.5, 3.25, 4, 5.5, 0, 6.5, 0, 0, 0, 0, 0, 0}, cols["f"].Floats)
		assert.Equal(t, []string{"a", "bb", strings.Repeat("x", 40), long, "c", "", "d", "", "", "", "", "", ""}, cols["s"].Strings())
		assert.Equal(t, []bool{false, false, false, false, false, true, false, false, true, true, true, true, true}, cols["s"].Null)
		for _, c := range cols {
			assert.Equal(t, len(ints), c.Rows(), c.Name)
		}
	})
	for _, tt := range []struct {
		name   string
		values any
		msg    string
	}{
		{"NaN after a run", []float64{1, 2, 3, 4, 5, math.NaN(), 7}, `column "v" row 5: NaN`},
		{"infinity after a run", []any{1.5, 2.5, float32(math.Inf(1))}, `column "v" row 2: NaN and infinities`},
		{"uint 64 past int 64 after a run", []any{1, 2, 3, uint64(math.MaxInt64) + 1, 5}, `column "v" row 3: 9223372036854775808 does not fit`},
		{"a string among ints after a run", []any{1, 2, 3, "x", 5}, `column "v" row 3: a string among int values`},
		{"an int among strings after a run", []any{"a", "b", "c", 4}, `column "v" row 3: a int among string values`},
		{"invalid UTF-8 after a run", []string{"a", "b", "c", "\xff", "e"}, `column "v" row 3: string is not valid UTF-8`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := reflectLen(tt.values)
			_, err := Decode(pack(t, obj("cpu", map[string]any{"time": times(n), "v": tt.values})))
			require.ErrorIs(t, err, ErrInput)
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
}

func reflectLen(v any) int {
	switch v := v.(type) {
	case []float64:
		return len(v)
	case []string:
		return len(v)
	case []any:
		return len(v)
	}
	panic("unknown slice")
}

// TestStringColumnsAreAllocatedOnce: a string column of a body held whole
// gets its bytes in one allocation of their size, whatever the lengths of
// its first values, and the budget counts that allocation alone.
func TestStringColumnsAreAllocatedOnce(t *testing.T) {
	strs := make([]any, 1000)
	size := 0
	for i := range strs {
		s := strings.Repeat("x", 10+i%90) // short first values, longer later
		if i%100 == 0 {
			strs[i] = nil
			continue
		}
		strs[i] = s
		size += len(s)
	}
	times := make([]int64, len(strs))
	for i := range times {
		times[i] = nowMs + int64(i)
	}
	body := pack(t, obj("cpu", map[string]any{"time": times, "s": strs}))
	b := NewBudget(0)
	ms, err := DecodeWithin(body, b)
	require.NoError(t, err)
	s := ms[0].Columns[0]
	assert.Equal(t, size, len(s.Data))
	assert.Equal(t, size, cap(s.Data), "allocated at its size")
	assert.Less(t, b.Used(), int64(size)*5/4+int64(len(times))*(8+4+1)+4096, "the bytes charged once")
}
