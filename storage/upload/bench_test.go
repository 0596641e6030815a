package upload

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// BenchmarkUpload uploads one closed partition's file per iteration to a
// local versitygw, at the default part size and concurrency: one PutObject
// below 16 MiB, multipart above. MB/s is upload and verification on
// loopback (the server's fsyncs included), not a network's; concurrency 4
// beside the default 2 shows what more parts in flight buy.
func BenchmarkUpload(b *testing.B) {
	srv := s3test.Start(b)
	b.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	bucket, err := NewS3(context.Background(), S3Config{Endpoint: srv.Endpoint, Bucket: s3test.Bucket, Region: s3test.Region, PathStyle: true})
	require.NoError(b, err)
	for _, c := range []struct{ size, concurrency int }{{1 << 20, 2}, {8 << 20, 2}, {64 << 20, 2}, {64 << 20, 4}} {
		size := c.size
		b.Run(fmt.Sprintf("%dMiB/concurrency=%d", size>>20, c.concurrency), func(b *testing.B) {
			prefix := fmt.Sprintf("bench/%d-%d", size, c.concurrency)
			data := make([]byte, size)
			for i := range data {
				data[i] = byte(i * 7)
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			u, err := New(Config{Bucket: bucket, Prefix: prefix, Concurrency: c.concurrency})
			require.NoError(b, err)
			m := &manifest{Partition: "default/traces/date=2026-01-01/hour=1"}
			u.mf = manifests{dir: b.TempDir()}
			u.manifests = map[string]*manifest{}
			dir := b.TempDir()
			require.NoError(b, os.WriteFile(filepath.Join(dir, "f.parquet"), data, 0o644))
			b.ResetTimer()
			for b.Loop() {
				if _, err := u.uploadFile(context.Background(), m, dir, localFile{name: "f.parquet", size: int64(size)}); err != nil {
					b.Fatal(err)
				}
				m.Pending = nil
			}
		})
	}
}
