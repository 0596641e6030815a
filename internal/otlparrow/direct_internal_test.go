package otlparrow

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// Rendering a record's attributes straight into the columns must give the
// rows the rendered arena gives, also when a row has duplicate keys (taken
// back and rendered again) between rows that have none.
func TestAppendAttrsMatchesRendered(t *testing.T) {
	maps := map[string]func(pcommon.Map){
		"empty": func(pcommon.Map) {},
		"strings": func(m pcommon.Map) {
			m.PutStr("http.request.method", "GET")
			m.PutStr("url.path", "/a\xffb")
		},
		"every type": func(m pcommon.Map) {
			m.PutInt("i", -42)
			m.PutDouble("d", 0.1)
			m.PutBool("b", true)
			m.PutEmptyBytes("raw").FromRaw([]byte{0xff, 0})
			m.PutEmptySlice("s").AppendEmpty().SetStr("x")
			m.PutEmptyMap("m").PutInt("n", 1)
			m.PutEmpty("nil")
		},
		"ints at the extremes": func(m pcommon.Map) {
			m.PutInt("min", math.MinInt64)
			m.PutInt("max", math.MaxInt64)
			m.PutInt("zero", 0)
		},
		// The typed entries are appended to the types map before the
		// invalid value sends the row to the arena: they must be taken back.
		"invalid value after typed values": func(m pcommon.Map) {
			m.PutInt("i", 7)
			m.PutEmptyMap("m").PutStr("k", "v")
			m.PutStr("s", "bad\xff")
		},
		"duplicates after UTF-8 repair": func(m pcommon.Map) {
			m.PutInt("k\xfe", 1)
			m.PutStr("a", "b")
			m.PutInt("k\xff", 2)
		},
	}
	for _, n := range []int{smallSet, 40} {
		maps[fmt.Sprint(n, " unique keys")] = func(m pcommon.Map) {
			for i := range n {
				m.PutInt(fmt.Sprint("key.", i), int64(i))
			}
		}
		maps[fmt.Sprint(n, " keys, the last two equal after UTF-8 repair")] = func(m pcommon.Map) {
			for i := range n - 2 {
				m.PutStr(fmt.Sprint("key.", i), "v")
			}
			m.PutInt("dup\xfe", 1)
			m.PutInt("dup\xff", 2)
		}
	}
	for name, fill := range maps {
		t.Run(name, func(t *testing.T) {
			m := pcommon.NewMap()
			fill(m)
			plain := pcommon.NewMap()
			plain.PutStr("before", "and after")
			var direct, arena converter
			gotCols, wantCols := attrCols{newMapCol(), newMapCol()}, attrCols{newMapCol(), newMapCol()}
			for _, row := range []pcommon.Map{plain, m, plain} {
				direct.appendAttrs(row, gotCols)
				arena.rec.reset(row)
				arena.rec.appendTo(wantCols)
			}
			mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
			mt.SetItemNullable(false)
			for i, pair := range [][2]*mapCol{{gotCols.text, wantCols.text}, {gotCols.types, wantCols.types}} {
				got, want := pair[0].newArray(mt), pair[1].newArray(mt)
				assert.True(t, array.Equal(want, got), "map %d: got %v, want %v", i, got, want)
				got.Release()
				want.Release()
			}
		})
	}
}

// The direct path checks a row's UTF-8 in one pass per child and skips the
// key checks when a row repeats the keys of the row before it: rows that
// only those shortcuts could get wrong must still give the arena's rows.
func TestAppendAttrsRowChecks(t *testing.T) {
	// mapOf keeps duplicate keys, as pdata does when the wire has them
	// (Map.PutStr would replace).
	mapOf := func(kv ...string) pcommon.Map {
		var attrs []string
		for i := 0; i < len(kv); i += 2 {
			k, err := json.Marshal(kv[i])
			require.NoError(t, err)
			v, err := json.Marshal(kv[i+1])
			require.NoError(t, err)
			attrs = append(attrs, fmt.Sprintf(`{"key":%s,"value":{"stringValue":%s}}`, k, v))
		}
		td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(
			`{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":[` + strings.Join(attrs, ",") + `]}]}]}]}`))
		require.NoError(t, err)
		m := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
		require.Equal(t, len(kv)/2, m.Len())
		return m
	}
	valid := mapOf("a", "1", "b", "2")
	tests := map[string][]pcommon.Map{
		// "\xc3" then "\xa9": each invalid, together a valid "é".
		"a character split between two keys":     {valid, mapOf("a\xc3", "1", "\xa9b", "2"), valid},
		"a character split between two values":   {valid, mapOf("a", "x\xc3", "b", "\xa9y"), valid},
		"a character split between key and row":  {mapOf("k", "v\xc3"), mapOf("\xa9", "v")},
		"invalid value under repeated keys":      {valid, mapOf("a", "1\xff", "b", "2"), valid, valid},
		"repeated rows with duplicate keys":      {mapOf("k\xfe", "1", "k\xff", "2"), mapOf("k\xfe", "1", "k\xff", "2"), valid},
		"repeated keys of a row with duplicates": {mapOf("k", "1", "k", "2"), mapOf("k", "1", "k", "2")},
		"repeated lengths, other keys":           {valid, mapOf("c", "1", "d", "2"), mapOf("c", "1", "c", "2")},
		"repeated valid rows":                    {valid, valid, valid},
	}
	mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	mt.SetItemNullable(false)
	for name, rows := range tests {
		t.Run(name, func(t *testing.T) {
			var direct, arena converter
			gotCols, wantCols := attrCols{newMapCol(), newMapCol()}, attrCols{newMapCol(), newMapCol()}
			for _, row := range rows {
				direct.appendAttrs(row, gotCols)
				arena.rec.reset(row)
				arena.rec.appendTo(wantCols)
			}
			for i, pair := range [][2]*mapCol{{gotCols.text, wantCols.text}, {gotCols.types, wantCols.types}} {
				got, want := pair[0].newArray(mt), pair[1].newArray(mt)
				assert.True(t, array.Equal(want, got), "map %d: got %v, want %v", i, got, want)
				got.Release()
				want.Release()
			}
		})
	}
}

// A column of appendValidUTF8 rows is checked when it is cut; the rows must
// come out as schema.AppendValidUTF8 renders each value.
func TestStrColMakesRowsValidAtCut(t *testing.T) {
	tests := map[string][]string{
		"valid":                         {"a", "", "é", "span"},
		"one invalid":                   {"a", "b\xffc", "d"},
		"a character split across rows": {"x\xc3", "\xa9y"},
		"invalid at the end":            {"ok", "\xe2\x82"},
	}
	for name, vals := range tests {
		t.Run(name, func(t *testing.T) {
			c := newStrCol()
			var want []string
			for i, v := range vals {
				c.appendValidUTF8(v)
				want = append(want, string(schema.AppendValidUTF8(nil, v)))
				if i == 0 {
					c.appendNull()
					want = append(want, "(null)")
				}
			}
			arr := c.newArray(arrow.BinaryTypes.String).(*array.String)
			defer arr.Release()
			var got []string
			for i := range arr.Len() {
				if arr.IsNull(i) {
					got = append(got, "(null)")
				} else {
					got = append(got, arr.Value(i))
				}
			}
			assert.Equal(t, want, got)
		})
	}
}

// addRepeat sets and clears a byte at a time; it must give the bitmap and
// null count of adding its rows one by one, across byte boundaries and
// with the first null anywhere.
func TestValidityAddRepeatMatchesAdd(t *testing.T) {
	type run struct {
		n     int
		valid bool
	}
	tests := map[string][]run{
		"only valid":                  {{5, true}, {20, true}},
		"nulls first":                 {{3, false}, {17, true}, {1, false}},
		"first null mid-byte":         {{13, true}, {9, false}, {30, true}},
		"first null on a byte border": {{16, true}, {8, false}, {8, true}, {7, false}},
		"long runs":                   {{1, true}, {100, false}, {100, true}, {3, false}, {64, true}},
		"empty runs":                  {{0, false}, {4, true}, {0, true}, {0, false}, {2, false}},
	}
	for name, runs := range tests {
		t.Run(name, func(t *testing.T) {
			var bulk, one validity
			i := 0
			for _, r := range runs {
				bulk.addRepeat(i, r.n, r.valid)
				for j := range r.n {
					one.add(i+j, r.valid)
				}
				i += r.n
			}
			assert.Equal(t, one.nulls, bulk.nulls)
			if one.bits == nil {
				assert.Nil(t, bulk.bits)
				return
			}
			require.Len(t, bulk.bits, len(one.bits))
			assert.Equal(t, one.bits, bulk.bits)
		})
	}
}
