package inflate_test

import (
	"bytes"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/inflate"
)

// BenchmarkGunzip decodes gzip-1 bodies of 1 000 rows of the Arc load
// test: arc_logs, arc_traces and arc_metrics as its payloads were until
// 2026-11-27 (cycled), the _new ones with every row new (random ids and
// messages, more literals). cpu-ns/op, the process's CPU time per body, is
// what to compare on a shared machine: ns/op counts the time the
// benchmark waits for a CPU.
func BenchmarkGunzip(b *testing.B) {
	for _, name := range []string{"arc_traces", "arc_logs", "arc_metrics", "arc_traces_new", "arc_logs_new"} {
		src, err := os.ReadFile(filepath.Join("testdata", name+".gz"))
		require.NoError(b, err)
		zr, err := gzip.NewReader(bytes.NewReader(src))
		require.NoError(b, err)
		want, err := io.ReadAll(zr)
		require.NoError(b, err)
		b.Run(name+"/inflate", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			buf := make([]byte, 0, inflate.OutputSize(src, 1<<30))
			cpu0 := benchcpu.Process()
			for b.Loop() {
				got, err := inflate.Gunzip(buf, src, 1<<30)
				if err != nil || len(got) != len(want) {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchcpu.Process()-cpu0)/float64(b.N), "cpu-ns/op")
		})
		b.Run(name+"/klauspost", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(want)))
			var out bytes.Buffer
			for b.Loop() {
				out.Reset()
				if err := zr.Reset(bytes.NewReader(src)); err != nil {
					b.Fatal(err)
				}
				if _, err := io.Copy(&out, zr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
