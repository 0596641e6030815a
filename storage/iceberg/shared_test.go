package iceberg

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/iceberg/pgtest"
	"github.com/arc-otel/arc-otel/storage/upload"
	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// sharedLake is a bucket on versitygw and an SQL catalog on a real
// PostgreSQL that several committers (sidecars with their own disks)
// share.
type sharedLake struct {
	t      testing.TB
	srv    *s3test.Server
	pg     *pgtest.Server
	prefix string
	now    time.Time
}

func newSharedLake(t testing.TB) *sharedLake {
	t.Helper()
	srv := s3test.Start(t)
	pg := pgtest.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return &sharedLake{t: t, srv: srv, pg: pg, prefix: "shared", now: time.Now().UTC()}
}

// committer is one sidecar's committer over the shared lake.
func (l *sharedLake) committer(dataDir string) *Committer {
	l.t.Helper()
	c, err := New(Config{DataDir: dataDir, Catalog: l.pg.URI, Logger: slog.New(slog.DiscardHandler),
		Bucket: &Bucket{Name: s3test.Bucket, Prefix: l.prefix, Props: BucketProps(l.srv.Endpoint, s3test.Region, true)}})
	require.NoError(l.t, err)
	l.t.Cleanup(c.Stop)
	return c
}

// upload writes a file of rows into dataDir's partition and puts the same
// bytes into the bucket, as the uploader would, returning what it stored.
func (l *sharedLake) upload(e *env, hour time.Time, name string, rs []row) upload.StoredFile {
	l.t.Helper()
	path := e.write("cpu", hour, name, rs, false)
	data, err := os.ReadFile(path)
	require.NoError(l.t, err)
	key := upload.Key(l.prefix, "default/cpu/"+rel(hour), name)
	_, err = l.srv.Client().PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(s3test.Bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	require.NoError(l.t, err)
	return upload.StoredFile{File: name, Key: key, Size: int64(len(data))}
}

// TestSharedCatalogConcurrentCommitters: committers of several sidecars
// (each its own data directory) commit their own objects into one table
// through one PostgreSQL catalog at the same time; the optimistic commits
// that collide are retried, and the table ends with every object once and
// every row once.
func TestSharedCatalogConcurrentCommitters(t *testing.T) {
	l := newSharedLake(t)
	const sidecars, files, perFile = 3, 8, 10
	hour := l.now.Truncate(time.Hour).Add(-3 * time.Hour)
	var want []row
	var keys []string
	var wg sync.WaitGroup
	cms := make([]*Committer, sidecars)
	errs := make([]error, sidecars)
	for s := range sidecars {
		e := &env{t: t, dir: filepath.Join(t.TempDir(), "data"), now: l.now}
		cms[s] = l.committer(e.dir)
		stored := make([]upload.StoredFile, files)
		for i := range stored {
			rs := rows(hour, perFile, float64((s*files+i)*perFile), fmt.Sprint("sidecar", s))
			want = append(want, rs...)
			stored[i] = l.upload(e, hour, fmt.Sprintf("s%d-%d.parquet", s, i), rs)
			keys = append(keys, "s3://"+s3test.Bucket+"/"+stored[i].Key)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range stored {
				// Each file is settled on its own: many small commits.
				if err := cms[s].Settle(context.Background(), "default/cpu/"+rel(hour), stored[:i+1], nil); err != nil {
					errs[s] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for s, err := range errs {
		require.NoError(t, err, "sidecar %d", s)
	}
	var conflicts float64
	for _, c := range cms {
		conflicts += testutil.ToFloat64(c.metrics.commits.WithLabelValues(resultConflict))
		assert.NoError(t, c.Ready())
	}
	t.Logf("%d commits, %v conflicts retried", sidecars*files, conflicts)

	reader := l.committer(filepath.Join(t.TempDir(), "reader"))
	tbl, err := reader.Table(context.Background(), "default", "cpu")
	require.NoError(t, err)
	slices.Sort(keys)
	assert.Equal(t, keys, livePaths(t, tbl), "every object once")
	got := scan(t, tbl)
	slices.SortFunc(want, func(a, b row) int {
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
	assert.Equal(t, want, got, "every row once")
}
