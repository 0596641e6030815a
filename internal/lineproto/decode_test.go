package lineproto

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

const (
	now = int64(1_763_800_000_123_456_789)
	sec = int64(1_763_800_000)
)

func decode(t *testing.T, body string, prec Precision) []arcmsgpack.Measurement {
	t.Helper()
	ms, err := Decode([]byte(body), prec, now, arcmsgpack.NewBudget(0))
	require.NoError(t, err)
	return ms
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
			assert.Equal(t, tt.value*int64(p), ms[0].Time[0])
			assert.InDelta(t, sec*1e9, ms[0].Time[0], 3600e9)
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
	assert.Equal(t, []int64{1763800000000000000, 1763800000000000001, now}, m.Time, "a line without a timestamp is stamped now")
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

func TestRejects(t *testing.T) {
	tests := []struct {
		name, body string
		line       int64
		msg        string
	}{
		{"no fields", "cpu v=1\ncpu\n", 2, "expected tag key or field"},
		{"bad value", "cpu v=1\n\ncpu v=abc\n", 3, "field value has unrecognized type"},
		{"unterminated string", "cpu v=1\ncpu s=\"abc\n", 2, ""},
		{"int then float", "cpu v=1i\ncpu v=2i\ncpu v=2.5\n", 3, `field type conflict: input field "v" on measurement "cpu" is type float, already exists as type integer (line 1)`},
		{"float then string", "cpu v=1\ncpu v=\"x\"\n", 2, `is type string, already exists as type float`},
		{"int then unsigned", "cpu v=1i\ncpu v=1u\n", 2, `is type unsigned, already exists as type integer`},
		{"unsigned too big", "cpu v=18446744073709551615u\n", 1, "does not fit a signed 64-bit integer"},
		{"bad timestamp", "cpu v=1\ncpu v=1 12x\n", 2, "timestamp"},
		{"timestamp overflow", "cpu v=1 9223372036854775807\n", 1, "out of range for precision s"},
		{"same field twice", "cpu v=1,v=2\n", 1, `"v" appears twice in one row`},
		{"comment lines count", "# c\n# d\ncpu v=1i\ncpu v=1\n", 4, "field type conflict"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prec := Precision(1)
			if tt.name == "timestamp overflow" {
				prec = 1e9
			}
			_, err := Decode([]byte(tt.body), prec, now, arcmsgpack.NewBudget(0))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInput)
			var le *Error
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.line, le.Line, err.Error())
			assert.Contains(t, err.Error(), tt.msg)
		})
	}
	_, err := Decode([]byte("\n# only a comment\n"), 1, now, arcmsgpack.NewBudget(0))
	assert.ErrorContains(t, err, "no line")
}

func TestBudget(t *testing.T) {
	var body []byte
	for range 20_000 {
		body = append(body, "cpu,host=abcdefgh v=1i,w=2,s=\"xyz\"\n"...)
	}
	_, err := Decode(body, 1, now, arcmsgpack.NewBudget(64<<10))
	require.ErrorIs(t, err, arcmsgpack.ErrTooLarge)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("cpu,host=a v=1i,f=2.5,s=\"x\",b=t 1763800000000000000\nmem free=1u\n"))
	f.Add([]byte("a\\ b,t\\=1=x\\,y f=\"a\\\"b\" 1\n# c\n\nb v=1"))
	mem := memory.NewGoAllocator()
	f.Fuzz(func(t *testing.T, body []byte) {
		ms, err := Decode(body, 1, now, arcmsgpack.NewBudget(1<<20))
		if err != nil {
			if !errors.Is(err, arcmsgpack.ErrTooLarge) {
				require.ErrorIs(t, err, ErrInput)
			}
			return
		}
		for _, m := range ms {
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
			body = fmt.Appendf(body, "cpu,cpu=cpu%d,host=web-%d usage_idle=%d.5,usage_user=1.25,usage_system=0.5 %d\n", i%8, i%20, i, now+int64(i))
			body = fmt.Appendf(body, "mem,host=web-%d available=%di,used_percent=12.5,active=%du %d\n", i%20, i, i, now+int64(i))
		}
		b.Run(fmt.Sprint(2*n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := Decode(body, 1, now, arcmsgpack.NewBudget(0)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
