package e2e

import (
	"fmt"
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
	"github.com/vmihailenco/msgpack/v5"
)

// orderedColumns is an Arc columnar object whose columns come in the given
// order (name, values, name, values, ...): which of two names equal but
// for case keeps its name depends on it, and msgpack.Marshal orders a
// map's keys as it likes.
func orderedColumns(t *testing.T, m string, cols ...any) []byte {
	t.Helper()
	var buf strings.Builder
	e := msgpack.NewEncoder(&buf)
	require.NoError(t, e.EncodeMapLen(2))
	require.NoError(t, e.EncodeString("m"))
	require.NoError(t, e.EncodeString(m))
	require.NoError(t, e.EncodeString("columns"))
	require.NoError(t, e.EncodeMapLen(len(cols)/2))
	for i := 0; i < len(cols); i += 2 {
		require.NoError(t, e.EncodeString(cols[i].(string)))
		require.NoError(t, e.Encode(cols[i+1]))
	}
	return []byte(buf.String())
}

// TestTakenColumnNamesReadBack is issue 31 item 6 with the real sidecar
// and DuckDB: columns named TIME, Date or HOUR (any case) were stored as
// sent, and DuckDB with hive_partitioning then answered `SELECT time` with
// the client's TIME and replaced Date and HOUR with the partition's
// values. Now every write API keeps them as <name>_value, so time, date
// and hour read back as the timestamp and its partition, and the client's
// values under their own names.
func TestTakenColumnNamesReadBack(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)))
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	columnar := orderedColumns(t, "cols", "time", []int64{at.UnixMilli()}, "TIME", []string{"client"},
		"Date", []string{"1999-01-01"}, "HOUR", []int64{23}, "usage", []float64{1.5}, "Usage", []float64{2.5})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", columnar, nil))
	rows := pack(t, map[string]any{"m": "rows", "t": at.UnixMilli(), "fields": map[string]any{"TIME": "client", "HOUR": 23}, "tags": map[string]any{"Date": "1999-01-01"}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", rows, nil))
	line := fmt.Sprintf("lines,Date=1999-01-01 TIME=\"client\",HOUR=23i,usage=1.5,Usage=2.5 %d\n", at.UnixNano())
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/write?db=default", []byte(line), nil))
	sc.stop(t, 30*time.Second)

	for _, m := range []string{"cols", "rows", "lines"} {
		got := duckdb(t, "SELECT epoch_ms(time) AS time, date::VARCHAR AS date, hour, TIME_value, Date_value, HOUR_value FROM "+
			parquetOf(dataDir, "default", m))
		require.Len(t, got, 1, m)
		assert.Equal(t, map[string]any{"time": float64(at.UnixMilli()), "date": "2026-11-22", "hour": float64(9),
			"TIME_value": "client", "Date_value": "1999-01-01", "HOUR_value": float64(23)}, got[0], m)
	}
	for _, m := range []string{"cols", "lines"} {
		got := duckdb(t, "SELECT usage, Usage_value FROM "+parquetOf(dataDir, "default", m))
		assert.Equal(t, []map[string]any{{"usage": 1.5, "Usage_value": 2.5}}, got, "%s: a name equal to another but for case keeps its value under its own name", m)
	}
}

// telegrafBin finds the telegraf that `make tools` builds (TELEGRAF_BIN,
// .tools, PATH). Without one the test is skipped, unless
// ARC_REQUIRE_TELEGRAF=1 (make test sets it), when it fails.
func telegrafBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TELEGRAF_BIN"); p != "" {
		return p
	}
	if p := filepath.Join(repoRoot, ".tools", "telegraf"); fileExists(p) {
		return p
	}
	if p, err := exec.LookPath("telegraf"); err == nil {
		return p
	}
	if os.Getenv("ARC_REQUIRE_TELEGRAF") == "1" {
		t.Fatal("telegraf not found: run `make tools` (or set TELEGRAF_BIN)")
	}
	t.Skip("telegraf not found: run `make tools` (or set TELEGRAF_BIN); ARC_REQUIRE_TELEGRAF=1 makes this a failure")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sidecarSeries is the value of one series (name and labels, as
// /metrics prints them) of the sidecar's metrics.
func sidecarSeries(t *testing.T, sc *sidecar, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + sc.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return f
		}
	}
	t.Fatalf("no series %s in the sidecar's metrics", series)
	return 0
}

const telegrafConfig = `
[agent]
  omit_hostname = true
  debug = true
  metric_batch_size = 1000

[[inputs.file]]
  files = [%[1]q]
  data_format = "influx"

[[outputs.influxdb]]
  urls = ["http://%[2]s"]
  database = "telegraf.v1"
  username = "telegraf"
  password = %[3]q
  content_encoding = "gzip"

[[outputs.influxdb_v2]]
  urls = ["http://%[2]s"]
  token = %[3]q
  organization = "arc"
  bucket = "telegraf.v2"
`

// TestTelegrafOddNames is the Done-when of issue 31 item 7 with the real
// Telegraf v1.37.2 (make tools builds it with only these plugins): it
// reads a file of metrics named as Prometheus, recording rules, JMX and
// people name them, beside ordinary ones and a few lines the sidecar
// cannot take, and sends them through both InfluxDB outputs into
// databases whose names have dots. Telegraf drops a whole batch answered
// 4xx, and one odd name made the sidecar refuse the whole batch: now every
// good metric is in Parquet, under its name's folder, and the bad lines
// are dropped, counted, and told to Telegraf as InfluxDB's partial write.
func TestTelegrafOddNames(t *testing.T) {
	bin := telegrafBin(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokenFile, []byte("telegraf-token\n"), 0o600))
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-auth-token-file", tokenFile)
	base := time.Now().Add(-time.Hour).Truncate(time.Second)

	// Each good metric: its name as sent, its folder, how many lines.
	good := []struct {
		line, folder string
		n            int
	}{
		{"cpu,cpu=cpu0 usage_idle=%d.5,usage_user=1.5", "cpu", 20},
		{"apiserver_flowcontrol_priority_level_request_count_watermarks_bucket,le=0.25,phase=executing value=%di", "apiserver_flowcontrol_priority_level_request_count_watermarks_bucket", 5},
		{"job:http_requests:rate5m,job=api value=%d.25", "job%3Ahttp_requests%3Arate5m", 5},
		{"java.lang:type=Memory,host=jvm1 HeapMemoryUsage.used=%di", "java.lang%3Atype%3DMemory", 5},
		{`disk\ io,device=sda reads=%di`, "disk%20io", 5},
		{"température,salle=cuisine valeur=%d.5", "temp%C3%A9rature", 5},
		{"traces,source=app spans=%di", "%74races", 3},
		{"probe,Host=a,host=b TIME=%di,Date=\"d\",hour=1i", "probe", 3},
		{"types v=%di", "types", 1},
	}
	var lp strings.Builder
	ts := base.UnixNano()
	for _, g := range good {
		for i := range g.n {
			fmt.Fprintf(&lp, g.line+" %d\n", i, ts)
			ts++
		}
	}
	// Lines the sidecar cannot take: a field whose type changes within
	// the batch, a measurement name and a tag key too long to store.
	bad := []string{
		"types v=2.5",
		strings.Repeat("m", 300) + " v=1i",
		"cpu," + strings.Repeat("k", 300) + "=x usage_idle=1.5",
	}
	for _, b := range bad {
		fmt.Fprintf(&lp, "%s %d\n", b, ts)
		ts++
	}
	input := filepath.Join(t.TempDir(), "metrics.lp")
	require.NoError(t, os.WriteFile(input, []byte(lp.String()), 0o600))
	config := filepath.Join(t.TempDir(), "telegraf.conf")
	require.NoError(t, os.WriteFile(config, fmt.Appendf(nil, telegrafConfig, input, sc.http, "telegraf-token"), 0o600))

	cmd := exec.Command(bin, "--config", config, "--once")
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	log := string(out)
	t.Logf("telegraf:\n%s", log)
	require.NoError(t, err)
	// "404 Not Found", not "404": the sidecar's random port may hold it.
	assert.False(t, strings.Contains(log, "404 Not Found") || strings.Contains(log, "creation failed"), "CREATE DATABASE is answered (the log is above)")
	for output, answer := range map[string]string{
		"influxdb":    "[outputs.influxdb] Failed to write metric (will be dropped: 400 Bad Request): partial write: line ",
		"influxdb_v2": "[outputs.influxdb_v2] failed to write metrics to telegraf.v2 (will be dropped: 400 Bad Request): invalid: partial write: line ",
	} {
		assert.True(t, strings.Contains(log, answer), "outputs.%s was told of the dropped lines as InfluxDB tells it (the log is above)", output)
	}

	for _, endpoint := range []string{"/write", "/api/v2/write"} {
		assert.EqualValues(t, len(bad), sidecarSeries(t, sc, `arcstore_lines_dropped_total{endpoint="`+endpoint+`"}`), endpoint)
	}
	sc.stop(t, 30*time.Second)
	for _, db := range []string{"telegraf.v1", "telegraf.v2"} {
		for _, g := range good {
			assert.EqualValues(t, g.n, one(t, "SELECT count(*) FROM "+parquetOf(dataDir, db, g.folder)), "%s/%s", db, g.folder)
		}
		assert.Equal(t, "0", fmt.Sprint(one(t, "SELECT string_agg(v::VARCHAR, ',') FROM "+parquetOf(dataDir, db, "types"))),
			"%s: the first type stays, the point that changed it is dropped", db)
		probe := duckdb(t, "SELECT Host, host_value, TIME_value, Date_value, hour_value, hour FROM "+parquetOf(dataDir, db, "probe")+" LIMIT 1")
		require.Len(t, probe, 1)
		assert.Equal(t, "a", probe[0]["Host"], db)
		assert.Equal(t, "b", probe[0]["host_value"], db)
		assert.Equal(t, "d", probe[0]["Date_value"], db)
		assert.EqualValues(t, base.UTC().Hour(), probe[0]["hour"], "%s: hour is the partition's", db)
		names := duckdb(t, "SELECT DISTINCT url_decode(split_part(filename, '/', -4)) AS m FROM read_parquet('"+dataDir+"/"+db+"/*/**/*.parquet', filename = true, union_by_name = true) ORDER BY m")
		assert.Len(t, names, len(good), "%s: no other table: %v", db, names)
	}
}
