package upload_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/iceberg"
	"github.com/arc-otel/arc-otel/storage/upload"
	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// bucketLake is a data directory, its store, a bucket on a real versitygw,
// and the uploader and Iceberg committer of one sidecar process over them.
type bucketLake struct {
	t      *testing.T
	srv    *s3test.Server
	dir    string
	prefix string
	now    time.Time
	bucket upload.Bucket
	store  *storage.Store
	u      *upload.Uploader
	c      *iceberg.Committer
}

func newBucketLake(t *testing.T, srv *s3test.Server) *bucketLake {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	b, err := upload.NewS3(context.Background(), upload.S3Config{Endpoint: srv.Endpoint, Bucket: s3test.Bucket, Region: s3test.Region, PathStyle: true})
	require.NoError(t, err)
	l := &bucketLake{t: t, srv: srv, dir: filepath.Join(t.TempDir(), "data"), prefix: "lake/" + strings.NewReplacer("/", "_", "#", "_").Replace(t.Name()),
		now: time.Now(), bucket: b}
	s, err := storage.Open(storage.Options{DataDir: l.dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	l.store = s
	t.Cleanup(func() {
		l.stop()
		_ = s.Close()
	})
	return l
}

// start is a start of the sidecar: a new uploader and committer on the
// directory.
func (l *bucketLake) start(hook func(string) error, localRetention time.Duration) {
	l.t.Helper()
	c, err := iceberg.New(iceberg.Config{DataDir: l.dir, Logger: slog.New(slog.DiscardHandler),
		Bucket: &iceberg.Bucket{Name: s3test.Bucket, Prefix: l.prefix, Props: iceberg.BucketProps(l.srv.Endpoint, s3test.Region, true)}})
	require.NoError(l.t, err)
	u, err := upload.New(upload.Config{Bucket: l.bucket, Prefix: l.prefix, CompactMinAge: 10 * time.Minute, LocalRetention: localRetention,
		Table: c, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(l.t, err)
	require.NoError(l.t, u.LoadForTest(l.store, func() time.Time { return l.now }, hook))
	l.u, l.c = u, c
}

// stop is the process's end, as a SIGKILL leaves it: nothing cleaned up
// but the catalog's connection.
func (l *bucketLake) stop() {
	if l.c != nil {
		l.c.Stop()
		l.c = nil
	}
}

// run is one phase: an upload pass and a commit pass; after a crash a new
// process and passes until both complete.
func (l *bucketLake) run(hook func(string) error, localRetention time.Duration) {
	l.t.Helper()
	ctx := context.Background()
	err := l.u.PassForTest(ctx)
	if err == nil {
		err = l.c.Sync(ctx)
	}
	if err != nil {
		require.True(l.t, upload.IsCrash(err), "a crash, not %v", err)
		l.stop()
		l.start(nil, localRetention)
		for range 5 {
			if err = l.u.PassForTest(ctx); err == nil {
				break
			}
		}
		require.NoError(l.t, err)
		require.NoError(l.t, l.c.Sync(ctx))
	}
}

func (l *bucketLake) partition(hoursAgo int) (rel string, hour time.Time) {
	hour = l.now.UTC().Truncate(time.Hour).Add(-time.Duration(hoursAgo) * time.Hour)
	return fmt.Sprintf("default/cpu/date=%s/hour=%d", hour.Format(time.DateOnly), hour.Hour()), hour
}

// write writes values as rows of a microsecond-time Parquet file.
func (l *bucketLake) write(rel string, hour time.Time, name string, values []float64) {
	l.t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i, v := range values {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(hour.Add(time.Duration(i) * time.Second).UnixMicro()))
		b.Field(1).(*array.Float64Builder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	dir := filepath.Join(l.dir, filepath.FromSlash(rel))
	require.NoError(l.t, os.MkdirAll(dir, 0o755))
	f, err := os.Create(filepath.Join(dir, name))
	require.NoError(l.t, err)
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	require.NoError(l.t, err)
	require.NoError(l.t, w.Write(rec))
	require.NoError(l.t, w.Close())
}

func (l *bucketLake) remove(rel, name string) {
	require.NoError(l.t, os.Remove(filepath.Join(l.dir, filepath.FromSlash(rel), name)))
}

// objects are the lake's data objects in the bucket, as s3:// URIs.
func (l *bucketLake) objects() []string {
	var out []string
	for k := range l.srv.Objects() {
		if strings.HasPrefix(k, l.prefix+"/default/") {
			out = append(out, "s3://"+s3test.Bucket+"/"+k)
		}
	}
	sort.Strings(out)
	return out
}

// check reads the table as a reader would: it lists exactly the bucket's
// data objects, each once, and reads exactly want.
func (l *bucketLake) check(want []float64) {
	l.t.Helper()
	ctx := context.Background()
	r, err := iceberg.New(iceberg.Config{DataDir: l.dir, Logger: slog.New(slog.DiscardHandler),
		Bucket: &iceberg.Bucket{Name: s3test.Bucket, Prefix: l.prefix, Props: iceberg.BucketProps(l.srv.Endpoint, s3test.Region, true)}})
	require.NoError(l.t, err)
	defer r.Stop()
	tbl, err := r.Table(ctx, "default", "cpu")
	require.NoError(l.t, err)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	require.NoError(l.t, err)
	var live []string
	for _, task := range tasks {
		live = append(live, task.File.FilePath())
	}
	sort.Strings(live)
	assert.Equal(l.t, l.objects(), live, "the table lists exactly the bucket's objects: none twice, none deleted")
	at, err := tbl.Scan().ToArrowTable(ctx)
	require.NoError(l.t, err)
	defer at.Release()
	var got []float64
	col := at.Column(at.Schema().FieldIndices("value")[0])
	for _, ch := range col.Data().Chunks() {
		got = append(got, ch.(*array.Float64).Float64Values()...)
	}
	slices.Sort(got)
	assert.Equal(l.t, want, got, "every row once")
}

func seq(from, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(from + i)
	}
	return out
}

// TestBucketTableCrashAtEveryStep runs the bucket warehouse's life (an
// upload, late rows replacing the object, local retention, late rows after
// it) and stops the process as a SIGKILL would after each step of the
// uploader (uploaded, recorded, table settled, replaced object deleted,
// partition marked, deleted locally and unrecorded); after every phase the Iceberg
// table lists exactly the bucket's objects, none twice and none deleted,
// and reads back exactly the rows written.
func TestBucketTableCrashAtEveryStep(t *testing.T) {
	srv := s3test.Start(t)
	scenario := func(t *testing.T, hook func(string) error) {
		l := newBucketLake(t, srv)
		rel, hour := l.partition(3)
		l.start(hook, 0)
		l.write(rel, hour, "1.parquet", seq(0, 10))
		l.run(hook, 0)
		l.check(seq(0, 10))

		// Late rows: a compaction merges them with the uploaded file.
		l.write(rel, hour, "2.parquet", seq(0, 15))
		l.remove(rel, "1.parquet")
		l.run(hook, 0)
		l.check(seq(0, 15))

		// Local retention.
		l.u.Stop()
		l.stop()
		l.start(hook, time.Hour)
		l.run(hook, time.Hour)
		_, err := os.Stat(filepath.Join(l.dir, filepath.FromSlash(rel)))
		assert.ErrorIs(t, err, os.ErrNotExist, "the local partition went once the table held its objects")
		l.check(seq(0, 15))

		// Late rows after the local partition went: a new object beside the old.
		l.write(rel, hour, "3.parquet", seq(100, 5))
		l.run(hook, time.Hour)
		l.check(append(seq(0, 15), seq(100, 5)...))
	}
	counts := map[string]int{}
	t.Run("no crash", func(t *testing.T) {
		scenario(t, func(s string) error { counts[s]++; return nil })
	})
	require.Equal(t, map[string]int{"uploaded": 3, "recorded": 3, "settled": 3, "replaced": 1, "dropping": 2, "dropped": 2, "unrecorded": 2}, counts)
	for step, n := range counts {
		for i := 1; i <= n; i++ {
			t.Run(fmt.Sprintf("%s-%d", step, i), func(t *testing.T) {
				seen, crashed := 0, false
				scenario(t, func(s string) error {
					if s == step {
						if seen++; seen == i {
							crashed = true
							return errors.New("kill")
						}
					}
					return nil
				})
				assert.True(t, crashed, "the hook ran at %s #%d", step, i)
			})
		}
	}
}
