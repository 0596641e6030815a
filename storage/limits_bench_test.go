package storage

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// BenchmarkCheckRequest measures the partition count of a request of one
// batch, by rows, all of one hour as the Arc API's batches mostly are.
func BenchmarkCheckRequest(b *testing.B) {
	tbl, err := LookupTable("logs")
	require.NoError(b, err)
	for _, rows := range []int{100, 1000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			times := make([]time.Time, rows)
			for i := range times {
				times[i] = t0.Add(-time.Duration(i) * time.Millisecond)
			}
			rec, _ := storagetest.LogBatch(b, "x", times...)
			defer rec.Release()
			batches := []Batch{{Database: "default", Table: tbl, Rec: rec}}
			b.ReportAllocs()
			for b.Loop() {
				if err := (Limits{}).CheckRequest(batches); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
