package iceberg

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/arc-otel/arc-otel/storage/upload"
)

// BenchmarkSharedCatalogCommits measures how many commits one table takes
// per second through one PostgreSQL catalog (a real server, the bucket on
// versitygw) as committers grow: each committer settles one new object of
// the same hour at a time, back to back, so every commit races the
// others'. b.N is the number of commits in all; conflicts/commit counts
// the attempts the catalog refused because another committer was first.
//
//	go test -run '^$' -bench SharedCatalogCommits -benchtime 64x ./storage/iceberg/
func BenchmarkSharedCatalogCommits(b *testing.B) {
	for _, committers := range []int{1, 2, 4, 8, 16, 32} {
		b.Run(fmt.Sprintf("committers=%d", committers), func(b *testing.B) {
			b.ReportAllocs()
			l := newSharedLake(b)
			hour := l.now.Truncate(time.Hour).Add(-3 * time.Hour)
			cms := make([]*Committer, committers)
			work := make([][]upload.StoredFile, committers)
			for i := range b.N {
				s := i % committers
				if cms[s] == nil {
					cms[s] = l.committer(filepath.Join(b.TempDir(), "data"))
				}
				e := &env{t: b, dir: cms[s].cfg.DataDir, now: l.now}
				work[s] = append(work[s], l.upload(e, hour, fmt.Sprintf("s%d-%d.parquet", s, i), rows(hour, 10, float64(i*10), "svc")))
			}
			var failed atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for s := range committers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, f := range work[s] {
						if err := cms[s].Settle(context.Background(), "default/cpu/"+rel(hour), []upload.StoredFile{f}, nil); err != nil {
							failed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			var conflicts float64
			for _, c := range cms {
				if c != nil {
					conflicts += testutil.ToFloat64(c.metrics.commits.WithLabelValues(resultConflict))
				}
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
			b.ReportMetric(conflicts/float64(b.N), "conflicts/commit")
			b.ReportMetric(float64(failed.Load()), "failed")
		})
	}
}
