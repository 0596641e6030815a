package parquetfile

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dictCases are values that a key of a string's length and first and last
// eight bytes alone would confuse: every length up to 40, strings that
// differ in one byte only (anywhere), messages that differ only in the
// middle, and the empty string.
func dictCases() [][]byte {
	var out [][]byte
	for n := 0; n <= 40; n++ {
		base := make([]byte, n)
		for i := range base {
			base[i] = 'a' + byte(i%26)
		}
		// The same value again, followed by other bytes in its buffer
		// (as in an Arrow buffer), and alone in one.
		out = append(out, base, append(append([]byte(nil), base...), "~~~~~~~~"...)[:n])
		for i := 0; i < n; i++ {
			v := append([]byte(nil), base...)
			v[i] = 'Z'
			out = append(out, v)
		}
	}
	for i := range 500 {
		out = append(out, fmt.Appendf(nil, "User %05d logged in from api-gateway", i))
	}
	return out
}

// The dictionary gives each distinct value the next index the first time
// it comes and the same index every time after, however alike the values.
func TestStringDictIndexesEveryValueOnce(t *testing.T) {
	var d stringDict
	defer d.release()
	for round := range 2 { // the second after a reset, in the kept table
		want := map[string]int32{}
		values := dictCases()
		r := rand.New(rand.NewPCG(1, uint64(round)))
		for range 3 {
			r.Shuffle(len(values), func(i, j int) { values[i], values[j] = values[j], values[i] })
			for _, v := range values {
				idx, ok := d.add(v, 0)
				require.True(t, ok)
				if w, seen := want[string(v)]; seen {
					require.Equal(t, w, idx, "%q", v)
				} else {
					require.Equal(t, int32(len(want)), idx, "%q is new", v)
					want[string(v)] = idx
				}
			}
		}
		dict := d.finish()
		require.Equal(t, len(want), dict.Len())
		for i := range dict.Len() {
			assert.Equal(t, int32(i), want[dict.Value(i)], "dictionary value %d", i)
		}
		dict.Release()
		d.reset()
	}
}

// Past its limit the dictionary refuses new values and still finds the
// ones it has.
func TestStringDictLimit(t *testing.T) {
	var d stringDict
	defer d.release()
	for i := range 10 {
		_, ok := d.add([]byte("v"+strconv.Itoa(i)), 10)
		require.True(t, ok)
	}
	_, ok := d.add([]byte("v10"), 10)
	assert.False(t, ok, "an 11th value past a limit of 10")
	idx, ok := d.add([]byte("v3"), 10)
	assert.True(t, ok)
	assert.Equal(t, int32(3), idx)
}

// A large first row group of ids gives its dictionary up after a quarter of
// its limit, as distinct; values drawn from as many as the limit allows
// keep theirs.
func TestDictionaryGivesUpOnIDsEarly(t *testing.T) {
	const rows = 1 << 17
	limit := dictLimit(rows)
	tests := []struct {
		name     string
		distinct int // values drawn from
		keep     bool
	}{
		{"ids", rows, false},
		{"as many values as the limit", limit, true},
		{"a handful of values", 5, true},
	}
	for _, tt := range tests {
		t.Run("integers/"+tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(tt.distinct)))
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for i := range rows {
				v := int64(i) * 7919
				if tt.distinct < rows {
					v = int64(r.IntN(tt.distinct)) * 7919
				}
				b.Append(v)
			}
			col := b.NewArray()
			b.Release()
			s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
			rec := array.NewRecordBatch(s, []arrow.Array{col}, rows)
			col.Release()
			defer rec.Release()

			d := newDictColumn("v", arrow.PrimitiveTypes.Int64)
			defer d.release()
			kept := d.build([]run{{rec: rec, start: 0, end: rows}}, 0, limit)
			assert.Equal(t, tt.keep, kept)
			if !tt.keep {
				assert.Equal(t, limit/4, d.size(), "values taken before giving up")
			}
			d.reset()
		})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(2, uint64(tt.distinct)))
			b := array.NewStringBuilder(memory.DefaultAllocator)
			for i := range rows {
				v := i
				if tt.distinct < rows {
					v = r.IntN(tt.distinct)
				}
				b.Append(fmt.Sprintf("%016x", uint64(v)*0x9e3779b97f4a7c15))
			}
			col := b.NewArray()
			b.Release()
			s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.BinaryTypes.String}}, nil)
			rec := array.NewRecordBatch(s, []arrow.Array{col}, rows)
			col.Release()
			defer rec.Release()

			var d dictColumn
			defer d.release()
			kept := d.build([]run{{rec: rec, start: 0, end: rows}}, 0, limit)
			assert.Equal(t, tt.keep, kept)
			assert.Equal(t, !tt.keep, d.distinct, "distinct")
			if !tt.keep {
				assert.Equal(t, limit/4, d.values.size(), "values taken before giving up")
			}
			if kept {
				d.dict.Release()
			}
			d.reset()
		})
	}
}

// BenchmarkStringDict adds values of a low-cardinality column (a few
// service names, methods, regions) and of ids to the dictionary, and to
// the Go map with a scan of the first eight values before it that the
// dictionary replaced.
//
//	go test ./internal/parquetfile/ -run '^$' -bench StringDict -cpu 1
func BenchmarkStringDict(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	sets := map[string][]string{
		"services": {"api-gateway", "auth-service", "user-service", "product-service", "order-service", "payment-service", "inventory-service", "notification-service"},
		"regions":  {"us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1"},
		"methods":  {"GET", "POST", "PUT", "DELETE"},
	}
	const n = 1 << 16
	for _, name := range []string{"methods", "regions", "services"} {
		values := make([][]byte, n)
		for i := range values {
			values[i] = []byte(sets[name][r.IntN(len(sets[name]))])
		}
		b.Run(name+"/table", func(b *testing.B) {
			b.ReportAllocs()
			var d stringDict
			defer d.release()
			for b.Loop() {
				for _, v := range values {
					d.add(v, 0)
				}
				d.reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
		b.Run(name+"/map", func(b *testing.B) {
			b.ReportAllocs()
			var d goMapDict
			for b.Loop() {
				for _, v := range values {
					d.add(unsafe.String(unsafe.SliceData(v), len(v)))
				}
				d.reset()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/value")
		})
	}
}

// goMapDict is the dictionary stringDict replaced, for BenchmarkStringDict.
type goMapDict struct {
	index  map[string]int32
	small  [8]string
	nsmall int
}

func (d *goMapDict) add(k string) int32 {
	if d.index == nil {
		d.index = make(map[string]int32, 256)
	}
	if len(d.index) <= len(d.small) {
		for i, v := range d.small[:d.nsmall] {
			if v == k {
				return int32(i)
			}
		}
	} else if idx, ok := d.index[k]; ok {
		return idx
	}
	idx := int32(len(d.index))
	d.index[k] = idx
	if d.nsmall < len(d.small) {
		d.small[d.nsmall] = k
		d.nsmall++
	}
	return idx
}

func (d *goMapDict) reset() {
	clear(d.index)
	d.nsmall = 0
}

// The integer dictionary, as the string one, gives each distinct value the
// next index once, past growing its table, zero and the extremes included,
// and refuses a value past its limit.
func TestIntDictIndexesEveryValueOnce(t *testing.T) {
	var d intDict
	defer d.release()
	values := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, 200, 404, 500}
	for i := range 5000 {
		// Values that differ only in their high bits too, which a hash
		// keeping the product's low bits would put in one slot.
		values = append(values, int64(i)*1_000_003-2_500_000_000, int64(i+1)<<48)
	}
	want := map[int64]int32{}
	r := rand.New(rand.NewPCG(4, 4))
	for range 2 {
		r.Shuffle(len(values), func(i, j int) { values[i], values[j] = values[j], values[i] })
		for _, v := range values {
			idx, ok := d.add(v, 0)
			require.True(t, ok)
			if w, seen := want[v]; seen {
				require.Equal(t, w, idx, "%d", v)
			} else {
				require.Equal(t, int32(len(want)), idx, "%d is new", v)
				want[v] = idx
			}
		}
	}
	dict := d.finish()
	defer dict.Release()
	require.Equal(t, len(want), dict.Len())
	for i := range dict.Len() {
		assert.Equal(t, int32(i), want[dict.Value(i)], "dictionary value %d", i)
	}
	_, ok := d.add(7, len(want))
	assert.False(t, ok, "a new value past the limit")
	idx, ok := d.add(values[0], len(want))
	assert.True(t, ok)
	assert.Equal(t, want[values[0]], idx)
}

// oneValue finds a run of one value repeated, and nothing else: not a run
// whose last value differs in its last byte, or whose values differ in
// length, or that repeats a pattern across values of other lengths.
func TestOneValue(t *testing.T) {
	repeat := func(vals ...string) strView {
		b := array.NewStringBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.Append("prefix") // the run starts past the array's first value
		b.AppendValues(vals, nil)
		a := b.NewStringArray()
		t.Cleanup(a.Release)
		return viewOf(a)
	}
	many := func(v string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		vals []string
		want bool
	}{
		{"one value", many("telemetrygen", 20), true},
		{"empty strings", many("", 20), true},
		{"one long value", many("a value longer than sixteen bytes", 20), true},
		{"last differs in its last byte", append(many("telemetrygen", 19), "telemetrygeN"), false},
		{"first differs", append([]string{"telemetrygeX"}, many("telemetrygen", 19)...), false},
		{"a longer value", append(many("ab", 19), "abab"), false},
		{"a shorter value", append(many("abab", 19), "ab"), false},
		{"two values of one length", append(many("GET", 10), many("PUT", 10)...), false},
		{"periodic bytes, other values", append(many("ab", 10), many("ba", 10)...), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, oneValue(repeat(tc.vals...), 1, 1+len(tc.vals)))
		})
	}
}

// Runs taken whole (all null, or all one value) give the same files as
// the same rows taken value by value: runs of one value that changes from
// record to record, runs of nulls, a run mixing nulls and values, runs of
// values that change per row, and row subsets.
func TestWholeRunsWriteTheSameFiles(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "service", Type: arrow.BinaryTypes.String},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "level", Type: arrow.BinaryTypes.String},
	}, nil)
	pqs := parquet.NewSchema("runs", parquet.Group{
		"time":    parquet.Timestamp(parquet.Microsecond),
		"service": parquet.Encoded(parquet.String(), &parquet.RLEDictionary),
		"host":    parquet.Optional(parquet.Encoded(parquet.String(), &parquet.RLEDictionary)),
		"level":   parquet.Encoded(parquet.String(), &parquet.RLEDictionary),
	})
	r := rand.New(rand.NewPCG(3, 3))
	var recs []arrow.RecordBatch
	for i := range 12 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, s)
		for j := range 1000 {
			b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i*1000 + j))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("service-", i%5))
			switch {
			case i%3 == 0: // no host in the batch
				b.Field(2).(*array.StringBuilder).AppendNull()
			case i%3 == 1 && j%10 == 0: // some rows without
				b.Field(2).(*array.StringBuilder).AppendNull()
			default:
				b.Field(2).(*array.StringBuilder).Append(fmt.Sprint("host-", i%4))
			}
			b.Field(3).(*array.StringBuilder).Append([]string{"INFO", "WARN", "ERROR"}[r.IntN(3)])
		}
		recs = append(recs, b.NewRecordBatch())
		b.Release()
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	write := func(whole bool) []byte {
		prev := wholeRuns
		wholeRuns = whole
		defer func() { wholeRuns = prev }()
		var buf bytes.Buffer
		w, err := NewWriter(&buf, pqs, s, Options{RowGroupRows: 5000})
		require.NoError(t, err)
		for i, rec := range recs {
			var rows []int32
			if i == 4 { // runs of 40 and 3 rows
				for j := range int32(40) {
					rows = append(rows, 100+j)
				}
				rows = append(rows, 500, 501, 502)
			}
			require.NoError(t, w.Write(rec, rows))
		}
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	assert.True(t, bytes.Equal(write(false), write(true)), "files differ")
}
