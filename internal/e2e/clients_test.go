package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// python runs a script of testdata/ with the pinned client libraries that
// `make tools` installs (.tools/pyclients, pyarrow from .tools/py) and
// decodes the JSON it prints.
func python(t *testing.T, script string, env map[string]string, out any) {
	t.Helper()
	libs := filepath.Join(repoRoot, ".tools", "pyclients")
	if _, err := os.Stat(filepath.Join(libs, ".installed")); err != nil {
		t.Fatalf("the pinned Python clients are not installed in %s: run `make tools`", libs)
	}
	cmd := exec.Command("python3", filepath.Join("testdata", script))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+libs+string(os.PathListSeparator)+filepath.Join(repoRoot, ".tools", "py"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "%s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(stdout, out), "%s printed %q", script, stdout)
}

// parquetOf reads one database's measurement, every schema it was written
// with.
func parquetOf(dataDir, database, measurement string) string {
	return fmt.Sprintf("read_parquet('%s/%s/%s/**/*.parquet', hive_partitioning = true, union_by_name = true)", dataDir, database, measurement)
}

// TestArcPythonSDK writes with every write method of Arc's own Python SDK,
// arc-tsdb-client 0.1.2 as published, against the real arcstore, and reads
// every row back with DuckDB.
func TestArcPythonSDK(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("sdk-token\n"), 0o600))
	httpAddr := addr(freePort(t))
	sc := startSidecar(t, dataDir, addr(freePort(t)), httpAddr, "-auth-token-file", tokenFile)
	baseUS := time.Now().Add(-time.Hour).Truncate(time.Second).UnixMicro()

	var got struct {
		Sent    map[string]int64
		Refused string
	}
	python(t, "arc_sdk.py", map[string]string{
		"ARC_PORT": httpAddr[strings.LastIndex(httpAddr, ":")+1:], "ARC_TOKEN": "sdk-token", "ARC_BASE_US": fmt.Sprint(baseUS),
	}, &got)
	assert.Contains(t, got.Refused, "400")
	assert.Contains(t, got.Refused, `partial write: line 2: field type conflict: input field "v" on measurement "sdk_bad" is type float, already exists as type integer (line 1) dropped=1`)
	sc.stop(t, 30*time.Second)

	require.Len(t, got.Sent, 9, "every write method: %v", got.Sent)
	for key, n := range got.Sent {
		db, m, _ := strings.Cut(key, "/")
		assert.EqualValues(t, n, one(t, "SELECT count(*) FROM "+parquetOf(dataDir, db, m)), key)
	}
	assert.EqualValues(t, 1, one(t, "SELECT sum(v)::INTEGER FROM "+parquetOf(dataDir, "default", "sdk_bad")), "a partial write keeps the good line, v=1i, and drops v=2.5")

	q := func(m, sql string) []map[string]any {
		return duckdb(t, strings.ReplaceAll(sql, "{T}", parquetOf(dataDir, "default", m)))
	}
	cols := q("sdk_columnar", "SELECT string_agg(host, ',' ORDER BY host) AS hosts, sum(usage_idle) AS idle, sum(cores)::BIGINT AS cores, epoch_us(min(time)) AS t0 FROM {T}")[0]
	assert.Equal(t, "server01,server02,server03", cols["hosts"])
	assert.InDelta(t, 232.8, cols["idle"], 1e-9)
	assert.EqualValues(t, 28, cols["cores"])
	assert.EqualValues(t, baseUS, cols["t0"])

	rows := q("sdk_rows", "SELECT sum(usage) AS usage, sum(count)::BIGINT AS n, count(*) FILTER (WHERE ok) AS oks, string_agg(note, ',' ORDER BY time) AS notes, string_agg(host, ',' ORDER BY time) AS hosts, epoch_us(max(time)) AS t FROM {T}")[0]
	assert.InDelta(t, 62.5, rows["usage"], 1e-9, "tags and fields became columns")
	assert.EqualValues(t, 10, rows["n"])
	assert.EqualValues(t, 3, rows["oks"])
	assert.Equal(t, "row 0,row 1,row 2,row 3,row 4", rows["notes"])
	assert.Equal(t, "h0,h1,h2,h3,h4", rows["hosts"])
	assert.EqualValues(t, baseUS+4, rows["t"])

	arrow := q("sdk_arrow", "SELECT string_agg(host, ',' ORDER BY host) AS hosts, sum(value) AS v FROM {T}")[0]
	assert.Equal(t, "arrow1,arrow2", arrow["hosts"])
	assert.InDelta(t, 85.5, arrow["v"], 1e-9)

	buffered := q("sdk_buffered", "SELECT sum(value) AS v, count(DISTINCT source) AS sources, count(DISTINCT time) AS times FROM {T}")[0]
	assert.InDelta(t, 300.0, buffered["v"], 1e-9)
	assert.EqualValues(t, 3, buffered["sources"])
	assert.EqualValues(t, 25, buffered["times"])

	lp := q("sdk_lp", "SELECT string_agg(host || '=' || usage, ',' ORDER BY host) AS v, count(*) FILTER (WHERE epoch_us(time) = "+fmt.Sprint(baseUS)+") AS at_base FROM {T}")[0]
	assert.Equal(t, "server01=45.2,server02=67.8,server03=1.0", lp["v"])
	assert.EqualValues(t, 1, lp["at_base"], "one line had a timestamp; the others were stamped on arrival")

	point := q("sdk_point", "SELECT room, label, temp, epoch_us(time) AS t FROM {T}")[0]
	assert.Equal(t, "a b,c=d", point["room"], "escaped by the client, unescaped by the parser")
	assert.Equal(t, `say "hi"`, point["label"])
	assert.InDelta(t, 21.5, point["temp"], 1e-9)
	assert.EqualValues(t, baseUS+5, point["t"])

	assert.EqualValues(t, 21, one(t, "SELECT sum(v)::BIGINT FROM "+parquetOf(dataDir, "default", "sdk_async_buffered")))
}

// TestInfluxClientAndTelegraf drives the InfluxDB endpoints the way
// existing agents do: InfluxData's official Python client on
// /api/v2/write in every precision, plain and gzip, and Telegraf's
// influxdb output format on /write (1.x: db, precision=s, basic auth,
// gzip), then reads every row back with DuckDB.
func TestInfluxClientAndTelegraf(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("influx-token\n"), 0o600))
	httpAddr := addr(freePort(t))
	sc := startSidecar(t, dataDir, addr(freePort(t)), httpAddr, "-auth-token-file", tokenFile)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	var got struct {
		Sent    int64
		Refused struct {
			Status  int
			Message string
		}
		Unauthorized int
	}
	python(t, "influx_client.py", map[string]string{
		"ARC_URL": "http://" + httpAddr, "ARC_TOKEN": "influx-token", "ARC_BASE_S": fmt.Sprint(base.Unix()),
	}, &got)
	assert.Equal(t, http.StatusBadRequest, got.Refused.Status)
	assert.Equal(t, `partial write: line 2: field type conflict: input field "v" on measurement "influx_bad" is type float, already exists as type integer (line 1) dropped=1`, got.Refused.Message)
	assert.Equal(t, http.StatusUnauthorized, got.Unauthorized)

	// What Telegraf's influxdb output sends: its influx serializer's lines
	// (tags sorted, integers with i, strings quoted), gzip, basic auth.
	var telegraf bytes.Buffer
	for i := range 50 {
		fmt.Fprintf(&telegraf, "cpu,cpu=cpu%d,host=agent\\ 1 usage_idle=%d.25,usage_user=1.5 %d\n", i%4, i, base.Unix()+int64(i))
		fmt.Fprintf(&telegraf, "mem,host=agent\\ 1 available=%di,used_percent=12.5,swap=false %d\n", 1000+i, base.Unix()+int64(i))
	}
	fmt.Fprintf(&telegraf, "procstat,host=agent\\ 1,process_name=arcstore cmdline=\"arcstore -data-dir \\\"/var/lib/arc\\\"\",pid=42i %d\n", base.Unix())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(telegraf.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	req, err := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/write?db=telegraf&rp=autogen&precision=s", &gz)
	require.NoError(t, err)
	req.SetBasicAuth("telegraf", "influx-token")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "Telegraf/1.36.0")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	sc.stop(t, 30*time.Second)

	cpu := duckdb(t, "SELECT count(*) AS n, count(DISTINCT prec) AS precs, count(DISTINCT time) AS times, epoch(min(time))::BIGINT AS t, "+
		"sum(usage) AS usage, sum(count)::BIGINT AS count, bool_and(ok) AS ok, min(note) AS note FROM "+parquetOf(dataDir, "influx", "influx_cpu"))[0]
	assert.EqualValues(t, got.Sent-2, cpu["n"])
	assert.EqualValues(t, 4, cpu["precs"])
	assert.EqualValues(t, 1, cpu["times"], "s, ms, us and ns land on the same instant")
	assert.EqualValues(t, base.Unix(), cpu["t"])
	assert.InDelta(t, 8*(0.5+1.5+2.5), cpu["usage"], 1e-9)
	assert.EqualValues(t, 8*3, cpu["count"])
	assert.Equal(t, true, cpu["ok"])
	assert.Equal(t, `a "quoted", string`, cpu["note"])
	mem := duckdb(t, "SELECT count(*) AS n, min(host) AS host, sum(free)::BIGINT AS free FROM "+parquetOf(dataDir, "influx", "influx_mem"))[0]
	assert.EqualValues(t, 2, mem["n"])
	assert.Equal(t, "h 1", mem["host"])
	assert.EqualValues(t, 24, mem["free"])

	tcpu := duckdb(t, "SELECT count(*) AS n, count(DISTINCT cpu) AS cpus, min(host) AS host, sum(usage_idle) AS idle, epoch(max(time))::BIGINT AS t FROM "+parquetOf(dataDir, "telegraf", "cpu"))[0]
	assert.EqualValues(t, 50, tcpu["n"])
	assert.EqualValues(t, 4, tcpu["cpus"])
	assert.Equal(t, "agent 1", tcpu["host"])
	assert.InDelta(t, 1225+50*0.25, tcpu["idle"], 1e-9)
	assert.EqualValues(t, base.Unix()+49, tcpu["t"])
	assert.EqualValues(t, 50*1000+1225, one(t, "SELECT sum(available)::BIGINT FROM "+parquetOf(dataDir, "telegraf", "mem")))
	assert.Equal(t, `arcstore -data-dir "/var/lib/arc"`, one(t, "SELECT cmdline FROM "+parquetOf(dataDir, "telegraf", "procstat")))
}
