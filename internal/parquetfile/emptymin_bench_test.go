package parquetfile

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// emptyStringsRecord is a measurement record of n rows whose three
// string columns repeat 50 values each and, one row in share (0: never),
// the empty string; host has a null one row in 20.
func emptyStringsRecord(t testing.TB, n, share int) arrow.RecordBatch {
	t.Helper()
	as := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: schema.TimestampType},
		{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "status_message", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(i))
		for c := 1; c <= 3; c++ {
			v := fmt.Sprintf("value-%d-%d", c, r.IntN(50))
			if share > 0 && r.IntN(share) == 0 {
				v = ""
			}
			if c == 1 && r.IntN(20) == 0 {
				b.Field(c).AppendNull()
				continue
			}
			b.Field(c).(*array.StringBuilder).Append(v)
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkDictionaryWithEmptyStrings writes a compacted file (every
// column with statistics) of three dictionary string columns: without
// empty strings, with them (one value in four) and their min seeded, and
// with them written as plain strings for pqarrow to hash again.
func BenchmarkDictionaryWithEmptyStrings(b *testing.B) {
	for _, rows := range []int{10_000, 131_072} {
		for _, tc := range []struct {
			name   string
			share  int
			seeded bool
		}{{"no-empty", 0, true}, {"empty-seeded", 4, true}, {"empty-plain", 4, false}} {
			rec := emptyStringsRecord(b, rows, tc.share)
			ps, err := tableschema.Measurement("m", rec.Schema())
			require.NoError(b, err)
			b.Run(fmt.Sprintf("rows=%d/%s", rows, tc.name), func(b *testing.B) {
				b.ReportAllocs()
				defer func(old bool) { emptyMinSeeded = old }(emptyMinSeeded)
				emptyMinSeeded = tc.seeded
				for b.Loop() {
					w, err := NewWriter(discard{}, ps, rec.Schema(), Options{AllStatistics: true})
					require.NoError(b, err)
					require.NoError(b, w.Write(rec, nil))
					require.NoError(b, w.Close())
				}
			})
			rec.Release()
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
