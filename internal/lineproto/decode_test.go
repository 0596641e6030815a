package lineproto

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/storage"
)

const (
	now = int64(1_763_800_000_123_456) // a stored timestamp, in µs
	sec = int64(1_763_800_000)
)

func decode(t *testing.T, body string, prec Precision) []arcmsgpack.Measurement {
	t.Helper()
	res, err := Decode([]byte(body), prec, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err)
	require.Zero(t, res.Dropped, "%v", res.First)
	return res.Measurements
}

func TestPrecisions(t *testing.T) {
	tests := []struct {
		param string
		hours bool
		value int64
	}{
		{"", false, sec * 1e9}, {"ns", false, sec * 1e9}, {"n", true, sec * 1e9},
		{"us", false, sec * 1e6}, {"u", true, sec * 1e6}, {"ms", false, sec * 1e3}, {"s", false, sec},
		{"m", true, sec / 60}, {"h", true, sec / 3600},
	}
	for _, tt := range tests {
		t.Run(tt.param, func(t *testing.T) {
			p, err := ParsePrecision(tt.param, tt.hours)
			require.NoError(t, err)
			ms := decode(t, "cpu v=1 "+itoa(tt.value), p)
			assert.Equal(t, tt.value*int64(p)/1000, ms[0].Time[0], "stored in µs")
			assert.InDelta(t, sec*1e6, ms[0].Time[0], 3600e6)
		})
	}
	for _, bad := range []string{"m", "h", "x", "sec"} {
		_, err := ParsePrecision(bad, false)
		assert.Error(t, err, bad)
	}
	_, err := ParsePrecision("d", true)
	assert.ErrorContains(t, err, `invalid precision "d"`)
}

func itoa(v int64) string { return string(appendInt(nil, v)) }

func appendInt(b []byte, v int64) []byte {
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

// TestTypesAndEscaping decodes every field type and the escaping rules of
// the line protocol reference, and checks the columns Arc would make.
func TestTypesAndEscaping(t *testing.T) {
	body := `# a comment, then a blank line

cpu\,x,host=a\ b,re\=gion=eu\,west i=-3i,u=7u,f=1.5,s="say \"hi\"\\",b=t,B=FALSE 1763800000000000000
cpu\,x,host=c f=2,e=1e3 1763800000000000001
cpu\,x i=4i
`
	ms := decode(t, body, 1)
	require.Len(t, ms, 1)
	m := ms[0]
	assert.Equal(t, "cpu,x", m.Name)
	assert.Equal(t, []int64{1763800000000000, 1763800000000000, now}, m.Time,
		"stored in µs, nanoseconds truncated; a line without a timestamp is stamped now")
	rec := m.Record(memory.NewGoAllocator())
	defer rec.Release()
	col := func(name string) arrow.Array {
		i := rec.Schema().FieldIndices(name)
		require.Len(t, i, 1, name)
		return rec.Column(i[0])
	}
	assert.Equal(t, "a b", col("host").(*array.String).Value(0))
	assert.Equal(t, "eu,west", col("re=gion").(*array.String).Value(0))
	assert.True(t, col("re=gion").IsNull(1))
	assert.Equal(t, int64(-3), col("i").(*array.Int64).Value(0))
	assert.Equal(t, int64(4), col("i").(*array.Int64).Value(2))
	assert.Equal(t, int64(7), col("u").(*array.Int64).Value(0))
	assert.Equal(t, 2.0, col("f").(*array.Float64).Value(1))
	assert.Equal(t, 1000.0, col("e").(*array.Float64).Value(1))
	assert.Equal(t, `say "hi"\`, col("s").(*array.String).Value(0))
	assert.True(t, col("b").(*array.Boolean).Value(0))
	assert.False(t, col("B_value").(*array.Boolean).Value(0), "B differs from b only in case (schema.ColumnNames)")
}

func TestMeasurementsAndTagFieldClash(t *testing.T) {
	ms := decode(t, "cpu,host=a host=1i,v=1\nmem free=3i\ncpu,host=b v=2\n", 1)
	require.Len(t, ms, 2)
	assert.Equal(t, "cpu", ms[0].Name)
	assert.Equal(t, 2, ms[0].Rows())
	var names []string
	for _, c := range ms[0].Columns {
		names = append(names, c.Name)
	}
	assert.ElementsMatch(t, []string{"host", "host_value", "v"}, names, "a field named like a tag gets _value, as in Arc")
	assert.Equal(t, "mem", ms[1].Name)
}

// TestTagAfterFieldOfTheSameName: a tag named like a field of an earlier
// line is kept, and the field becomes <name>_value, as when the tag comes
// first; the line was dropped (a string among integers), or its value went
// into the field's column when that held strings.
func TestTagAfterFieldOfTheSameName(t *testing.T) {
	ms := decode(t, "cpu host=1i,v=1\ncpu,host=a v=2\ncpu host=3i\nmem s=\"x\"\nmem,s=t v=1\n", 1)
	require.Len(t, ms, 2)
	cols := func(m arcmsgpack.Measurement) map[string]string {
		rec := m.Record(memory.NewGoAllocator())
		defer rec.Release()
		out := map[string]string{}
		for i, f := range rec.Schema().Fields()[1:] {
			out[f.Name] = fmt.Sprint(rec.Column(i + 1))
		}
		return out
	}
	assert.Equal(t, map[string]string{"host_value": "[1 (null) 3]", "host": `[(null) "a" (null)]`, "v": "[1 2 (null)]"}, cols(ms[0]))
	assert.Equal(t, map[string]string{"s_value": `["x" (null)]`, "s": `[(null) "t"]`, "v": "[(null) 1]"}, cols(ms[1]))

	// A line dropped after its tag renamed the field gives the name back.
	res, err := Decode([]byte("cpu host=1i\ncpu,host=a w=1,w=2\ncpu host=2i\n"), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Dropped)
	require.Len(t, res.Measurements, 1)
	assert.Equal(t, map[string]string{"host": "[1 2]"}, cols(res.Measurements[0]))
}

// TestTakenNames: tags and fields named, in any case, like the timestamp
// or a partition key, or like another column but for case, are kept under
// <name>_value, as the MessagePack formats keep them (issue 31 item 6).
func TestTakenNames(t *testing.T) {
	ms := decode(t, "cpu,Date=d,hour=h time=1i,Hour=2i,usage=1,Usage=2\ncpu TIME=3i\n", 1)
	require.Len(t, ms, 1)
	var names []string
	for _, c := range ms[0].Columns {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Date_value", "hour_value", "time_value", "Hour_value_value", "usage", "Usage_value", "TIME_value_value"}, names)
}

// TestDropsBadLines: a bad line is dropped with its line number and
// reason, InfluxDB's words where it has them, and the good lines stay
// (issue 31 item 7: one bad line refused the whole body).
func TestDropsBadLines(t *testing.T) {
	tests := []struct {
		name, body string
		line       int64
		msg        string
	}{
		{"no fields", "cpu v=1\ncpu\n", 2, "unable to parse 'cpu': expected tag key or field"},
		{"bad value", "cpu v=1\n\ncpu v=abc\n", 3, "unable to parse 'cpu v=abc': field value has unrecognized type"},
		{"unterminated string", "cpu v=1\ncpu s=\"abc\n", 2, "unable to parse 'cpu s=\"abc'"},
		{"int then float", "cpu v=1i\ncpu v=2i\ncpu v=2.5\n", 3, `field type conflict: input field "v" on measurement "cpu" is type float, already exists as type integer (line 1)`},
		{"float then string", "cpu v=1\ncpu v=\"x\"\n", 2, `is type string, already exists as type float`},
		{"int then unsigned", "cpu v=1i\ncpu v=1u\n", 2, `is type unsigned, already exists as type integer`},
		{"unsigned too big", "cpu v=18446744073709551615u\ncpu v=1u\n", 1, "does not fit a signed 64-bit integer"},
		{"bad timestamp", "cpu v=1\ncpu v=1 12x\n", 2, "unable to parse 'cpu v=1 12x': invalid timestamp"},
		{"timestamp overflow", "cpu v=1 9223372036854775807\ncpu v=1 1\n", 1, "out of range for precision s"},
		{"same field twice", "cpu v=1,v=2\ncpu v=1\n", 1, `"v" appears twice in one row`},
		{"comment lines count", "# c\n# d\ncpu v=1i\ncpu v=1\n", 4, "field type conflict"},
		{"measurement name too long", "cpu v=1\ncpu" + strings.Repeat("m", 253) + " v=1\n", 2, "more than 255"},
		{"control character in a name", "cpu v=1\ncpu\x01 v=1\n", 2, "unable to parse 'cpu\x01 v=1'"},
		{"C1 control character in a name", "cpu v=1\ncpu\u0085 v=1\n", 2, "control character"},
		{"tag value not UTF-8", "cpu v=1\ncpu,host=\xff v=1\n", 2, "invalid utf-8"},
		{"string not UTF-8", "cpu v=1\ncpu s=\"\xff\"\n", 2, "invalid utf-8"},
		{"tag key too long", "cpu v=1\ncpu," + strings.Repeat("k", 256) + "=x v=1\n", 2, "longer than 255 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prec := Precision(1)
			if tt.name == "timestamp overflow" {
				prec = 1e9
			}
			res, err := Decode([]byte(tt.body), prec, now, arcmsgpack.NewBudget(0), storage.Limits{})
			require.NoError(t, err)
			assert.Equal(t, 1, res.Dropped)
			require.NotNil(t, res.First)
			assert.ErrorIs(t, res.First, ErrInput)
			assert.Equal(t, tt.line, res.First.Line, res.First.Error())
			assert.Contains(t, res.First.Error(), tt.msg)
			rows := 0
			for _, m := range res.Measurements {
				rows += m.Rows()
			}
			assert.Equal(t, strings.Count(tt.body, "cpu")-1, rows, "the good lines are kept")
		})
	}
	res, err := Decode([]byte("cpu v=\ncpu v=1i\ncpu v=1.5\n"), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Dropped, "every bad line is counted")
	assert.Equal(t, "line 1: unable to parse 'cpu v=': field value has unrecognized type", res.First.Error(), "the first is told")
	_, err = Decode([]byte("\n# only a comment\n"), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	assert.ErrorContains(t, err, "no line")
	res, err = Decode([]byte("cpu\nmem\n"), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err, "a body of bad lines is a body whose lines are all dropped")
	assert.Equal(t, 2, res.Dropped)
	assert.Empty(t, res.Measurements)
}

// TestDroppedLinesLeaveNoTrace: what a body with bad lines stores is what
// the body without them stores, whatever the bad lines brought before
// they failed (new measurements, columns, tags, values, field types).
func TestDroppedLinesLeaveNoTrace(t *testing.T) {
	good := []string{
		"cpu,host=a usage=1.5,n=1i 1763800000000000000",
		"cpu,host=b usage=2.5,fresh=2.5 1763800000000000001",
		"mem,host=a free=7i,note=\"x\" 1763800000000000002",
		"cpu,host=c,rack=r1 usage=3.5,n=2i,ok=t 1763800000000000003",
		"cpu,host=d usage=4.5,zone=5i 1763800000000000004", // a field named like a dropped line's tag
	}
	bad := []string{
		"cpu,host=z,zone=new usage=9.5,n=3i,extra=1,extra=2 1763800000000000009",     // a new tag and column, then a duplicate
		"newm,t=1 a=1i,a=2i 1763800000000000009",                                     // a new measurement
		"cpu,aaa=new," + strings.Repeat("k", 256) + "=x usage=1 1763800000000000009", // a name too long after a new tag
		"cpu,host=q,n=x usage=1,usage=2 1763800000000000009",                         // a tag that renames a field, then a duplicate
		"cpu,later=x fresh=1i,n=\"text\" 1763800000000000009",                        // a type conflict after a new field
		"cpu usage=", // a syntax error
	}
	var mixed []string
	for i, g := range good {
		mixed = append(mixed, bad[i%len(bad)], g)
	}
	mixed = append(mixed, bad...)
	want, err := Decode([]byte(strings.Join(good, "\n")), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err)
	got, err := Decode([]byte(strings.Join(mixed, "\n")), 1, now, arcmsgpack.NewBudget(0), storage.Limits{})
	require.NoError(t, err)
	assert.Equal(t, len(bad)+len(good), got.Dropped)
	require.Len(t, got.Measurements, len(want.Measurements))
	mem := memory.NewGoAllocator()
	for i := range want.Measurements {
		w, g := want.Measurements[i].Record(mem), got.Measurements[i].Record(mem)
		assert.True(t, array.RecordEqual(w, g), "%s:\nwant %v\ngot  %v", want.Measurements[i].Name, w, g)
		w.Release()
		g.Release()
	}
}

func TestBudget(t *testing.T) {
	var body []byte
	for range 20_000 {
		body = append(body, "cpu,host=abcdefgh v=1i,w=2,s=\"xyz\"\n"...)
	}
	_, err := Decode(body, 1, now, arcmsgpack.NewBudget(64<<10), storage.Limits{})
	require.ErrorIs(t, err, arcmsgpack.ErrTooLarge, "a body past its budget is refused whole, not dropped line by line")
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("cpu,host=a v=1i,f=2.5,s=\"x\",b=t 1763800000000000000\nmem free=1u\n"))
	f.Add([]byte("a\\ b,t\\=1=x\\,y f=\"a\\\"b\" 1\n# c\n\nb v=1"))
	f.Add([]byte("cpu,zone=z v=1i,w=1,w=2\ncpu v=1.5\ncpu,v=x u=1\ncpu s=\"\xff\"\nmem\ncpu,host=a v=2i"))
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, body []byte) {
		res, err := Decode(body, 1, now, arcmsgpack.NewBudget(1<<20), storage.Limits{})
		if err != nil {
			if !errors.Is(err, arcmsgpack.ErrTooLarge) {
				require.ErrorIs(t, err, ErrInput)
			}
			return
		}
		require.Equal(t, res.Dropped > 0, res.First != nil)
		for _, m := range res.Measurements {
			require.NotZero(t, m.Rows(), "a measurement only dropped lines started is gone")
			for _, c := range m.Columns {
				require.Equal(t, m.Rows(), c.Rows(), "column %q", c.Name)
			}
			rec := m.Record(mem)
			require.Equal(t, int64(m.Rows()), rec.NumRows())
			rec.Release()
		}
	})
}

// BenchmarkDecode decodes Telegraf-like bodies: cpu and mem lines with a
// few tags and fields.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		var body []byte
		for i := range n {
			body = fmt.Appendf(body, "cpu,cpu=cpu%d,host=web-%d usage_idle=%d.5,usage_user=1.25,usage_system=0.5 %d\n", i%8, i%20, i, now*1000+int64(i))
			body = fmt.Appendf(body, "mem,host=web-%d available=%di,used_percent=12.5,active=%du %d\n", i%20, i, i, now*1000+int64(i))
		}
		b.Run(fmt.Sprint(2*n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Decode(body, 1, now, arcmsgpack.NewBudget(0), storage.Limits{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLimitsDropTheLine: a line that no request could store (a value over
// MaxStringBytes, more columns than MaxColumns) is dropped like any bad
// line, and the body stores what the body without it stores. Limits a
// body passes only as a whole are left to the store path (413).
func TestLimitsDropTheLine(t *testing.T) {
	tests := []struct {
		name   string
		limits storage.Limits
		lines  []string
		bad    []int // the zero-based lines dropped
		msg    string
	}{
		{"long string field", storage.Limits{MaxStringBytes: 8},
			[]string{`m s="eight ch"`, `m s="nine char"`, `m s="ok"`}, []int{1},
			`field "s": a string of 9 bytes, the limit is 8 (-max-string-bytes)`},
		{"long tag value", storage.Limits{MaxStringBytes: 3},
			[]string{"m,host=abc v=1", "m,host=abcd v=2", "m,host=x v=3"}, []int{1},
			`tag "host": a value of 4 bytes, the limit is 3 (-max-string-bytes)`},
		{"a line wider than the limit", storage.Limits{MaxColumns: 3},
			[]string{"m a=1", "m,t=x b=2,c=3", "m a=4,b=5", "m c=6,d=7,e=8"}, []int{1, 3},
			`measurement "m": a line of 4 columns (time, tags and fields), the limit is 3 (-max-columns)`},
		{"columns past the limit only together", storage.Limits{MaxColumns: 3},
			[]string{"m a=1,b=2", "m c=3", "n d=4,e=5"}, nil, ""},
		{"partitions past the limit", storage.Limits{MaxPartitionsPerRequest: 1},
			[]string{"m v=1 0", "n v=2 0", "m v=3 3600000000000"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var good []string
			for i, l := range tt.lines {
				if !slices.Contains(tt.bad, i) {
					good = append(good, l)
				}
			}
			got, err := Decode([]byte(strings.Join(tt.lines, "\n")), 1, now, arcmsgpack.NewBudget(0), tt.limits)
			require.NoError(t, err)
			assert.Equal(t, len(tt.bad), got.Dropped)
			if len(tt.bad) > 0 {
				require.NotNil(t, got.First)
				assert.EqualValues(t, tt.bad[0]+1, got.First.Line)
				assert.Contains(t, got.First.Error(), tt.msg)
			}
			want, err := Decode([]byte(strings.Join(good, "\n")), 1, now, arcmsgpack.NewBudget(0), tt.limits)
			require.NoError(t, err)
			require.Zero(t, want.Dropped, "%v", want.First)
			require.Len(t, got.Measurements, len(want.Measurements))
			mem := memory.NewGoAllocator()
			for i := range want.Measurements {
				w, g := want.Measurements[i].Record(mem), got.Measurements[i].Record(mem)
				assert.True(t, array.RecordEqual(w, g), "%s:\nwant %v\ngot  %v", want.Measurements[i].Name, w, g)
				w.Release()
				g.Release()
			}
		})
	}
}
