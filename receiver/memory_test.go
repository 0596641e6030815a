package receiver

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

// allocatedBy is what f allocates, garbage included: an upper bound of
// the heap it takes.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// manyMeasurements are the bodies of issue 31 item 3: n one-row
// measurements, each its own partition.
func manyMeasurementsRows(t testing.TB, n int) []byte {
	rows := make([]map[string]any, n)
	now := time.Now().UnixMilli()
	for i := range rows {
		rows[i] = map[string]any{"m": fmt.Sprintf("m%d", i), "t": now, "fields": map[string]any{"v": 1}}
	}
	return gzipped(t, payload(t, rows))
}

func manyMeasurementsLines(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m%d v=1i\n", i)
	}
	return []byte(b.String())
}

// TestManyMeasurementsAreRefusedBeforeTheyAreBuilt is the regression test
// of issue 31 item 3: a small body of many one-row measurements, each a
// partition, used to have every measurement's record, Parquet schema and
// IPC stream built before the partitions were counted (90 000 of them:
// 600 MiB and 15 s of CPU before the 413). Now the partitions are counted
// on the decoded times first.
func TestManyMeasurementsAreRefusedBeforeTheyAreBuilt(t *testing.T) {
	for _, tt := range []struct {
		name, path string
		body       []byte
		limit      string // named in the answer
	}{
		// Issue 31's bodies: their decoding alone passes the budget.
		{"90 000, MessagePack row format, gzip", PathWriteMsgpack, manyMeasurementsRows(t, 90_000), "-max-decoded-memory"},
		{"90 000, line protocol", PathWriteLineProtocol, manyMeasurementsLines(90_000), "-max-decoded-memory"},
		{"30 000, MessagePack row format, gzip", PathWriteMsgpack, manyMeasurementsRows(t, 30_000), "more than 256 partitions (measurement or table, and UTC hour; -max-partitions-per-request)"},
		{"30 000, line protocol", PathWriteLineProtocol, manyMeasurementsLines(30_000), "more than 256 partitions (measurement or table, and UTC hour; -max-partitions-per-request)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newWriteFixture(t, nil, 0, 0, 0)
			var a answer
			allocated := allocatedBy(func() { a = f.send(t, tt.path, tt.body, nil) })
			assert.Equal(t, http.StatusRequestEntityTooLarge, a.status, "%v", a.body)
			assert.Contains(t, a.body["error"], tt.limit)
			// Decoding allocates what the budget counts, twice for a small
			// gzip body decoded whole that passes it (streaming decides
			// then); before the fix building 90 000 batches took 1.2 GiB.
			assert.Less(t, allocated, uint64(2*arcmsgpack.DefaultMaxBytes+16<<20), "a %d-byte body allocated %d MiB", len(tt.body), allocated>>20)
			t.Logf("a %d-byte body allocated %d MiB", len(tt.body), allocated>>20)
			require.Empty(t, f.rows(t))
		})
	}
}

// TestBuildingABatchIsCharged: what building a measurement's batch
// allocates (its schemas and arrays on its table's first use, its IPC
// stream) is charged to the request's budget first, whatever its shape.
func TestBuildingABatchIsCharged(t *testing.T) {
	h := &MsgpackHandler{Mem: memory.DefaultAllocator}
	now := time.Now().UnixMicro()
	for _, shape := range []struct{ columns, rows int }{{1, 1}, {10, 1}, {100, 1}, {1000, 1}, {10, 1000}, {1, 100_000}} {
		t.Run(fmt.Sprintf("columns=%d rows=%d", shape.columns, shape.rows), func(t *testing.T) {
			budget := arcmsgpack.NewBudget(1 << 30)
			rows := arcmsgpack.NewRows(budget)
			// A name of its own: its table is built, not found in the cache.
			name := fmt.Sprintf("build_%d_%d_%d", shape.columns, shape.rows, now)
			for r := range shape.rows {
				require.NoError(t, rows.Begin(name, now+int64(r)))
				for c := range shape.columns {
					col, err := rows.Field(fmt.Sprintf("f%d", c))
					require.NoError(t, err)
					require.NoError(t, col.AppendInt(int64(r)))
				}
				require.NoError(t, rows.End())
			}
			ms := rows.Measurements()
			used := budget.Used()
			allocated := allocatedBy(func() {
				b, err := h.batch("default", &ms[0], budget)
				require.NoError(t, err)
				b.Rec.Release()
			})
			charged := budget.Used() - used
			assert.LessOrEqual(t, int64(allocated), charged, "building allocated more than it charged")
			t.Logf("allocated %d, charged %d", allocated, charged)
		})
	}
}
