package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// BenchmarkAppendAll measures acknowledged requests (WAL write and group
// commit fsync) by batches per request and rows per batch, from 8
// concurrent clients as the receiver has them.
func BenchmarkAppendAll(b *testing.B) {
	for _, size := range []struct{ batches, rows int }{{1, 100}, {8, 100}, {1, 1000}} {
		b.Run(fmt.Sprintf("batches=%d/rows=%d", size.batches, size.rows), func(b *testing.B) {
			s, err := Open(Options{DataDir: b.TempDir(), Logger: quiet, FlushInterval: time.Hour, MaxBufferBytes: 1 << 40, FlushBytes: 1 << 40})
			require.NoError(b, err)
			defer s.Close()
			tbl, err := LookupTable(schema.TableLogs)
			require.NoError(b, err)
			times := make([]time.Time, size.rows)
			for i := range times {
				times[i] = t0
			}
			var batches []Batch
			var bytes int64
			for i := range size.batches {
				rec, ipc := storagetest.LogBatch(b, fmt.Sprint(i), times...)
				defer rec.Release()
				batches = append(batches, Batch{ID: NoDedup, Database: "default", Table: tbl, IPC: ipc, Rec: rec})
				bytes += int64(len(ipc))
			}
			b.SetBytes(bytes)
			b.ReportAllocs()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.AppendAll(context.Background(), batches); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			// Flushes are out of the measure: they would only add noise.
		})
	}
}
