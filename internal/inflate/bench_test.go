package inflate_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/inflate"
)

func BenchmarkGunzip(b *testing.B) {
	for _, name := range []string{"arc_traces", "arc_logs", "arc_metrics"} {
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
			for b.Loop() {
				got, err := inflate.Gunzip(buf, src, 1<<30)
				if err != nil || len(got) != len(want) {
					b.Fatal(err)
				}
			}
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
