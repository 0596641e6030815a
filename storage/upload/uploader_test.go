package upload

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// env is a store on a temp dir and a bucket on a real versitygw.
type env struct {
	t      *testing.T
	srv    *s3test.Server
	store  *storage.Store
	dir    string
	prefix string
	now    time.Time
	bucket Bucket
}

// hourAgo is the partition of a closed hour, h hours before e.now.
func (e *env) partition(hoursAgo int) string {
	t := e.now.Add(-time.Duration(hoursAgo) * time.Hour).UTC()
	return fmt.Sprintf("default/traces/date=%s/hour=%d", t.Format(time.DateOnly), t.Hour())
}

func s3Env(t *testing.T, srv *s3test.Server) Bucket {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	b, err := NewS3(context.Background(), S3Config{Endpoint: srv.Endpoint, Bucket: s3test.Bucket, Region: s3test.Region, PathStyle: true})
	require.NoError(t, err)
	return b
}

func newEnv(t *testing.T, srv *s3test.Server) *env {
	t.Helper()
	return newEnvOn(t, srv, s3Env(t, srv))
}

// newEnvOn is newEnv with a client made beforehand: parallel tests cannot
// set the environment s3Env sets.
func newEnvOn(t *testing.T, srv *s3test.Server, bucket Bucket) *env {
	t.Helper()
	e := &env{t: t, srv: srv, dir: filepath.Join(t.TempDir(), "data"), prefix: "p/" + strings.ReplaceAll(t.Name(), "/", "_"), now: time.Now()}
	e.bucket = bucket
	e.open(nil)
	return e
}

// open (re)opens the store, whose compaction events go to u.
func (e *env) open(u *Uploader) {
	if e.store != nil {
		require.NoError(e.t, e.store.Close())
		e.store = nil
	}
	opts := storage.Options{DataDir: e.dir, Logger: slog.New(slog.DiscardHandler)}
	if u != nil {
		opts.Observer = u.Observe(nil)
	}
	s, err := storage.Open(opts)
	require.NoError(e.t, err)
	e.store = s
	e.t.Cleanup(func() {
		if e.store == s {
			_ = s.Close()
			e.store = nil
		}
	})
}

// uploader is a fresh uploader on the env's data directory, as after a
// start of the sidecar.
func (e *env) uploader(hook func(string) error, mod ...func(*Config)) *Uploader {
	e.t.Helper()
	cfg := Config{Bucket: e.bucket, Prefix: e.prefix, CompactMinAge: 10 * time.Minute, PartSize: MinPartSize, Concurrency: 2,
		Logger: slog.New(slog.DiscardHandler)}
	for _, m := range mod {
		m(&cfg)
	}
	u, err := New(cfg)
	require.NoError(e.t, err)
	u.hook = hook
	u.now = func() time.Time { return e.now }
	require.NoError(e.t, u.load(e.store))
	return u
}

func (e *env) write(partition, name string, data []byte) {
	e.t.Helper()
	dir := filepath.Join(e.dir, filepath.FromSlash(partition))
	require.NoError(e.t, os.MkdirAll(dir, 0o755))
	require.NoError(e.t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
}

func (e *env) remove(partition, name string) {
	require.NoError(e.t, os.Remove(filepath.Join(e.dir, filepath.FromSlash(partition), name)))
}

func (e *env) key(partition, name string) string { return Key(e.prefix, partition, name) }

// objects lists the env's keys in the bucket.
func (e *env) objects() []string {
	var out []string
	for k := range e.srv.Objects() {
		if strings.HasPrefix(k, e.prefix+"/") {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// uploads lists the env's multipart uploads left open.
func (e *env) uploads() []string {
	var out []string
	for k := range e.srv.Uploads() {
		if strings.HasPrefix(k, e.prefix+"/") {
			out = append(out, k)
		}
	}
	return out
}

func (e *env) exists(partition string) bool {
	_, err := os.Stat(filepath.Join(e.dir, filepath.FromSlash(partition)))
	return err == nil
}

func (e *env) manifests() []string {
	var out []string
	_ = filepath.WalkDir(filepath.Join(storage.SystemDir(e.dir), stateDirName, manifestsDirName), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func random(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}

type row struct {
	Time int64  `parquet:"time"`
	V    string `parquet:"v"`
}

func parquetFile(t *testing.T, rows ...row) []byte {
	var buf bytes.Buffer
	require.NoError(t, parquet.Write(&buf, rows))
	return buf.Bytes()
}

func readRows(t *testing.T, data []byte) []row {
	rows, err := parquet.Read[row](bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	return rows
}

// drain runs passes until one ends without an error.
func drain(t *testing.T, u *Uploader) {
	t.Helper()
	for range 5 {
		if _, err := u.pass(context.Background()); err == nil {
			return
		}
	}
	_, err := u.pass(context.Background())
	require.NoError(t, err)
}

func TestUploadsClosedCompactedPartitions(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	big := random(t, 2*MinPartSize+12345) // three parts
	small := random(t, 1000)
	closedBig, closedSmall, open := e.partition(3), e.partition(2), e.partition(0)
	e.write(closedBig, "a.parquet", big)
	e.write(closedSmall, "b.parquet", small)
	e.write(open, "c.parquet", small)
	u := e.uploader(nil)
	drain(t, u)

	// As a set: keys sort hour=10 before hour=9.
	assert.ElementsMatch(t, []string{e.key(closedBig, "a.parquet"), e.key(closedSmall, "b.parquet")}, e.objects(), "closed partitions only")
	assert.Equal(t, big, srv.Get(e.key(closedBig, "a.parquet")))
	assert.Equal(t, small, srv.Get(e.key(closedSmall, "b.parquet")))
	assert.Empty(t, srv.Uploads(), "no multipart upload left open")
	assert.True(t, e.exists(closedBig), "no local retention: local partitions stay")
	assert.Equal(t, 2.0, testutil.ToFloat64(u.metrics.objects.WithLabelValues("ok")))
	assert.Equal(t, float64(len(big)+len(small)), testutil.ToFloat64(u.metrics.bytes))
	assert.Zero(t, testutil.ToFloat64(u.metrics.backlogBytes))

	// Another pass, and a restart, upload nothing again.
	drain(t, u)
	drain(t, e.uploader(nil))
	assert.Equal(t, 2.0, testutil.ToFloat64(u.metrics.objects.WithLabelValues("ok")))
}

// TestWaitsForCompaction: a closed hour with several files of one schema
// is uploaded once a compaction run has merged them, and POST
// /admin/compact's run (min age 0) makes an hour that ended a minute ago
// ready without waiting for -compact-min-age.
func TestWaitsForCompaction(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	e.now = time.Now().Truncate(time.Hour).Add(time.Minute) // the last hour ended a minute ago
	merge, recent := e.partition(3), e.partition(1)
	e.write(merge, "1.parquet", parquetFile(t, row{1, "a"}, row{2, "b"}))
	e.write(merge, "2.parquet", parquetFile(t, row{3, "c"}))
	e.write(recent, "1.parquet", parquetFile(t, row{4, "d"}))
	u := e.uploader(nil)
	e.open(u)
	drain(t, u)
	assert.Empty(t, e.objects(), "two files of one schema wait for compaction; the last hour ended under -compact-min-age ago")
	assert.Equal(t, 1.0, testutil.ToFloat64(u.metrics.backlogPartitions), "the closed hour is in the backlog")

	_, err := e.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	drain(t, u)
	// By partition, not by key order: hour=10 sorts before hour=8.
	objs := e.objects()
	require.Len(t, objs, 2)
	assert.Contains(t, objs, e.key(recent, "1.parquet"))
	merged := slices.IndexFunc(objs, func(k string) bool { return strings.HasPrefix(k, e.key(merge, "")) })
	require.NotEqual(t, -1, merged, "the merged hour is uploaded: %v", objs)
	assert.Contains(t, objs[merged], "-compacted-")
	assert.ElementsMatch(t, []row{{1, "a"}, {2, "b"}, {3, "c"}}, readRows(t, srv.Get(objs[merged])))

	// The compaction's cutoff survives a restart.
	assert.False(t, e.uploader(nil).compactedThrough.IsZero())
}

// TestLateRowsReplaceTheObject: rows that reach an uploaded hour are
// compacted with its file into a new one, which replaces the object.
func TestLateRowsReplaceTheObject(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	p := e.partition(2)
	e.write(p, "1.parquet", parquetFile(t, row{1, "a"}))
	u := e.uploader(nil)
	e.open(u)
	drain(t, u)
	require.Equal(t, []string{e.key(p, "1.parquet")}, e.objects())

	e.write(p, "2.parquet", parquetFile(t, row{2, "late"}))
	drain(t, u)
	assert.Equal(t, []string{e.key(p, "1.parquet")}, e.objects(), "a late file waits for compaction")
	_, err := e.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	drain(t, u)
	objs := e.objects()
	require.Len(t, objs, 1)
	assert.Contains(t, objs[0], "-compacted-")
	assert.ElementsMatch(t, []row{{1, "a"}, {2, "late"}}, readRows(t, srv.Get(objs[0])))
	assert.Equal(t, 1.0, testutil.ToFloat64(u.metrics.replaced))
}

// rows writes files of numbered rows into a partition, as flushes would:
// every row a new id, so the bucket's content can be counted.
type rows struct {
	e     *env
	p     string
	next  int64
	files int
}

// idRow pads each row with random bytes, so that files are as large on
// disk as their rows (compression gains nothing) and large files go in
// several parts.
type idRow struct {
	ID  int64  `parquet:"id"`
	Pad []byte `parquet:"pad"`
}

const idRowPad = 1024

// idFiles holds the encoded files of rows.file by first id and count:
// every scenario of a test writes the same ones, and encoding megabytes
// under the race detector is most of a scenario's time.
var idFiles sync.Map

// file writes a file of n new rows into the partition.
func (r *rows) file(n int) {
	r.e.t.Helper()
	key := [2]int64{r.next, int64(n)}
	data, ok := idFiles.Load(key)
	if !ok {
		out := make([]idRow, n)
		for i := range out {
			out[i] = idRow{ID: r.next + int64(i), Pad: random(r.e.t, idRowPad)}
		}
		var buf bytes.Buffer
		require.NoError(r.e.t, parquet.Write(&buf, out))
		data, _ = idFiles.LoadOrStore(key, buf.Bytes())
	}
	r.next += int64(n)
	r.files++
	r.e.write(r.p, fmt.Sprintf("%04d-flush.parquet", r.files), data.([]byte))
}

// compact runs the store's compaction over every closed hour.
func (e *env) compact() {
	e.t.Helper()
	_, err := e.store.Compact(context.Background(), 0)
	require.NoError(e.t, err)
}

// localKeys are the keys the partition's local files have in the bucket.
func (e *env) localKeys(partition string) []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, filepath.FromSlash(partition)))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(e.t, err)
	var out []string
	for _, de := range entries {
		out = append(out, e.key(partition, de.Name()))
	}
	return out
}

// bucketRows reads every row of the env's objects (their id column): how
// many rows in all, and how many times each id.
func (e *env) bucketRows() (total int, ids map[int64]int) {
	e.t.Helper()
	ids = map[int64]int{}
	for _, k := range e.objects() {
		data := e.srv.Get(k)
		f, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
		require.NoError(e.t, err, k)
		col, ok := f.Schema().Lookup("id")
		require.True(e.t, ok, "%s has an id column", k)
		before := total
		for _, rg := range f.RowGroups() {
			pages := rg.ColumnChunks()[col.ColumnIndex].Pages()
			for {
				page, err := pages.ReadPage()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(e.t, err, k)
				values := make([]parquet.Value, page.NumValues())
				n, err := page.Values().ReadValues(values)
				if !errors.Is(err, io.EOF) {
					require.NoError(e.t, err, k)
				}
				for _, v := range values[:n] {
					ids[v.Int64()]++
				}
				total += n
				parquet.Release(page)
			}
			require.NoError(e.t, pages.Close())
		}
		require.EqualValues(e.t, f.NumRows(), total-before, "%s: every row has an id", k)
	}
	return total, ids
}

// assertRowsOnce checks the bucket holds every row written, each once.
func (r *rows) assertRowsOnce(msg string) {
	r.e.t.Helper()
	total, ids := r.e.bucketRows()
	missing := 0
	for id := range r.next {
		if ids[id] == 0 {
			missing++
		}
	}
	assert.Equal(r.e.t, int(r.next), total, "%s: rows in the bucket (%d distinct) against rows written", msg, len(ids))
	assert.Len(r.e.t, ids, int(r.next), "%s: distinct rows in the bucket", msg)
	assert.Zero(r.e.t, missing, "%s: rows written missing from the bucket", msg)
}

// TestCrashAtEveryStep stops the uploader as a SIGKILL would at each
// occurrence of each step of an upload, a replacement and a local
// deletion, and starts a new one on the same directory and bucket. In the
// "late" variant, before the restart, late rows reach the partition (two
// flush files) and a compaction runs: it merges them with the partition's
// files if the partition is still there, or with each other if the crash
// came after the local deletion. The bucket is then read row by row: every
// row written is there exactly once, after each phase and at the end, no
// multipart upload is left open, and the local partition is deleted only
// after that.
func TestCrashAtEveryStep(t *testing.T) {
	srv := s3test.Start(t)
	// One part in flight at a time: a part the server is still writing
	// when the restarted uploader aborts the upload would bring it back
	// (S3 documents the same of aborts).
	one := func(c *Config) { c.Concurrency = 1 }
	keep := func(c *Config) { c.LocalRetention = time.Hour }
	bucket := s3Env(t, srv)
	scenario := func(t *testing.T, hook func(string) error, late bool) {
		t.Helper()
		e := newEnvOn(t, srv, bucket)
		p := e.partition(5)
		r := &rows{e: e, p: p}
		r.file(MinPartSize/idRowPad + 100) // two parts
		u := e.uploader(hook, one)
		// run is one phase: a pass, and after a crash (late rows and a
		// compaction, then) a restart and passes to the end.
		run := func(mod ...func(*Config)) {
			t.Helper()
			_, err := u.pass(context.Background())
			if err != nil {
				require.ErrorAs(t, err, new(crash))
				if late {
					r.file(3)
					r.file(2)
					e.compact()
				}
				u = e.uploader(nil, append(mod, one)...)
			}
			drain(t, u)
		}
		run()
		assert.Equal(t, e.localKeys(p), e.objects(), "the bucket holds the local files")
		r.assertRowsOnce("uploaded")
		// Late rows: a compaction replaces the file with one holding its
		// rows and more.
		r.file(1)
		e.compact()
		run()
		assert.Equal(t, e.localKeys(p), e.objects(), "the bucket holds the local files")
		r.assertRowsOnce("replaced")
		// Local retention.
		u.cfg.LocalRetention = time.Hour
		run(keep)
		r.assertRowsOnce("deleted locally")
		assert.Empty(t, e.uploads(), "no multipart upload left open")
		assert.False(t, e.exists(p), "local partition deleted after the upload was verified")
		assert.Empty(t, e.manifests())
		drops, err := e.store.Drops()
		require.NoError(t, err)
		assert.Empty(t, drops, "no tombstone left")
	}
	// A run without crashes counts each step's occurrences.
	counts := map[string]int{}
	t.Run("no crash", func(t *testing.T) {
		scenario(t, func(s string) error { counts[s]++; return nil }, false)
	})
	require.Equal(t, map[string]int{"multipart-created": 2, "part-uploaded": 4, "uploaded": 2, "recorded": 2, "replaced": 1,
		"dropping": 1, "dropped": 1, "unrecorded": 1}, counts)
	for step, n := range counts {
		for i := 1; i <= n; i++ {
			for _, late := range []bool{false, true} {
				name := fmt.Sprintf("%s#%d", step, i)
				if late {
					name += "/late"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel() // each on its own directory and prefix; the wait is mostly I/O
					seen := 0
					crashed := false
					scenario(t, func(s string) error {
						if s == step {
							seen++
							if seen == i {
								crashed = true
								return errors.New("kill")
							}
						}
						return nil
					}, late)
					assert.True(t, crashed, "the hook ran at %s #%d", step, i)
				})
			}
		}
	}
}

// TestCrashWhileDroppingThenLateRows is the review's case: the uploader is
// killed after it marked a verified partition for local deletion and
// before the store deleted it; a late row arrives and a compaction merges
// it with the partition's file. The merged file replaces the object: the
// bucket holds 101 rows, each once (the drop took "none of the recorded
// files are present" for "the drop happened": 201 rows, 101 distinct). The
// other way round, a crash after the deletion and late rows that are
// compacted together, the bucket keeps the dropped object and gains the
// late rows.
func TestCrashWhileDroppingThenLateRows(t *testing.T) {
	srv := s3test.Start(t)
	for _, step := range []string{"dropping", "dropped"} {
		t.Run(step, func(t *testing.T) {
			e := newEnv(t, srv)
			p := e.partition(3)
			r := &rows{e: e, p: p}
			r.file(100)
			drain(t, e.uploader(nil))
			u := e.uploader(func(s string) error {
				if s == step {
					return errors.New("kill")
				}
				return nil
			}, func(c *Config) { c.LocalRetention = time.Hour })
			_, err := u.pass(context.Background())
			require.ErrorAs(t, err, new(crash))
			assert.Equal(t, step == "dropping", e.exists(p), "the crash came before the deletion or after it")

			r.file(1)
			if step == "dropped" {
				r.file(1) // two late files, compacted into one
			}
			e.compact()
			files, err := os.ReadDir(filepath.Join(e.dir, filepath.FromSlash(p)))
			require.NoError(t, err)
			require.Len(t, files, 1, "compacted")
			drain(t, e.uploader(nil)) // no local retention: the partition stays
			total, ids := e.bucketRows()
			assert.Equal(t, int(r.next), total, "rows in the bucket (%d distinct)", len(ids))
			assert.Len(t, ids, int(r.next), "distinct rows")
			assert.Contains(t, e.objects(), e.key(p, files[0].Name()), "the compacted file is uploaded")
		})
	}
}

// TestServerDownThenUp: with the bucket unreachable nothing is deleted
// locally, the backlog shows in the metrics, and the uploads catch up by
// themselves once it is back.
func TestServerDownThenUp(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	p1, p2 := e.partition(4), e.partition(3)
	e.write(p1, "1.parquet", random(t, 3000))
	e.write(p2, "1.parquet", random(t, MinPartSize+1))
	srv.Stop()
	u := e.uploader(nil, func(c *Config) {
		c.LocalRetention = time.Hour
		c.Interval, c.MaxBackoff, c.Timeout = 20*time.Millisecond, 50*time.Millisecond, 2*time.Second
	})
	_, err := u.pass(context.Background())
	require.Error(t, err)
	assert.True(t, e.exists(p1) && e.exists(p2), "local partitions kept while the bucket is down")
	assert.Equal(t, 2.0, testutil.ToFloat64(u.metrics.backlogPartitions))
	assert.Equal(t, float64(3000+MinPartSize+1), testutil.ToFloat64(u.metrics.backlogBytes))
	assert.NoError(t, u.Ready(), "an unreachable bucket is not a readiness failure")

	require.NoError(t, u.Start(e.store))
	defer u.Stop()
	srv.Restart()
	require.Eventually(t, func() bool {
		return !e.exists(p1) && !e.exists(p2) && testutil.ToFloat64(u.metrics.backlogPartitions) == 0
	}, 30*time.Second, 20*time.Millisecond, "uploads catch up, local retention follows, the backlog empties")
	u.Stop()
	assert.Len(t, e.objects(), 2)
	assert.Empty(t, srv.Uploads())
}

func TestWrongCredentials(t *testing.T) {
	srv := s3test.Start(t)
	for _, tc := range []struct {
		name, secret, bucket string
		want                 error
	}{
		{"wrong secret", "not-the-secret", s3test.Bucket, ErrCredentials},
		{"no such bucket", s3test.SecretKey, "no-such-bucket", ErrNoBucket},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, srv)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			b, err := NewS3(context.Background(), S3Config{Endpoint: srv.Endpoint, Bucket: tc.bucket, Region: s3test.Region, PathStyle: true})
			require.NoError(t, err)
			e.bucket = b
			p := e.partition(3)
			e.write(p, "1.parquet", random(t, 100))
			u := e.uploader(nil, func(c *Config) { c.LocalRetention = time.Hour })
			err = u.Check(context.Background())
			require.ErrorIs(t, err, tc.want)
			require.ErrorIs(t, u.Ready(), tc.want)
			_, err = u.pass(context.Background())
			require.ErrorIs(t, err, tc.want)
			assert.True(t, e.exists(p))
			assert.Zero(t, testutil.ToFloat64(u.metrics.ready))

			// Fixed credentials: the next pass finds out and uploads.
			e.bucket = s3Env(t, srv)
			u.cfg.Bucket = e.bucket
			drain(t, u)
			assert.NoError(t, u.Ready())
			assert.Equal(t, 1.0, testutil.ToFloat64(u.metrics.ready))
			assert.Len(t, e.objects(), 1)
		})
	}
}

// refusing refuses the first n puts of keys holding match.
type refusing struct {
	Bucket
	match string
	n     atomic.Int32
}

func (r *refusing) Put(ctx context.Context, key string, body []byte) (string, error) {
	if strings.Contains(key, r.match) && r.n.Add(-1) >= 0 {
		return "", fmt.Errorf("put %s: %w: EntityTooLarge", key, ErrRefused)
	}
	return r.Bucket.Put(ctx, key, body)
}

// TestRefusedObjectIsRetried: an object the bucket refuses is counted,
// kept locally and retried, and does not hold the other partitions back.
func TestRefusedObjectIsRetried(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	bad, good := e.partition(4), e.partition(3)
	e.write(bad, "bad.parquet", random(t, 100))
	e.write(good, "good.parquet", random(t, 100))
	r := &refusing{Bucket: e.bucket, match: "bad"}
	r.n.Store(2)
	e.bucket = r
	u := e.uploader(nil, func(c *Config) { c.LocalRetention = time.Hour })
	_, err := u.pass(context.Background())
	require.ErrorIs(t, err, ErrRefused)
	assert.Equal(t, []string{e.key(good, "good.parquet")}, e.objects(), "the other partition goes on")
	assert.True(t, e.exists(bad))
	assert.False(t, e.exists(good))
	assert.Equal(t, 1.0, testutil.ToFloat64(u.metrics.objects.WithLabelValues("refused")))
	assert.NoError(t, u.Ready())

	for range 3 { // retried after its backoff
		e.now = e.now.Add(time.Minute)
		_, _ = u.pass(context.Background())
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(u.metrics.objects.WithLabelValues("refused")))
	assert.Len(t, e.objects(), 2)
	assert.False(t, e.exists(bad))
}

// gone deletes the objects under its prefix before each HEAD once, as a
// lifecycle rule or a hand might.
type vanishing struct {
	Bucket
	deleted atomic.Bool
}

func (v *vanishing) Head(ctx context.Context, key string) (Object, error) {
	o, err := v.Bucket.Head(ctx, key)
	if err == nil && v.deleted.CompareAndSwap(false, true) {
		// The upload's own verification passes; the next HEAD (before a
		// local deletion) finds the object gone.
		return o, nil
	}
	return o, err
}

// TestLocalRetentionOnlyAfterVerify: a local partition is not deleted
// while its object is missing from the bucket; it is uploaded again first.
func TestLocalRetentionOnlyAfterVerify(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	p := e.partition(3)
	data := random(t, 500)
	e.write(p, "1.parquet", data)
	u := e.uploader(nil)
	drain(t, u)
	require.Len(t, e.objects(), 1)
	// Gone from the bucket behind the uploader's back.
	require.NoError(t, e.bucket.Delete(context.Background(), e.key(p, "1.parquet")))
	u.cfg.LocalRetention = time.Hour
	_, err := u.pass(context.Background())
	require.NoError(t, err)
	assert.True(t, e.exists(p), "not deleted: the object was not in the bucket")
	drain(t, u)
	assert.False(t, e.exists(p))
	assert.Equal(t, data, srv.Get(e.key(p, "1.parquet")))
}

// TestLocalRetentionWaitsForAge: partitions younger than the local
// retention stay after their upload.
func TestLocalRetentionWaitsForAge(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	young, old := e.partition(2), e.partition(5)
	e.write(young, "1.parquet", random(t, 10))
	e.write(old, "1.parquet", random(t, 10))
	drain(t, e.uploader(nil, func(c *Config) { c.LocalRetention = 3 * time.Hour }))
	assert.Len(t, e.objects(), 2)
	assert.True(t, e.exists(young))
	assert.False(t, e.exists(old))
}

// TestRetentionWaitsForUpload: the store's -retention, when the uploader
// applies it, deletes a partition past its table's age only once it is
// verified in the bucket; the shorter of it and LocalRetention applies,
// and deletions it made (not LocalRetention's) count as retention's.
func TestRetentionWaitsForUpload(t *testing.T) {
	srv := s3test.Start(t)
	for _, tc := range []struct {
		name      string
		retention storage.Retention
		local     time.Duration
		refuse    bool
		deleted   bool
		retired   int
	}{
		{"past the table's retention", storage.Retention{"default/traces": 2 * time.Hour}, 0, false, true, 1},
		{"past it, the bucket refusing", storage.Retention{"*/*": 2 * time.Hour}, 0, true, false, 0},
		{"another table's retention", storage.Retention{"default/logs": 2 * time.Hour}, 0, false, false, 0},
		{"not yet past it", storage.Retention{"default/traces": 4 * time.Hour}, 0, false, false, 0},
		{"retention shorter than local retention", storage.Retention{"*/traces": 2 * time.Hour}, 5 * time.Hour, false, true, 1},
		{"local retention shorter", storage.Retention{"*/*": 5 * time.Hour}, 2 * time.Hour, false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, srv)
			p := e.partition(3) // ended 2 to 3 hours ago
			r := &rows{e: e, p: p}
			r.file(10)
			if tc.refuse {
				b := &refusing{Bucket: e.bucket, match: "/"}
				b.n.Store(1 << 30)
				e.bucket = b
			}
			u := e.uploader(nil, func(c *Config) { c.Retention, c.LocalRetention = tc.retention, tc.local })
			next := &recorder{}
			u.Observe(next)
			for range 3 {
				_, _ = u.pass(context.Background())
				e.now = e.now.Add(time.Minute)
			}
			assert.Equal(t, !tc.deleted, e.exists(p), "deleted locally")
			retired := 0
			for _, ev := range next.events {
				if ev == "retired" {
					retired++
				}
			}
			assert.Equal(t, tc.retired, retired, "counted as retention's")
			if tc.refuse {
				assert.Empty(t, e.objects())
				return
			}
			r.assertRowsOnce("uploaded")
		})
	}
}

// TestEmptyListingKeepsTheRecord lists an uploaded partition while a
// compaction swaps it (late rows merged with the uploaded file): the
// folder is there, the old one read as it was emptied, and no file is
// listed. The partition is not deleted: its record must stay, so that once
// the merged file is uploaded the object it replaces is deleted, not left
// beside it with the same rows.
func TestEmptyListingKeepsTheRecord(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	p := e.partition(2)
	e.write(p, "1.parquet", parquetFile(t, row{1, "a"}))
	u := e.uploader(nil)
	e.open(u)
	drain(t, u)
	require.Equal(t, []string{e.key(p, "1.parquet")}, e.objects())
	e.write(p, "2.parquet", parquetFile(t, row{2, "late"}))

	// The listing that found the folder empty.
	dir := filepath.Join(e.dir, filepath.FromSlash(p))
	aside := t.TempDir()
	for _, n := range []string{"1.parquet", "2.parquet"} {
		require.NoError(t, os.Rename(filepath.Join(dir, n), filepath.Join(aside, n)))
	}
	drain(t, u)
	assert.Len(t, e.manifests(), 1, "the partition's record is kept")
	assert.Equal(t, []string{e.key(p, "1.parquet")}, e.objects(), "and its object")
	for _, n := range []string{"1.parquet", "2.parquet"} {
		require.NoError(t, os.Rename(filepath.Join(aside, n), filepath.Join(dir, n)))
	}

	_, err := e.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	drain(t, u)
	objs := e.objects()
	require.Len(t, objs, 1, "the merged file's object alone")
	assert.Contains(t, objs[0], "-compacted-")
	assert.ElementsMatch(t, []row{{1, "a"}, {2, "late"}}, readRows(t, srv.Get(objs[0])))
}

// partialFS lists one folder once with only the files keep names: a
// compaction's old folder read as the swap empties it, the files it did
// not merge found again (as links) in the new one.
type partialFS struct {
	storage.OSFS
	dir  string
	keep map[string]bool
	done bool
}

func (f *partialFS) ReadDir(name string) ([]os.DirEntry, error) {
	entries, err := f.OSFS.ReadDir(name)
	if err != nil || name != f.dir || f.done {
		return entries, err
	}
	f.done = true
	return slices.DeleteFunc(entries, func(e os.DirEntry) bool { return !f.keep[e.Name()] }), nil
}

// TestPartialListingDeletesNoObject lists an uploaded partition while a
// compaction swaps it: the listing saw the file the merge left alone, not
// the merged one nor its inputs. The inputs' objects must stay until the
// merged file is uploaded (deleting them at once left the bucket without
// their rows until the next pass).
func TestPartialListingDeletesNoObject(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	p := e.partition(2)
	e.write(p, "1.parquet", parquetFile(t, row{1, "a"}))
	var other bytes.Buffer
	require.NoError(t, parquet.Write(&other, []idRow{{ID: 9}})) // another shape: never merged with the others
	e.write(p, "9.parquet", other.Bytes())
	u := e.uploader(nil)
	e.open(u)
	drain(t, u)
	require.Equal(t, []string{e.key(p, "1.parquet"), e.key(p, "9.parquet")}, e.objects())

	e.write(p, "2.parquet", parquetFile(t, row{2, "late"}))
	_, err := e.store.Compact(context.Background(), 0)
	require.NoError(t, err)
	u.fs = &partialFS{dir: filepath.Join(e.dir, filepath.FromSlash(p)), keep: map[string]bool{"9.parquet": true}}
	_, err = u.pass(context.Background())
	require.NoError(t, err)
	assert.Contains(t, e.objects(), e.key(p, "1.parquet"), "the merged file's input stays in the bucket until the merged file is there")

	drain(t, u)
	objs := e.objects()
	require.Len(t, objs, 2)
	assert.Contains(t, objs, e.key(p, "9.parquet"))
	var merged []row
	for _, k := range objs {
		if strings.Contains(k, "-compacted-") {
			merged = readRows(t, srv.Get(k))
		}
	}
	assert.ElementsMatch(t, []row{{1, "a"}, {2, "late"}}, merged)
}

// TestUnreadableFileHoldsOnlyItsPartition damages a file of the oldest
// closed partition: that partition stays local and is retried, and the
// hours after it are uploaded all the same. A pass used to stop at it,
// so nothing after it ever reached the bucket.
func TestUnreadableFileHoldsOnlyItsPartition(t *testing.T) {
	srv := s3test.Start(t)
	e := newEnv(t, srv)
	old, next := e.partition(3), e.partition(2)
	e.write(old, "1.parquet", parquetFile(t, row{1, "a"}))
	e.write(old, "2.parquet", []byte("not parquet"))
	e.write(next, "1.parquet", parquetFile(t, row{2, "b"}))
	u := e.uploader(nil)

	_, err := u.pass(context.Background())
	require.ErrorIs(t, err, errUnreadable)
	assert.Equal(t, []string{e.key(next, "1.parquet")}, e.objects(), "the next hour is uploaded")
	assert.Contains(t, u.backoff, old, "the damaged hour is retried on its own backoff")
}
