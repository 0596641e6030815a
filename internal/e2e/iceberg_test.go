package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/iceberg/pgtest"
	"github.com/arc-otel/arc-otel/storage/upload/s3test"
)

// icebergScan is one count testdata/iceberg_scan.py makes with PyIceberg.
type icebergScan struct {
	Name     string `json:"name"`
	Table    string `json:"table"`
	Since    string `json:"since,omitempty"`
	Until    string `json:"until,omitempty"`
	Service  string `json:"service,omitempty"`
	Distinct string `json:"distinct,omitempty"`
}

type icebergCounts struct {
	Counts   map[string]int64
	Files    map[string]int
	Distinct map[string]int64
}

// pyiceberg runs the scans with PyIceberg 0.12 (.tools/pyiceberg, pyarrow
// from .tools/py) on the sidecar's SQLite catalog. It returns errors
// rather than failing, for require.Eventually's condition.
func pyiceberg(t *testing.T, dataDir string, scans []icebergScan, files ...string) (icebergCounts, error) {
	return pyicebergEnv(t, dataDir, nil, scans, files...)
}

func pyicebergEnv(t *testing.T, dataDir string, env []string, scans []icebergScan, files ...string) (icebergCounts, error) {
	t.Helper()
	var out icebergCounts
	libs := filepath.Join(repoRoot, ".tools", "pyiceberg")
	if _, err := os.Stat(filepath.Join(libs, ".installed")); err != nil {
		return out, fmt.Errorf("PyIceberg is not installed in %s: run `make tools`", libs)
	}
	js, err := json.Marshal(scans)
	if err != nil {
		return out, err
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "iceberg_scan.py"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+libs+string(os.PathListSeparator)+filepath.Join(repoRoot, ".tools", "py"),
		"CATALOG="+filepath.Join(dataDir, "_arcstore", "iceberg", "catalog.db"), "SCANS="+string(js), "FILES="+joinComma(files))
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("iceberg_scan.py: %w: %s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout, &out); err != nil {
		return out, fmt.Errorf("iceberg_scan.py printed %q: %w", stdout, err)
	}
	return out, nil
}

// eventually waits until PyIceberg's answer satisfies ok.
func eventually(t *testing.T, dataDir string, scans []icebergScan, files []string, ok func(icebergCounts) bool, msg string) icebergCounts {
	t.Helper()
	return eventuallyEnv(t, dataDir, nil, scans, files, ok, msg)
}

func eventuallyEnv(t *testing.T, dataDir string, env []string, scans []icebergScan, files []string, ok func(icebergCounts) bool, msg string) icebergCounts {
	t.Helper()
	var got icebergCounts
	var last error
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got, last = pyicebergEnv(t, dataDir, env, scans, files...)
		if last == nil && ok(got) {
			return got
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("%s: not within 60 s; last answer %+v, error %v", msg, got, last)
	return got
}

func joinComma(s []string) string {
	var b bytes.Buffer
	for i, x := range s {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}

// TestIcebergTables runs the real sidecar with -iceberg: spans through the
// real collector and Arc-protocol rows of a closed hour land in Iceberg
// tables that PyIceberg scans with a time range and a service_name filter,
// counting exactly what was sent and what DuckDB counts over the files;
// a compaction is committed as a swap; a SIGKILL and a restart lose and
// repeat nothing.
func TestIcebergTables(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	args := []string{"-flush-interval", "500ms", "-iceberg", "-iceberg-commit-interval", "1s", "-compact-interval", "0"}
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, sc.grpc)
	telemetrygen(t, col.otlpGRPC, "traces", "--traces", "150", "--workers", "1", "--service", "svc-a")
	telemetrygen(t, col.otlpGRPC, "traces", "--traces", "100", "--workers", "1", "--service", "svc-b")
	accepted := col.waitDrained(t, 60*time.Second)
	spans := int64(accepted["spans"])
	require.Positive(t, spans)

	// Arc-protocol rows of an hour that ended: 60 a minute for 50 minutes,
	// services api and web in turn, posted as ten flushes' worth.
	url := "http://" + sc.http + "/api/v1/write/msgpack"
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	const perPost, posts = 300, 10
	for p := range posts {
		times, services, values := make([]int64, perPost), make([]string, perPost), make([]float64, perPost)
		for i := range perPost {
			n := p*perPost + i
			times[i] = hour.Add(time.Duration(n) * time.Second).UnixMicro()
			services[i] = []string{"api", "web"}[n%2]
			values[i] = float64(n)
		}
		body := pack(t, map[string]any{"m": "requests", "columns": map[string]any{"time": times, "service_name": services, "value": values}})
		require.Equal(t, http.StatusNoContent, post(t, url, body, nil))
		time.Sleep(600 * time.Millisecond) // one flush each
	}
	iso := func(d time.Duration) string { return hour.Add(d).Format("2006-01-02T15:04:05+00:00") } // as PyIceberg parses it
	// The first 1000 seconds hold 1000 rows, 500 of each service.
	scans := []icebergScan{
		{Name: "requests", Table: "default.requests"},
		{Name: "requests api, first 1000 s", Table: "default.requests", Since: iso(0), Until: iso(1000 * time.Second), Service: "api"},
		{Name: "requests 500-1500 s", Table: "default.requests", Since: iso(500 * time.Second), Until: iso(1500 * time.Second)},
		{Name: "traces", Table: "default.traces"},
		{Name: "traces svc-a", Table: "default.traces", Service: "svc-a"},
	}
	want := map[string]int64{"requests": perPost * posts, "requests api, first 1000 s": 500, "requests 500-1500 s": 1000, "traces": spans}
	got := eventually(t, dataDir, scans[:1], []string{"default.requests"}, func(c icebergCounts) bool { return c.Counts["requests"] == perPost*posts },
		"the flushed files reach the table within the commit interval")
	require.Greater(t, got.Files["default.requests"], 1, "several flushed files")

	check := func(what string) {
		t.Helper()
		// Every span accepted is in the table once; DuckDB counts the same
		// over the plain files for the filters whose answer depends on
		// telemetrygen's clock.
		got = eventually(t, dataDir, scans, []string{"default.requests"}, func(c icebergCounts) bool { return c.Counts["traces"] == spans },
			what+": every accepted span in the table")
		for name, n := range want {
			assert.Equal(t, n, got.Counts[name], "%s: %s", what, name)
		}
		svcA := one(t, "SELECT count(*) FROM "+table(dataDir, "traces")+" WHERE service_name = 'svc-a'")
		assert.EqualValues(t, svcA, got.Counts["traces svc-a"], "%s: PyIceberg and DuckDB agree", what)
		assert.Positive(t, got.Counts["traces svc-a"])
		assert.Less(t, got.Counts["traces svc-a"], spans)
	}
	check("flushed")

	// A compaction merges the closed hour: the table swaps its files.
	resp, err := http.Post("http://"+sc.http+"/admin/compact", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	eventually(t, dataDir, nil, []string{"default.requests"}, func(c icebergCounts) bool { return c.Files["default.requests"] == 1 },
		"the compacted hour is one file in the table")
	check("compacted")

	// SIGKILL, more spans, a restart: nothing lost, nothing twice.
	sc.kill()
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	telemetrygen(t, col.otlpGRPC, "traces", "--traces", "50", "--workers", "1", "--service", "svc-c")
	accepted = col.waitDrained(t, 60*time.Second)
	spans = int64(accepted["spans"])
	want["traces"] = spans
	check("killed and restarted")
	assert.EqualValues(t, spans, one(t, "SELECT count(*) FROM "+table(dataDir, "traces")))

	metrics := httpGet(t, "http://"+sc.http+"/metrics")
	assert.Contains(t, metrics, "arcstore_iceberg_lag_seconds 0")
	assert.Regexp(t, `arcstore_iceberg_commits_total\{result="ok"\} [1-9]`, metrics)
	for _, dir := range []string{filepath.Join(dataDir, "default", "traces"), filepath.Join(dataDir, "default", "requests")} {
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			assert.Regexp(t, `^date=`, e.Name(), "nothing but partitions in the hive tree")
		}
	}
	sc.stop(t, 30*time.Second)
}

// TestIcebergCleanStopCommits stops the real sidecar with SIGTERM long
// before its commit interval: the rows of its last flush are in the table
// the moment it has stopped, not at its next start.
func TestIcebergCleanStopCommits(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)),
		"-flush-interval", "1h", "-iceberg", "-iceberg-commit-interval", "1h", "-compact-interval", "0")
	postRows(t, sc, "requests", time.Now().UTC().Add(-time.Hour), 0, 250)
	sc.stop(t, 30*time.Second)

	got, err := pyiceberg(t, dataDir, []icebergScan{{Name: "requests", Table: "default.requests"}}, "default.requests")
	require.NoError(t, err)
	assert.EqualValues(t, 250, got.Counts["requests"], "every row of the last flush in the table after a clean stop")
	assert.EqualValues(t, 250, one(t, "SELECT count(*) FROM "+table(dataDir, "requests")), "the files hold the same rows")
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, fmt.Sprint(url))
	return b.String()
}

// postRows posts n Arc-protocol rows of measurement m, one a second from
// start, values from first, services api and web in turn.
func postRows(t *testing.T, sc *sidecar, m string, start time.Time, first, n int) {
	t.Helper()
	times, services, values := make([]int64, n), make([]string, n), make([]float64, n)
	for i := range n {
		times[i] = start.Add(time.Duration(first+i) * time.Second).UnixMicro()
		services[i] = []string{"api", "web"}[(first+i)%2]
		values[i] = float64(first + i)
	}
	body := pack(t, map[string]any{"m": m, "columns": map[string]any{"time": times, "service_name": services, "value": values}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", body, nil))
}

// TestIcebergBucketWarehouse runs the real sidecar with -s3-bucket and
// -iceberg against versitygw: PyIceberg reads the table's metadata and
// data from the bucket and counts exactly the rows of the closed hour once
// it is uploaded, again after late rows replaced the uploaded object (the
// table swapped them before the old object went: one file), and after
// -local-retention deleted the local partition.
func TestIcebergBucketWarehouse(t *testing.T) {
	srv := s3test.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	args := s3Sidecar(t, srv, "-iceberg", "-iceberg-commit-interval", "1s")
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	env := []string{"S3_ENDPOINT=" + srv.Endpoint, "S3_ACCESS=" + s3test.AccessKey, "S3_SECRET=" + s3test.SecretKey}
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	since := hour.Add(100 * time.Second).Format("2006-01-02T15:04:05+00:00")
	scans := []icebergScan{
		{Name: "all", Table: "default.requests"},
		{Name: "web from 100 s", Table: "default.requests", Since: since, Service: "web"},
	}
	postRows(t, sc, "requests", hour, 0, 1000)
	time.Sleep(300 * time.Millisecond)
	postRows(t, sc, "requests", hour, 1000, 1000)
	time.Sleep(300 * time.Millisecond)
	compactNow(t, sc)
	got := eventuallyEnv(t, dataDir, env, scans, []string{"default.requests"}, func(c icebergCounts) bool { return c.Counts["all"] == 2000 },
		"the uploaded hour in the bucket's table")
	assert.EqualValues(t, 950, got.Counts["web from 100 s"])
	assert.Equal(t, 1, got.Files["default.requests"])

	// Late rows: compacted with the uploaded file into a new one, which
	// replaces the object.
	postRows(t, sc, "requests", hour, 2000, 500)
	time.Sleep(300 * time.Millisecond)
	compactNow(t, sc)
	got = eventuallyEnv(t, dataDir, env, scans, []string{"default.requests"}, func(c icebergCounts) bool { return c.Counts["all"] == 2500 },
		"the late rows in the bucket's table")
	assert.EqualValues(t, 1200, got.Counts["web from 100 s"])
	assert.Equal(t, 1, got.Files["default.requests"], "the replaced object swapped out in the same commit")

	// Local retention: the local partition goes, the table keeps the rows.
	sc.stop(t, 30*time.Second)
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, append(args, "-local-retention", "1h")...)
	partition := filepath.Join(dataDir, "default", "requests", "date="+hour.Format(time.DateOnly), fmt.Sprintf("hour=%d", hour.Hour()))
	require.Eventually(t, func() bool {
		_, err := os.Stat(partition)
		return os.IsNotExist(err)
	}, 60*time.Second, 200*time.Millisecond, "local retention deleted the partition")
	got, err := pyicebergEnv(t, dataDir, env, scans, "default.requests")
	require.NoError(t, err)
	assert.EqualValues(t, 2500, got.Counts["all"])
	assert.EqualValues(t, 1200, got.Counts["web from 100 s"])
	sc.stop(t, 30*time.Second)
}

// TestIcebergTwoSidecarsOneCatalog runs two real sidecars, each with its
// own disk, under load into one closed hour of one measurement, uploading
// to one bucket (versitygw) and committing into one table through one
// PostgreSQL catalog (a real server): their flushes, compactions,
// replacements and commits interleave and collide. PyIceberg then reads
// the table through the same catalog and finds every acknowledged row
// once.
func TestIcebergTwoSidecarsOneCatalog(t *testing.T) {
	srv := s3test.Start(t)
	pg := pgtest.Start(t)
	hour := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	var scs []*sidecar
	for range 2 {
		args := s3Sidecar(t, srv, "-iceberg", "-iceberg-catalog", pg.URI, "-iceberg-commit-interval", "1s")
		scs = append(scs, startSidecar(t, filepath.Join(t.TempDir(), "data"), addr(freePort(t)), addr(freePort(t)), args...))
	}
	var acked atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	const writers, perPost = 3, 400
	for s, sc := range scs {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					first := (s*writers+w)*100_000_000 + n*perPost
					times, values := make([]int64, perPost), make([]float64, perPost)
					for i := range perPost {
						times[i] = hour.Add(time.Duration((first+i)%3_600_000) * time.Millisecond).UnixMicro()
						values[i] = float64(first + i)
					}
					body := pack(t, map[string]any{"m": "requests", "columns": map[string]any{"time": times, "value": values}})
					if post(t, "http://"+sc.http+"/api/v1/write/msgpack", body, nil) == http.StatusNoContent {
						acked.Add(perPost)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
	}
	// Compactions (each a replacement of the hour's object) while the load runs.
	for range 5 {
		time.Sleep(2 * time.Second)
		for _, sc := range scs {
			compactNow(t, sc)
		}
	}
	close(stop)
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // the last flush
	for _, sc := range scs {
		compactNow(t, sc)
	}
	total := acked.Load()
	require.Positive(t, total)
	uri := "postgresql+psycopg2://" + strings.TrimSuffix(strings.TrimPrefix(pg.URI, "postgres://"), "?sslmode=disable")
	env := []string{"CATALOG_URI=" + uri, "S3_ENDPOINT=" + srv.Endpoint, "S3_ACCESS=" + s3test.AccessKey, "S3_SECRET=" + s3test.SecretKey}
	scans := []icebergScan{{Name: "all", Table: "default.requests", Distinct: "value"}}
	got := eventuallyEnv(t, "", env, scans, []string{"default.requests"}, func(c icebergCounts) bool { return c.Counts["all"] == total },
		"every acknowledged row in the shared table")
	assert.Equal(t, total, got.Distinct["all"], "none twice")
	assert.Equal(t, 2, got.Files["default.requests"], "each sidecar's compacted hour, one object each")
	for _, sc := range scs {
		m := httpGet(t, "http://"+sc.http+"/metrics")
		t.Logf("sidecar %s: %s", sc.http, grepLines(m, "arcstore_iceberg_commits_total"))
		sc.stop(t, 30*time.Second)
	}
	t.Logf("%d rows acknowledged by two sidecars", total)
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}
