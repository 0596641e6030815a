package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// postIDs writes n rows of the measurement cpu, ids from, to, at one
// instant of the hour at, through the Arc write API.
func postIDs(t *testing.T, sc *sidecar, from, n int, at time.Time) {
	t.Helper()
	times, ids := make([]int64, n), make([]int64, n)
	for i := range n {
		times[i], ids[i] = at.UnixMilli()+int64(i), int64(from+i)
	}
	body := pack(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": times, "id": ids}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", body, nil))
}

// bucketIDs reads default/cpu from the bucket with pyarrow's S3
// filesystem and hive partitioning: its rows, and its distinct ids.
func bucketIDs(t *testing.T, srv *s3test.Server) (rows, distinct int) {
	t.Helper()
	const script = `
import json, sys
import pyarrow.dataset as ds
import pyarrow.fs as fs
endpoint, access, secret = sys.argv[1:4]
s3 = fs.S3FileSystem(access_key=access, secret_key=secret, endpoint_override=endpoint, scheme="http", region="us-east-1")
t = ds.dataset("arc/otel/default/cpu", filesystem=s3, format="parquet", partitioning="hive").to_table(columns=["id"])
print(json.dumps({"rows": t.num_rows, "distinct": len(set(t.column("id").to_pylist()))}))
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
	var res struct{ Rows, Distinct int }
	require.NoError(t, json.Unmarshal(out, &res))
	return res.Rows, res.Distinct
}

// bucketHoldsLocal says whether the bucket holds exactly the data
// directory's Parquet files, under the prefix otel.
func bucketHoldsLocal(t *testing.T, srv *s3test.Server, dataDir string) bool {
	t.Helper()
	var local, objects []string
	for _, f := range localParquet(t, dataDir) {
		local = append(local, "otel/"+f)
	}
	for k := range srv.Objects() {
		objects = append(objects, k)
	}
	slices.Sort(local)
	slices.Sort(objects)
	return len(local) > 0 && slices.Equal(local, objects)
}

// hourPartition is the partition folder of the hour at, relative to a
// table.
func hourPartition(at time.Time) string {
	at = at.UTC()
	return fmt.Sprintf("date=%s/hour=%d", at.Format(time.DateOnly), at.Hour())
}

// TestObjectStorageCrashWhileDropping leaves the state a SIGKILL of the
// sidecar leaves between the two steps of a local deletion (the upload
// manifest marked, the partition not yet deleted), then lets a late row
// reach the hour and a compaction merge it with the uploaded file before
// the uploader's next pass: the merged file must replace the object, so
// the bucket reads 101 rows, each once. (The review found 201 rows, 101
// distinct: the missing file was taken for a deletion that had happened.)
func TestObjectStorageCrashWhileDropping(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	at := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	args := s3Sidecar(t, srv)

	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	postIDs(t, sc, 0, 100, at)
	require.Eventually(t, func() bool { return bucketHoldsLocal(t, srv, dataDir) }, 30*time.Second, 100*time.Millisecond,
		"the closed hour is uploaded")
	sc.stop(t, 30*time.Second)

	// What the uploader writes before it asks the store to delete the
	// partition: the drop it is about to do. A kill then leaves it so.
	manifest := filepath.Join(dataDir, "_arcstore", "uploads", "partitions", "default", "cpu", hourPartition(at)+".json")
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["dropping"], m["drop"] = true, "e2e-killed-while-dropping"
	data, err = json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(manifest, data, 0o644))

	// A late row and a compaction before the uploader looks again (here:
	// a start without the bucket; in production a compaction run that
	// beats the first pass after the restart).
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "150ms", "-compact-interval", "0")
	postIDs(t, sc, 100, 1, at)
	require.Eventually(t, func() bool { return len(localParquet(t, dataDir)) == 2 }, 10*time.Second, 50*time.Millisecond, "the late row flushed")
	compactNow(t, sc)
	require.Len(t, localParquet(t, dataDir), 1, "compacted")
	sc.stop(t, 30*time.Second)

	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	settled := assert.Eventually(t, func() bool { return bucketHoldsLocal(t, srv, dataDir) }, 30*time.Second, 100*time.Millisecond,
		"the merged file replaces the object")
	sc.stop(t, 30*time.Second)
	rows, distinct := bucketIDs(t, srv)
	t.Logf("bucket after the interrupted deletion, a late row and a compaction: %d rows, %d distinct, objects %v (settled %v)", rows, distinct, srv.Objects(), settled)
	assert.Equal(t, 101, distinct, "every acknowledged row in the bucket")
	assert.Equal(t, 101, rows, "each once")
}

// TestObjectStorageRetentionWaitsForUpload: with a bucket, -retention
// deletes a partition only once it is verified in the bucket. The bucket
// is down while an hour passes its retention: the partition stays; once
// the bucket is back it is uploaded, then deleted locally, and the bucket
// holds every row once. (Before, retention deleted it with the bucket
// down, and its rows were nowhere.)
func TestObjectStorageRetentionWaitsForUpload(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	at := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	srv.Stop()
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), s3Sidecar(t, srv, "-retention", "1h", "-compact-interval", "500ms")...)
	postIDs(t, sc, 0, 50, at)
	require.Eventually(t, func() bool { return len(localParquet(t, dataDir)) == 1 }, 10*time.Second, 50*time.Millisecond, "flushed")
	time.Sleep(3 * time.Second) // six retention runs
	assert.Len(t, localParquet(t, dataDir), 1, "past -retention but not in the bucket: kept")
	assert.Zero(t, sidecarMetric(t, sc, "arcstore_retention_partitions_deleted_total"))

	srv.Restart()
	require.Eventually(t, func() bool { return len(localParquet(t, dataDir)) == 0 }, 60*time.Second, 100*time.Millisecond,
		"uploaded, verified, then deleted by retention")
	// Counted once the drop is recorded, a moment after the files go.
	assert.Eventually(t, func() bool { return sidecarMetric(t, sc, "arcstore_retention_partitions_deleted_total") == 1 },
		10*time.Second, 50*time.Millisecond, "one partition counted as deleted by retention")
	sc.stop(t, 30*time.Second)
	rows, distinct := bucketIDs(t, srv)
	assert.Equal(t, 50, distinct, "every acknowledged row in the bucket")
	assert.Equal(t, 50, rows, "each once")
}
