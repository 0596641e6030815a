package e2e

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func post(t *testing.T, url string, body []byte, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/msgpack")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func pack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestArcWriteAPIEndToEnd posts Arc payloads of every accepted shape,
// compression and time unit to the real sidecar, then reads them back with
// DuckDB; bad payloads get their 4xx and leave nothing behind.
func TestArcWriteAPIEndToEnd(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-auth-token-file", tokenFile)
	url := "http://" + sc.http + "/api/v1/write/msgpack"
	auth := map[string]string{"Authorization": "Bearer s3cret"}

	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	units := []struct {
		name string
		time int64
	}{
		{"s", base.Unix()}, {"ms", base.UnixMilli()}, {"us", base.UnixMicro()}, {"ns", base.UnixNano()},
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer enc.Close()
	compressions := map[string]func([]byte) []byte{"plain": func(b []byte) []byte { return b }, "gzip": gz, "zstd": func(b []byte) []byte { return enc.EncodeAll(b, nil) }}

	sent := 0
	for _, u := range units {
		for cname, compress := range compressions {
			row := func(i int) map[string]any {
				return map[string]any{"m": "cpu", "columns": map[string]any{
					"time": []int64{u.time}, "host": []string{fmt.Sprintf("%s-%s-%d", u.name, cname, i)},
					"usage": []float64{42.5}, "cores": []int64{8}, "busy": []bool{true}}}
			}
			for shape, body := range map[string]any{
				"object": row(0),
				"array":  []any{row(1), row(2)},
				"batch":  map[string]any{"batch": []any{row(3)}},
			} {
				status := post(t, url, compress(pack(t, body)), auth)
				require.Equal(t, http.StatusNoContent, status, "%s %s %s", u.name, cname, shape)
			}
			sent += 4
		}
	}

	// Refused, and nothing of them stored.
	for name, c := range map[string]struct {
		body   []byte
		header map[string]string
		status int
	}{
		"no token":            {pack(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": []int64{base.Unix()}}}), nil, http.StatusUnauthorized},
		"mismatched lengths":  {pack(t, map[string]any{"m": "bad", "columns": map[string]any{"time": []int64{base.Unix(), base.Unix()}, "v": []int{1}}}), auth, http.StatusBadRequest},
		"unsupported type":    {pack(t, map[string]any{"m": "bad", "columns": map[string]any{"time": []int64{base.Unix()}, "v": []map[string]int{{"a": 1}}}}), auth, http.StatusBadRequest},
		"bad compression":     {append([]byte{0x28, 0xb5, 0x2f, 0xfd}, 1, 2, 3, 4, 5), auth, http.StatusBadRequest},
		"a control character": {pack(t, map[string]any{"m": "bad\x00", "columns": map[string]any{"time": []int64{base.Unix()}}}), auth, http.StatusBadRequest},
		"a name too long":     {pack(t, map[string]any{"m": "bad"}), map[string]string{"Authorization": "Bearer s3cret", "x-arc-database": strings.Repeat("ü", 50)}, http.StatusBadRequest},
	} {
		assert.Equal(t, c.status, post(t, url, c.body, c.header), name)
	}
	// Names that spell paths are stored, each as one folder inside the
	// data directory (storage.MeasurementFolder).
	escape := pack(t, map[string]any{"m": "../escape", "columns": map[string]any{"time": []int64{base.Unix()}}})
	require.Equal(t, http.StatusNoContent, post(t, url, escape, map[string]string{"Authorization": "Bearer s3cret", "x-arc-database": "../../etc"}))
	sc.stop(t, 30*time.Second)
	assert.EqualValues(t, 1, one(t, "SELECT count(*) FROM read_parquet('"+dataDir+"/%2E.%2F..%2Fetc/%2E.%2Fescape/**/*.parquet')"))
	assert.NoFileExists(t, filepath.Join(filepath.Dir(dataDir), "escape"))

	cpu := "read_parquet('" + dataDir + "/default/cpu/**/*.parquet', hive_partitioning = true, union_by_name = true)"
	rows := duckdb(t, "SELECT count(*) AS n, count(DISTINCT host) AS hosts, min(time) = max(time) AS one_time, "+
		"epoch(min(time))::BIGINT AS secs, sum(usage) AS usage, sum(cores)::BIGINT AS cores, bool_and(busy) AS busy FROM "+cpu)
	require.Len(t, rows, 1)
	r := rows[0]
	assert.EqualValues(t, sent, r["n"], "every row posted")
	assert.EqualValues(t, sent, r["hosts"])
	assert.Equal(t, true, r["one_time"], "s, ms, µs and ns all land on the same instant")
	assert.EqualValues(t, base.Unix(), r["secs"])
	assert.InDelta(t, 42.5*float64(sent), r["usage"], 1e-9)
	assert.EqualValues(t, 8*sent, r["cores"])
	assert.Equal(t, true, r["busy"])
	tables := duckdb(t, "SELECT DISTINCT split_part(file, '/', -4) AS t FROM glob('"+dataDir+"/**/*.parquet') ORDER BY t")
	assert.Equal(t, []map[string]any{{"t": "%2E.%2Fescape"}, {"t": "cpu"}}, tables, "the refused payloads wrote nothing")
}

// TestRandomIDPagesReadByEngines: the flush writes ids (strings of one
// width, some empty) DELTA_LENGTH_BYTE_ARRAY, pages of random tokens
// (distinct strings of varying width, PLAIN) as zstd frames of
// huff0-coded literals (internal/parquetfile's literals.go), and pages of
// random floats and of the deltas of unordered times
// (DELTA_BINARY_PACKED) as zstd frames of raw blocks; DuckDB, pyarrow,
// Polars, DataFusion, ClickHouse and Spark, each with its own decoders,
// read every id, value and time back.
func TestRandomIDPagesReadByEngines(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)))
	const rows = 30_000 // one page of ids of about 1 MiB, of values of 240 KB
	base := time.Now().Add(-time.Hour).Truncate(time.Hour).UnixNano()
	times, seqs, values := make([]int64, rows), make([]int64, rows), make([]float64, rows)
	ids, parents, tokens := make([]string, rows), make([]string, rows), make([]string, rows)
	for i := range rows {
		// Times in random order within a minute, at the microsecond.
		times[i], seqs[i] = base+rand.Int64N(60e6)*1000, int64(i)
		ids[i] = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())
		if i%3 != 0 { // a root span has no parent: lengths 0 and 16
			parents[i] = fmt.Sprintf("%016x", rand.Uint64())
		}
		tokens[i] = fmt.Sprintf("%016x%016x", rand.Uint64(), rand.Uint64())[:16+rand.IntN(17)]
		values[i] = 10 + 490*rand.Float64()
	}
	body := pack(t, map[string]any{"m": "spans", "columns": map[string]any{"time": times, "seq": seqs, "trace_id": ids, "parent_id": parents, "token": tokens, "value": values}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", body, nil))
	sc.stop(t, 30*time.Second)

	var all strings.Builder
	for i := range rows {
		fmt.Fprintf(&all, "%s %s %s %d %.17g,", ids[i], parents[i], tokens[i], times[i]/1000, values[i])
	}
	sum := md5.Sum([]byte(all.String()))
	want := hex.EncodeToString(sum[:])
	spans := parquetOf(dataDir, "default", "spans")
	got := duckdb(t, "SELECT count(*) AS n, md5(string_agg(trace_id || ' ' || parent_id || ' ' || token || ' ' || epoch_us(time) || ' ' || printf('%.17g', value) || ',', '' ORDER BY seq)) AS ids FROM "+spans)[0]
	assert.EqualValues(t, rows, got["n"])
	assert.Equal(t, want, got["ids"], "DuckDB reads every id, time and value")
	for _, col := range []string{"trace_id", "parent_id"} {
		encodings := duckdb(t, "SELECT DISTINCT encodings FROM parquet_metadata('"+filepath.Join(dataDir, "default", "spans")+"/**/*.parquet') WHERE path_in_schema = '"+col+"'")
		require.NotEmpty(t, encodings, col)
		for _, e := range encodings {
			assert.Contains(t, e["encodings"], "DELTA_LENGTH_BYTE_ARRAY", col)
		}
	}

	script := `import sys, glob, hashlib, pyarrow.parquet as pq, polars as pl
from datafusion import SessionContext
files = glob.glob(sys.argv[1] + '/**/*.parquet', recursive=True)
def digest(*cols):
    return hashlib.md5(''.join('%s %s %s %d %.17g,' % row for row in zip(*cols)).encode()).hexdigest()
t = pq.ParquetDataset(files).read(columns=['seq', 'trace_id', 'parent_id', 'token', 'time', 'value']).sort_by('seq')
print(digest(*(t.column(c).to_pylist() for c in ('trace_id', 'parent_id', 'token')), t.column('time').cast('int64').to_pylist(), t.column('value').to_pylist()))
p = pl.read_parquet(files, hive_partitioning=False).sort('seq')
print(digest(p['trace_id'].to_list(), p['parent_id'].to_list(), p['token'].to_list(), p['time'].dt.epoch('us').to_list(), p['value'].to_list()))
ctx = SessionContext()
ctx.sql("CREATE EXTERNAL TABLE spans STORED AS PARQUET LOCATION '%s/'" % sys.argv[1])
d = ctx.sql("SELECT trace_id, parent_id, token, CAST(time AS BIGINT) AS us, arrow_typeof(time) AS type, value FROM spans ORDER BY seq").to_pydict()
print(digest(d['trace_id'], d['parent_id'], d['token'], d['us'], d['value']), *set(d['type']))`
	cmd := exec.Command("python3", "-c", script, filepath.Join(dataDir, "default", "spans"))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonTools(t, "py", "polars", "datafusion"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "pyarrow, Polars and DataFusion: %s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 3, string(out))
	assert.Equal(t, want, lines[0], "pyarrow reads every id, time and value")
	assert.Equal(t, want, lines[1], "Polars reads every id, time and value")
	assert.Equal(t, want+` Timestamp(µs, "UTC")`, lines[2], "DataFusion reads every id, time (µs) and value")

	// ClickHouse (chdb-core): the same sums of the ids, times and values.
	var idSum, parentSum, tokenSum uint64
	var timeSum int64 // µs after base: the times themselves would overflow
	var valueSum float64
	for i := range rows {
		idSum += uint64(crc32.ChecksumIEEE([]byte(ids[i])))
		parentSum += uint64(crc32.ChecksumIEEE([]byte(parents[i])))
		tokenSum += uint64(crc32.ChecksumIEEE([]byte(tokens[i])))
		timeSum += (times[i] - base) / 1000
		valueSum += values[i]
	}
	chdb := filepath.Join(repoRoot, ".tools", "chdb")
	cmd = exec.Command("python3", "-c", chdbScript)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+chdb)
	cmd.Stdin = strings.NewReader("SELECT count() AS n, sum(CRC32(trace_id)) AS ids, sum(CRC32(parent_id)) AS parents, sum(CRC32(token)) AS tokens, sum(toUnixTimestamp64Micro(time) - " + strconv.FormatInt(base/1000, 10) + ") AS times, sum(value) AS values " +
		"FROM file('" + filepath.Join(dataDir, "default", "spans") + "/**/*.parquet', Parquet)")
	out, err = cmd.CombinedOutput()
	require.NoError(t, err, "clickhouse: %s", out)
	ch := jsonLines(t, string(out))
	require.Len(t, ch, 1, string(out))
	assert.EqualValues(t, rows, ch[0]["n"])
	assert.EqualValues(t, idSum, ch[0]["ids"], "ClickHouse reads every id")
	assert.EqualValues(t, parentSum, ch[0]["parents"], "ClickHouse reads every parent id")
	assert.EqualValues(t, tokenSum, ch[0]["tokens"], "ClickHouse reads every token")
	assert.EqualValues(t, timeSum, ch[0]["times"], "ClickHouse reads every time")
	assert.InDelta(t, valueSum, ch[0]["values"], 1e-6*valueSum, "ClickHouse reads every value")

	t.Run("spark", func(t *testing.T) {
		spark := sparkPath(t)
		script := `import sys, hashlib
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
rows = spark.read.parquet(sys.argv[1]).selectExpr("seq", "trace_id", "parent_id", "token", "unix_micros(time) AS us", "value").orderBy("seq").collect()
print(hashlib.md5("".join("%s %s %s %d %.17g," % (r.trace_id, r.parent_id, r.token, r.us, r.value) for r in rows).encode()).hexdigest())`
		cmd := exec.Command("python3", "-c", script, filepath.Join(dataDir, "default", "spans"))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+spark, "PYSPARK_PYTHON=python3")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "spark: %s", stderr.String())
		assert.Equal(t, want, strings.TrimSpace(string(out)), "Spark reads every id, time and value")
	})
}
