package wal

import (
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// osFS is the real file system, no faults.
type osFS struct{ faultFS }

func (*osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return os.OpenFile(name, flag, perm)
}

// BenchmarkCommit measures one group commit (Write of each request's
// record, then Commit) by requests per group and batch size, as the
// Flight receiver has them: a request is a 90-byte batch header and the
// batch's IPC stream. cpu-ns/op is the process's user+system CPU per
// group, which is what the sidecar pays; ns/op is dominated by the disk's
// fsync latency.
func BenchmarkCommit(b *testing.B) {
	for _, size := range []struct{ requests, batch int }{{1, 64 << 10}, {4, 256 << 10}, {16, 256 << 10}} {
		b.Run(fmt.Sprintf("requests=%d/batch=%dKiB", size.requests, size.batch>>10), func(b *testing.B) {
			w, err := Open(Options{FS: &osFS{}, Dir: b.TempDir(), Logger: quiet}, 1)
			require.NoError(b, err)
			defer w.Close()
			header := make([]byte, 90)
			body := make([]byte, size.batch)
			for i := range body {
				body[i] = byte(i * 7)
			}
			b.SetBytes(int64(size.requests * (len(header) + len(body))))
			b.ReportAllocs()
			cpu0 := benchcpu.Process()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for range size.requests {
					w.Write(header, body)
				}
				if err := w.Commit(); err != nil {
					b.Fatal(err)
				}
				if i%64 == 63 {
					b.StopTimer()
					_, err := w.Rotate()
					require.NoError(b, err)
					require.NoError(b, w.RemoveThrough(w.Seq()-1))
					b.StartTimer()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(benchcpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
