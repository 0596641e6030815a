package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filesPerPartition counts Parquet files by partition folder of a table.
func filesPerPartition(t *testing.T, dir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			out[filepath.Dir(path)]++
		}
		return err
	}))
	return out
}

// TestCompactCommandAndEndpoint compacts the campaign story's many small
// files with `arcstore compact` on the stopped sidecar's directory, checks
// every table reads the same with its partition columns and every span id
// reads back (assertCompactedSpanIDs), then asks a running sidecar to
// compact over HTTP.
func TestCompactCommandAndEndpoint(t *testing.T) {
	out := t.TempDir()
	logs, err := exec.Command(tool(t, "ARCLOAD_BIN", "arcload"), "-scenario", "campaign", "-out", out,
		"-bin-dir", filepath.Join(repoRoot, "bin"), "-duckdb", tool(t, "DUCKDB_BIN", "duckdb"),
		"-sidecar-args", "-flush-interval 20ms").CombinedOutput()
	require.NoError(t, err, "arcload: %s", logs)
	data := filepath.Join(out, "arc", "data")
	tables := []string{"traces", "logs", "events", "metrics"}
	summary := func() map[string]any {
		got := map[string]any{}
		for _, tbl := range tables {
			got[tbl] = duckdb(t, "SELECT date, hour, count(*) AS n, count(DISTINCT time) AS times FROM "+table(data, tbl)+" GROUP BY ALL ORDER BY ALL")
		}
		return got
	}
	before := summary()
	traces := filepath.Join(data, "default", "traces")
	wantIDs := duckdbSpanIDs(t, traces)
	files := filesPerPartition(t, filepath.Join(data, "default", "traces"))
	many := 0
	for _, n := range files {
		many = max(many, n)
	}
	require.Greater(t, many, 1, "the story left several files in a partition: %v", files)

	res, err := exec.Command(tool(t, "ARCSTORE_BIN", "arcstore"), "compact", "-data-dir", data).CombinedOutput()
	require.NoError(t, err, "arcstore compact: %s", res)
	assert.Contains(t, string(res), "compacted ")
	assert.Equal(t, before, summary(), "same rows per partition, partition columns intact")
	closed := 0
	for dir, n := range filesPerPartition(t, filepath.Join(data, "default", "traces")) {
		if !hourEnded(t, dir) {
			continue // the current hour is still open: compaction leaves it
		}
		closed++
		assert.Equal(t, 1, n, "%s: one file after compaction", dir)
	}
	assert.Positive(t, closed, "the 90-minute story spans at least one closed hour")
	assertCompactedSpanIDs(t, traces, wantIDs)

	// A running sidecar: nothing left to compact, and it says so.
	sc := startSidecar(t, data, addr(freePort(t)), addr(freePort(t)))
	resp, err := http.Post("http://"+sc.http+"/admin/compact", "", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.EqualValues(t, 0, body["partitions"], "already compacted")
	metrics, err := http.Get("http://" + sc.http + "/metrics")
	require.NoError(t, err)
	defer metrics.Body.Close()
	text, err := io.ReadAll(metrics.Body)
	require.NoError(t, err)
	assert.Contains(t, string(text), `arcstore_compactions_total{result="ok"} 1`)
	sc.stop(t, 30*time.Second)
}

// hourEnded reports whether a date=YYYY-MM-DD/hour=H folder's hour is over.
func hourEnded(t *testing.T, dir string) bool {
	t.Helper()
	hour, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "hour="))
	require.NoError(t, err)
	day, err := time.Parse(time.DateOnly, strings.TrimPrefix(filepath.Base(filepath.Dir(dir)), "date="))
	require.NoError(t, err)
	return !day.Add(time.Duration(hour+1) * time.Hour).After(time.Now())
}

// assertCompactedSpanIDs checks that the compacted traces tree holds its
// ids as DELTA_LENGTH_BYTE_ARRAY pages (which parquet-go wrote,
// compressed by the flush's zstd encoder: the span ids' about 2x) and
// that DuckDB, pyarrow, Polars, DataFusion, ClickHouse and Spark read
// every one of them back (wantIDs:
// duckdbSpanIDs before the compaction).
func assertCompactedSpanIDs(t *testing.T, traces, wantIDs string) {
	t.Helper()
	for _, col := range []string{"trace_id", "span_id", "parent_span_id"} {
		encodings := duckdb(t, "SELECT DISTINCT encodings FROM parquet_metadata('"+traces+"/**/*.parquet') WHERE path_in_schema = '"+col+"'")
		require.NotEmpty(t, encodings, col)
		for _, e := range encodings {
			assert.Contains(t, e["encodings"], "DELTA_LENGTH_BYTE_ARRAY", col)
		}
	}
	// Random span ids: 4 bits a hex digit, as flushed (parquet-go's own zstd
	// codec stored the story's raw, 1.0x).
	ratio := duckdb(t, "SELECT sum(total_uncompressed_size) / sum(total_compressed_size) AS r FROM parquet_metadata('"+traces+"/**/*.parquet') WHERE path_in_schema = 'span_id' AND file_name LIKE '%-compacted-%'")
	require.Len(t, ratio, 1)
	assert.Greater(t, ratio[0]["r"], 1.9, "compacted span ids Huffman-coded")
	assert.Equal(t, wantIDs, duckdbSpanIDs(t, traces), "DuckDB reads every id of the compacted spans")
	script := `import sys, glob, hashlib, pyarrow.parquet as pq, polars as pl
files = glob.glob(sys.argv[1] + '/**/*.parquet', recursive=True)
cols = ['trace_id', 'span_id', 'parent_span_id']
def digest(rows):
    return hashlib.md5(','.join(sorted(' '.join(r) for r in rows)).encode()).hexdigest()
t = pq.ParquetDataset(files).read(columns=cols)
print(digest(zip(*(t.column(c).to_pylist() for c in cols))))
p = pl.read_parquet(files, columns=cols, hive_partitioning=False)
print(digest(zip(*(p[c].to_list() for c in cols))))
from datafusion import SessionContext
ctx = SessionContext()
ctx.sql("CREATE EXTERNAL TABLE traces STORED AS PARQUET LOCATION '%s/'" % sys.argv[1])
d = ctx.sql("SELECT trace_id, span_id, parent_span_id FROM traces").to_pydict()
print(digest(zip(*(d[c] for c in cols))))`
	cmd := exec.Command("python3", "-c", script, traces)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonTools(t, "py", "polars", "datafusion"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pyarrow, Polars and DataFusion: %s", out)
	lines := strings.Fields(string(out))
	require.Len(t, lines, 3, string(out))
	assert.Equal(t, wantIDs, lines[0], "pyarrow reads every id of the compacted spans")
	assert.Equal(t, wantIDs, lines[1], "Polars reads every id of the compacted spans")
	assert.Equal(t, wantIDs, lines[2], "DataFusion reads every id of the compacted spans")

	// ClickHouse (chdb-core): the same digest in its SQL.
	cmd = exec.Command("python3", "-c", chdbScript)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(repoRoot, ".tools", "chdb"))
	cmd.Stdin = strings.NewReader("SELECT lower(hex(MD5(arrayStringConcat(arraySort(groupArray(concat(trace_id, ' ', span_id, ' ', parent_span_id))), ',')))) AS ids " +
		"FROM file('" + traces + "/**/*.parquet', Parquet, 'trace_id String, span_id String, parent_span_id String')")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "clickhouse: %s", out)
	ch := jsonLines(t, string(out))
	require.Len(t, ch, 1, string(out))
	assert.Equal(t, wantIDs, ch[0]["ids"], "ClickHouse reads every id of the compacted spans")

	spark := sparkPath(t)
	script = `import sys, hashlib
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
rows = spark.read.option("mergeSchema", "true").parquet(sys.argv[1]).select("trace_id", "span_id", "parent_span_id").collect()
print(hashlib.md5(",".join(sorted(" ".join(r) for r in rows)).encode()).hexdigest())`
	cmd = exec.Command("python3", "-c", script, traces)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+spark, "PYSPARK_PYTHON=python3")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err = cmd.Output()
	require.NoError(t, err, "spark: %s", stderr.String())
	assert.Equal(t, wantIDs, strings.TrimSpace(string(out)), "Spark reads every id of the compacted spans")
}

// duckdbSpanIDs is the md5 of a traces tree's ids, one "trace span parent"
// line per span, sorted, joined by commas.
func duckdbSpanIDs(t *testing.T, traces string) string {
	t.Helper()
	rows := duckdb(t, "SELECT md5(string_agg(line, ',' ORDER BY line)) AS ids FROM (SELECT trace_id || ' ' || span_id || ' ' || parent_span_id AS line FROM read_parquet('"+traces+"/**/*.parquet', union_by_name = true))")
	require.Len(t, rows, 1)
	ids, ok := rows[0]["ids"].(string)
	require.True(t, ok, "%v", rows)
	return ids
}
