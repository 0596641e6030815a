package arcmsgpack

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"io"
	"math"
	"os"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// allocated is the heap a call allocates, garbage included: an upper bound
// of its peak heap.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// Bodies that cost far more decoded than sent: one-byte values that widen
// to eight, length prefixes that claim billions, many tiny columns or rows.
func oneByteInts(n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("m")
	e.EncodeString("cpu")
	e.EncodeString("columns")
	e.EncodeMapLen(2)
	e.EncodeString("v")
	e.EncodeArrayLen(n)
	for range n {
		e.EncodeInt(1)
	}
	e.EncodeString("time") // one value: a length mismatch, refused at the end
	e.EncodeArrayLen(1)
	e.EncodeInt(nowMs)
	return buf.Bytes()
}

func claimsMore(n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("m")
	e.EncodeString("cpu")
	e.EncodeString("columns")
	e.EncodeMapLen(1)
	e.EncodeString("time")
	e.EncodeArrayLen(math.MaxInt32)
	for range n {
		e.EncodeInt(1)
	}
	return buf.Bytes()
}

func tinyColumns(n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("m")
	e.EncodeString("cpu")
	e.EncodeString("columns")
	e.EncodeMapLen(n + 1)
	e.EncodeString("time")
	e.Encode([]int64{nowMs})
	for i := range n {
		e.EncodeString(fmt.Sprintf("c%d", i))
		e.EncodeArrayLen(1)
		e.EncodeNil()
	}
	return buf.Bytes()
}

// claimsMoreStrings is a string column whose length prefix claims 2^31
// values, followed by n 32-byte strings.
func claimsMoreStrings(n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeMapLen(2)
	e.EncodeString("m")
	e.EncodeString("cpu")
	e.EncodeString("columns")
	e.EncodeMapLen(1)
	e.EncodeString("s")
	e.EncodeArrayLen(math.MaxInt32)
	for i := range n {
		e.EncodeString(fmt.Sprintf("%032x", i))
	}
	return buf.Bytes()
}

func tinyRows(n int) []byte {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.EncodeArrayLen(n)
	for i := range n {
		e.EncodeMapLen(2)
		e.EncodeString("m")
		e.EncodeString("c")
		e.EncodeString("fields")
		e.EncodeMapLen(1)
		e.EncodeString(fmt.Sprintf("f%d", i%1000))
		e.EncodeInt(1)
	}
	return buf.Bytes()
}

// TestDecodeMemoryIsBounded is the regression test of a request's memory:
// the decoder used to size slices from length prefixes and the whole body,
// so a small body could cost gigabytes. Now every allocation is charged to
// the request's budget first, and a request past it stops there.
func TestDecodeMemoryIsBounded(t *testing.T) {
	const limit = 4 << 20
	tests := []struct {
		name string
		body []byte
	}{
		{"one-byte ints widen to eight", oneByteInts(1 << 20)},
		{"a length prefix claims 2^31 values", claimsMore(1 << 20)},
		{"a length prefix claims 2^31 strings", claimsMoreStrings(1 << 18)},
		{"100k tiny columns", tinyColumns(100_000)},
		{"200k tiny rows", tinyRows(200_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			got := allocated(func() { _, err = DecodeWithin(tt.body, NewBudget(limit)) })
			require.ErrorIs(t, err, ErrTooLarge)
			assert.Contains(t, err.Error(), "take more than 4194304 bytes")
			assert.Less(t, got, int64(3*limit), "allocated %d bytes for a %d-byte body", got, len(tt.body))
		})
	}
}

// TestDecodeMemoryOfValidBodies: what a request within its budget
// allocates is a small multiple of what the budget counted.
func TestDecodeMemoryOfValidBodies(t *testing.T) {
	for _, n := range []int{1_000, 100_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			time := make([]int64, n)
			for i := range time {
				time[i] = nowMs + int64(i)
			}
			strs := make([]string, n)
			for i := range strs {
				strs[i] = fmt.Sprintf("%032x", i) // read into the column's bytes, no string each
			}
			body := pack(t, obj("cpu", map[string]any{"time": time, "v": make([]int, n), "s": make([]string, n), "id": strs}))
			b := NewBudget(1 << 30)
			got := allocated(func() {
				_, err := DecodeWithin(body, b)
				require.NoError(t, err)
			})
			assert.Less(t, got, 2*b.Used()+64<<10, "allocated %d, budget counted %d", got, b.Used())
			assert.Less(t, b.Used(), int64(128*n+64<<10), "the budget counts what is decoded, not what is claimed")
		})
	}
}

// BenchmarkDecode reports allocated bytes per decoded byte (alloc/used),
// the guard against the decoder amplifying a request again.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{1_000, 100_000} {
		time := make([]int64, n)
		for i := range time {
			time[i] = nowMs + int64(i)
		}
		strs := make([]string, n)
		for i := range strs {
			strs[i] = fmt.Sprintf("host-%d", i%50)
		}
		columnar := pack(b, obj("cpu", map[string]any{"time": time, "v": make([]float64, n), "host": strs}))
		rows := make([]any, n)
		for i := range rows {
			rows[i] = row("cpu", time[i], map[string]any{"v": 1.5}, map[string]any{"host": strs[i]})
		}
		for name, body := range map[string][]byte{"columnar": columnar, "rows": pack(b, rows)} {
			b.Run(fmt.Sprintf("%s/%d", name, n), func(b *testing.B) { benchDecode(b, body, n) })
		}
	}
	b.Run("arc_logs/1000", func(b *testing.B) { benchDecode(b, arcLogsBody(b), 1000) })
}

func benchDecode(b *testing.B, body []byte, rows int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	var used int64
	cpu := benchcpu.Process()
	for b.Loop() {
		budget := NewBudget(1 << 30)
		ms, err := DecodeWithin(body, budget)
		if err != nil {
			b.Fatal(err)
		}
		used = budget.Used()
		rec := ms[0].Record(memory.DefaultAllocator)
		rec.Release()
	}
	b.ReportMetric(float64(used)/float64(len(body)), "used/body")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}

// TestRowsAreCharged: what gathering rows allocates (row tables, their
// maps and columns, garbage included) is charged to the budget, for row
// format payloads and for Rows' other users (line protocol), whether the
// rows are of many tiny measurements or of one wide one.
func TestRowsAreCharged(t *testing.T) {
	for _, shape := range []struct{ measurements, rows, fields int }{
		{90_000, 1, 1}, {1_000, 1, 10}, {1, 10_000, 10}, {100, 100, 100},
	} {
		t.Run(fmt.Sprintf("%d measurements of %d rows of %d fields", shape.measurements, shape.rows, shape.fields), func(t *testing.T) {
			names, fields := make([]string, shape.measurements), make([]string, shape.fields)
			for i := range names {
				names[i] = fmt.Sprintf("m%d", i)
			}
			for i := range fields {
				fields[i] = fmt.Sprintf("f%d", i)
			}
			b := NewBudget(1 << 30)
			got := allocated(func() {
				r := NewRows(b)
				for _, name := range names {
					for row := range shape.rows {
						require.NoError(t, r.Begin(name, int64(row)))
						for _, f := range fields {
							col, err := r.Field(f)
							require.NoError(t, err)
							require.NoError(t, col.AppendInt(1))
						}
						require.NoError(t, r.End())
					}
				}
				_ = r.Measurements()
			})
			assert.LessOrEqual(t, float64(got), raceAllocSlack*float64(b.Used()), "gathering rows allocated more than it charged")

			var recs []any
			for _, name := range names {
				for row := range shape.rows {
					fs := map[string]any{}
					for _, f := range fields {
						fs[f] = row
					}
					recs = append(recs, map[string]any{"m": name, "t": nowMs + int64(row), "fields": fs, "tags": map[string]any{"host": "a"}})
				}
			}
			body := pack(t, recs)
			b = NewBudget(1 << 30)
			got = allocated(func() {
				_, err := DecodeWithin(body, b)
				require.NoError(t, err)
			})
			assert.LessOrEqual(t, float64(got), raceAllocSlack*float64(b.Used()), "decoding rows allocated more than it charged")
		})
	}
}

// arcLogsGzip is a request of the load test's arc-logs scenario as its
// driver sends them (ShapeNew: 1 000 rows of application_logs, every row
// new, gzip level 1); receiver's benchmarks read it too.
const arcLogsGzip = "testdata/arc_logs_1000.msgpack.gz"

// arcLogsBody is arcLogsGzip decompressed.
func arcLogsBody(tb testing.TB) []byte {
	tb.Helper()
	gz, err := os.ReadFile(arcLogsGzip)
	require.NoError(tb, err)
	r, err := gzip.NewReader(bytes.NewReader(gz))
	require.NoError(tb, err)
	body, err := io.ReadAll(r)
	require.NoError(tb, err)
	return body
}
