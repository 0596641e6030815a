package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// s3Sidecar is the flags of a sidecar uploading to srv under the prefix
// otel, scanning often; credentials come from the environment.
func s3Sidecar(t *testing.T, srv *s3test.Server, extra ...string) []string {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", s3test.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3test.SecretKey)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cfg := filepath.Join(t.TempDir(), "s3.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("interval: 200ms\nrequest_timeout: 5s\n"), 0o600))
	return append([]string{"-flush-interval", "150ms", "-compact-interval", "0",
		"-s3-endpoint", srv.Endpoint, "-s3-bucket", s3test.Bucket, "-s3-prefix", "otel", "-s3-path-style", "-s3-config", cfg}, extra...)
}

func compactNow(t *testing.T, sc *sidecar) {
	t.Helper()
	resp, err := http.Post("http://"+sc.http+"/admin/compact", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// bucketSpans reads the bucket with pyarrow's S3 filesystem, as a user
// would: a hive-partitioned dataset of otel/default/traces. It returns
// the rows of each span id.
func bucketSpans(t *testing.T, srv *s3test.Server) map[string]int {
	t.Helper()
	const script = `
import collections, json, sys
import pyarrow.dataset as ds
import pyarrow.fs as fs
endpoint, access, secret = sys.argv[1:4]
s3 = fs.S3FileSystem(access_key=access, secret_key=secret, endpoint_override=endpoint, scheme="http", region="us-east-1")
d = ds.dataset("arc/otel/default/traces", filesystem=s3, format="parquet", partitioning="hive")
t = d.to_table(columns=["span_id", "date", "hour"])
ids = [v if isinstance(v, str) else v.hex() for v in t.column("span_id").to_pylist()]
print(json.dumps({"rows": t.num_rows, "hours": sorted({str(h) for h in t.column("hour").to_pylist()}), "spans": collections.Counter(ids)}))
`
	py := filepath.Join(repoRoot, ".tools", "py")
	if _, err := os.Stat(filepath.Join(py, "pyarrow")); err != nil {
		t.Fatalf("pyarrow not found under %s: run `make tools`", py)
	}
	cmd := exec.Command("python3", "-c", script, strings.TrimPrefix(srv.Endpoint, "http://"), s3test.AccessKey, s3test.SecretKey)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+py)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("pyarrow read of the bucket: %v: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var res struct {
		Rows  int            `json:"rows"`
		Hours []string       `json:"hours"`
		Spans map[string]int `json:"spans"`
	}
	require.NoError(t, json.Unmarshal(out, &res))
	t.Logf("pyarrow read %d rows from the bucket, hours %v", res.Rows, res.Hours)
	return res.Spans
}

// clickhouseBucketSpans reads the bucket with ClickHouse's s3() table
// function (the engine of chdb-core) and hive partitioning: the rows and
// the distinct span ids. ok is false when chdb-core is not installed
// (make tools installs it; under ARC_REQUIRE_CLICKHOUSE=1 that fails).
func clickhouseBucketSpans(t *testing.T, srv *s3test.Server) (rows, distinct int, ok bool) {
	t.Helper()
	chdb := filepath.Join(repoRoot, ".tools", "chdb")
	if _, err := os.Stat(filepath.Join(chdb, "chdb")); err != nil {
		if os.Getenv("ARC_REQUIRE_CLICKHOUSE") == "1" {
			t.Fatalf("chdb-core not found under %s: run `make tools`", chdb)
		}
		t.Logf("chdb-core not found under %s: the bucket is read with pyarrow only", chdb)
		return 0, 0, false
	}
	query := fmt.Sprintf("SELECT count(), uniqExact(span_id) FROM s3('%s/%s/otel/default/traces/*/*/*.parquet', '%s', '%s', 'Parquet') "+
		"WHERE date >= '2000-01-01' AND hour >= 0 SETTINGS use_hive_partitioning = 1", srv.Endpoint, s3test.Bucket, s3test.AccessKey, s3test.SecretKey)
	cmd := exec.Command("python3", "-c", "import chdb, sys; print(chdb.query(sys.argv[1], 'CSV'))", query)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+chdb)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "clickhouse read of the bucket: %s", out)
	_, err = fmt.Sscanf(strings.TrimSpace(string(out)), "%d,%d", &rows, &distinct)
	require.NoError(t, err, "clickhouse answer %q", out)
	return rows, distinct, true
}

// checkBucket counts acknowledged spans missing from the bucket and spans
// stored there more than once.
func checkBucket(t *testing.T, srv *s3test.Server, sender *spanSender) (lost, dup, acked int) {
	t.Helper()
	found := bucketSpans(t, srv)
	for _, n := range found {
		if n > 1 {
			dup++
		}
	}
	for id := range sender.acked {
		acked++
		if found[id] == 0 {
			lost++
		}
	}
	return lost, dup, acked
}

// localParquet lists the Parquet files of the data directory's tables,
// relative to it.
func localParquet(t *testing.T, dataDir string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(dataDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_arcstore" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			rel, _ := filepath.Rel(dataDir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	}))
	return out
}

// TestObjectStorageSurvivesKills drives spans of closed hours through the
// collector into a sidecar that uploads to versitygw and deletes what it
// has verified there (-local-retention), compacts every second through
// POST /admin/compact, and SIGKILLs the sidecar at random moments
// (uploads among them). At the end every acknowledged span must be in the
// bucket exactly once, as pyarrow reads it, and nothing left locally.
func TestObjectStorageSurvivesKills(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	args := s3Sidecar(t, srv, "-local-retention", "1h")
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, grpcAddr)
	sender, stop := startLoadPast(t, col.otlpGRPC, 2, 250, 5*time.Millisecond, 0, 2*time.Hour)
	kills := chaosKills(t)
	for i := range kills {
		deadline := time.Now().Add(time.Duration(600+rand.IntN(1400)) * time.Millisecond)
		for time.Now().Before(deadline) {
			compactNow(t, sc)
			time.Sleep(time.Duration(100+rand.IntN(300)) * time.Millisecond)
		}
		sc.kill()
		t.Logf("kill %d: %d spans acknowledged, %d objects in the bucket", i+1, sender.ackedCount(), len(srv.Objects()))
		sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	}
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second) // flushes the last rows
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	compactNow(t, sc)
	require.Eventually(t, func() bool { return len(localParquet(t, dataDir)) == 0 }, 60*time.Second, 100*time.Millisecond,
		"every partition uploaded, verified and deleted locally")
	uploaded := sidecarMetric(t, sc, `arcstore_upload_objects_total{result="ok"}`)
	sc.stop(t, 30*time.Second)

	lost, dup, acked := checkBucket(t, srv, sender)
	var bytes int64
	for _, n := range srv.Objects() {
		bytes += n
	}
	t.Logf("s3 chaos: kills %d, spans acknowledged %d, objects in the bucket %d (%v uploaded since the last start), %.1f bytes per span there; bucket lost %d, duplicated %d",
		kills, acked, len(srv.Objects()), uploaded, float64(bytes)/float64(max(acked, 1)), lost, dup)
	require.Positive(t, acked)
	assert.Zero(t, lost, "acknowledged spans missing from the bucket")
	assert.Zero(t, dup, "spans in the bucket more than once")
	assert.Empty(t, srv.Uploads(), "no multipart upload left open")
	if rows, distinct, ok := clickhouseBucketSpans(t, srv); ok {
		t.Logf("clickhouse s3() read %d rows, %d distinct spans from the bucket", rows, distinct)
		assert.GreaterOrEqual(t, rows, acked, "ClickHouse reads every acknowledged span from the bucket (and any whose acknowledgement the client missed)")
		assert.Equal(t, rows, distinct, "each once")
	}
}

// TestObjectStorageOutageUnderLoad stops the bucket under load: the
// sidecar goes on acknowledging and keeps every partition, the backlog
// shows in arcstore_upload_*, /ready stays up (an outage is not a
// misconfiguration), and once the bucket is back the uploads catch up by
// themselves (scheduled compaction, every second here), each span once.
func TestObjectStorageOutageUnderLoad(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, s3Sidecar(t, srv, "-compact-interval", "1s", "-compact-min-age", "0s")...)
	col := startCollector(t, grpcAddr)
	sender, stop := startLoadPast(t, col.otlpGRPC, 1, 100, 20*time.Millisecond, 0, 2*time.Hour)
	time.Sleep(2 * time.Second)

	srv.Stop()
	before := sender.ackedCount()
	time.Sleep(s3Outage(t))
	during := sender.ackedCount() - before
	backlog := sidecarMetric(t, sc, "arcstore_upload_backlog_bytes")
	failed := sidecarMetric(t, sc, `arcstore_upload_objects_total{result="error"}`)
	ready, err := http.Get("http://" + sc.http + "/ready")
	require.NoError(t, err)
	ready.Body.Close()
	srv.Restart()

	stop()
	col.waitDrained(t, 120*time.Second)
	// Caught up: the bucket holds exactly the local files, nothing waits.
	want := func() bool {
		local := localParquet(t, dataDir)
		objects := srv.Objects()
		if len(objects) != len(local) || sidecarMetric(t, sc, "arcstore_upload_backlog_bytes") != 0 {
			return false
		}
		for _, f := range local {
			if _, ok := objects["otel/"+f]; !ok {
				return false
			}
		}
		return true
	}
	require.Eventually(t, want, 60*time.Second, 100*time.Millisecond, "the uploads catch up once the bucket is back")
	sc.stop(t, 30*time.Second)

	lost, dup, acked := checkBucket(t, srv, sender)
	plost, pdup := checkSpans(t, dataDir, sender)
	t.Logf("s3 outage %s: spans acknowledged %d (%d during the outage); at its end %.0f bytes waited for the bucket, %v uploads had failed (and were retried); bucket lost %d, duplicated %d; local Parquet lost %d, duplicated %d",
		s3Outage(t), acked, during, backlog, failed, lost, dup, plost, pdup)
	assert.Positive(t, during, "the sidecar kept acknowledging while the bucket was down")
	assert.Positive(t, backlog, "the backlog showed in arcstore_upload_backlog_bytes")
	// Uploads that failed during the outage: none when no compaction
	// finished between two flushes then (a partition with flush files
	// waiting is not ready), so it is logged, not asserted.
	assert.Equal(t, http.StatusOK, ready.StatusCode, "an unreachable bucket does not fail /ready")
	assert.Zero(t, lost, "acknowledged spans missing from the bucket")
	assert.Zero(t, dup, "spans in the bucket more than once")
	assert.Zero(t, plost)
	assert.Zero(t, pdup)
}

// TestObjectStorageWrongCredentials: a secret the bucket refuses fails
// /ready with a message that says so (and /health stays up); the sidecar
// still acknowledges and keeps the data locally.
func TestObjectStorageWrongCredentials(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	args := s3Sidecar(t, srv)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), args...)
	resp, err := http.Get("http://" + sc.http + "/ready")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(body), "refused the credentials")
	assert.Zero(t, sidecarMetric(t, sc, "arcstore_upload_ready"))
	log, err := os.ReadFile(sc.log)
	require.NoError(t, err)
	assert.Contains(t, string(log), "object storage refuses the uploads")
	sc.stop(t, 30*time.Second)
}
