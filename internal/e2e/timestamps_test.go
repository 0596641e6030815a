package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// lakeTables are the tables of the lake story and the list of structs
// with a time each has.
var lakeTables = map[string]string{"traces": "events", "logs": "", "events": "", "metrics": "exemplars", "cpu": ""}

// lakeCut is the time the engines filter on: some rows of most tables on
// either side of it.
var lakeCut = otlparrowtest.Base.Add(5 * time.Millisecond).UnixMicro()

// writeLakeStory sends the lake story (sendLakeStory) through the real
// collector and sidecar, then stops both: a tree the binaries wrote, for
// the engines to read.
func writeLakeStory(t *testing.T) string {
	t.Helper()
	s := startStack(t)
	sendLakeStory(t, s.collector, s.sidecar)
	s.collector.waitDrained(t, 60*time.Second)
	s.sidecar.stop(t, 30*time.Second)
	return s.sidecar.dataDir
}

// sendLakeStory sends the contract's generators (span events and links,
// exemplars, every metric type, times with nanoseconds) to the collector
// over OTLP, and an Arc measurement over three hours in nanoseconds to the
// sidecar.
func sendLakeStory(t *testing.T, col *collector, sc *sidecar) {
	t.Helper()
	sendTraces(t, col, otlparrowtest.Traces(otlparrowtest.Sent, 10))
	conn, err := grpc.NewClient(col.otlpGRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = plogotlp.NewGRPCClient(conn).Export(ctx, plogotlp.NewExportRequestFromLogs(otlparrowtest.Logs(otlparrowtest.Sent, 10)))
	require.NoError(t, err)
	_, err = pmetricotlp.NewGRPCClient(conn).Export(ctx, pmetricotlp.NewExportRequestFromMetrics(otlparrowtest.Metrics(otlparrowtest.Sent, 10)))
	require.NoError(t, err)
	postCPU(t, sc, 123, "h0", "h1")
}

// sendTraces exports td to the collector over OTLP gRPC.
func sendTraces(t *testing.T, col *collector, td ptrace.Traces) {
	t.Helper()
	conn, err := grpc.NewClient(col.otlpGRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = ptraceotlp.NewGRPCClient(conn).Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	require.NoError(t, err)
}

// postCPU posts six rows of the Arc measurement cpu, one every 20 minutes
// from otlparrowtest.Base plus ns nanoseconds, on the hosts in turn.
func postCPU(t *testing.T, sc *sidecar, ns int, hosts ...string) {
	t.Helper()
	var times []int64
	var names []string
	for i := range 6 {
		times = append(times, otlparrowtest.Base.Add(time.Duration(i)*20*time.Minute+time.Duration(ns)).UnixNano())
		names = append(names, hosts[i%len(hosts)])
	}
	body := pack(t, map[string]any{"m": "cpu", "columns": map[string]any{"time": times, "host": names, "usage": []float64{1, 2, 3, 4, 5, 6}}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", body, nil))
}

// lakeStats are, per table, the rows, the rows at or after lakeCut, the
// first and last time, the partitions and the nested times, in µs.
type lakeStats map[string]map[string]int64

// duckdbLakeStats computes lakeStats with DuckDB.
func duckdbLakeStats(t *testing.T, dataDir string) lakeStats {
	t.Helper()
	out := lakeStats{}
	for tbl, nested := range lakeTables {
		src := fmt.Sprintf("read_parquet('%s/default/%s/**/*.parquet', hive_partitioning = true, union_by_name = true)", dataDir, tbl)
		row := duckdb(t, fmt.Sprintf("SELECT count(*) AS rows, count(*) FILTER (WHERE epoch_us(time) >= %d) AS late, "+
			"epoch_us(min(time)) AS lo, epoch_us(max(time)) AS hi, count(DISTINCT (date, hour)) AS parts FROM %s", lakeCut, src))[0]
		if nested != "" {
			for k, v := range duckdb(t, fmt.Sprintf("SELECT count(*) AS nested, epoch_us(max(x.time)) AS nested_max FROM (SELECT unnest(%s) AS x FROM %s)", nested, src))[0] {
				row[k] = v
			}
		}
		out[tbl] = map[string]int64{}
		for k, v := range row {
			out[tbl][k] = int64(v.(float64))
		}
	}
	return out
}

// pythonLakeStats runs testdata/lake_read.py: lakeStats by pyarrow and by
// Polars, without the partitions.
func pythonLakeStats(t *testing.T, dataDir, mode string) map[string]lakeStats {
	t.Helper()
	cmd := exec.Command("python3", filepath.Join("testdata", "lake_read.py"), dataDir, fmt.Sprint(lakeCut), mode)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonTools(t, "py", "polars"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "lake_read.py: %s", stderr.String())
	var out map[string]lakeStats
	require.NoError(t, json.Unmarshal(stdout, &out), "lake_read.py printed %q", stdout)
	return out
}

// withoutParts drops the partition counts, which the Python script does
// not compute.
func withoutParts(s lakeStats) lakeStats {
	out := lakeStats{}
	for tbl, m := range s {
		out[tbl] = map[string]int64{}
		for k, v := range m {
			if k != "parts" {
				out[tbl][k] = v
			}
		}
	}
	return out
}

// timestampUnits counts the files of a tree by the unit of their
// timestamp columns (MICROS, NANOS; "mixed" for a file with both).
func timestampUnits(t *testing.T, dataDir string) map[string]int {
	t.Helper()
	out := map[string]int{}
	require.NoError(t, filepath.WalkDir(filepath.Join(dataDir, schema.DefaultDatabase), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		info, err := f.Stat()
		require.NoError(t, err)
		pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
		require.NoError(t, err)
		units := map[string]bool{}
		for _, col := range pf.Schema().Columns() {
			leaf, _ := pf.Schema().Lookup(col...)
			if lt := leaf.Node.Type().LogicalType(); lt != nil && strings.HasPrefix(lt.String(), "TIMESTAMP") {
				for _, u := range []string{"MICROS", "NANOS", "MILLIS"} {
					if strings.Contains(lt.String(), u) {
						units[u] = true
					}
				}
			}
		}
		require.Len(t, units, 1, "%s: one unit per file", p)
		for u := range units {
			out[u]++
		}
		return nil
	}))
	return out
}

// TestEarlierBuildsFilesReadByEngines: a tree where every partition holds,
// beside the files this build wrote, a copy written as earlier builds
// wrote (nanosecond timestamps, nested ones included, with nanoseconds
// past the microsecond) reads the same in DuckDB as is, in pyarrow, Polars
// and DataFusion with docs/SCHEMA.md's options: twice the rows, the same
// times at the microsecond (DataFusion also the same partitions, attribute
// map entries and span ids; it refuses the tree without its option).
// `arcstore compact` then rewrites every file in microseconds, merged, and
// all four read the tree with no option.
func TestEarlierBuildsFilesReadByEngines(t *testing.T) {
	dataDir := writeLakeStory(t)
	before := duckdbLakeStats(t, dataDir)
	copies := 0
	require.NoError(t, filepath.WalkDir(filepath.Join(dataDir, schema.DefaultDatabase), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".parquet") || strings.HasSuffix(p, "-earlier.parquet") {
			return err
		}
		storagetest.CopyAsNanoseconds(t, p, strings.TrimSuffix(p, ".parquet")+"-earlier.parquet", 789)
		copies++
		return nil
	}))
	units := timestampUnits(t, dataDir)
	require.Equal(t, map[string]int{"MICROS": copies, "NANOS": copies}, units)

	want := lakeStats{}
	for tbl, m := range before {
		want[tbl] = map[string]int64{}
		for k, v := range m {
			switch k {
			case "rows", "late", "nested":
				v *= 2 // the copies' rows are the same rows again
			}
			want[tbl][k] = v
		}
		assert.Positive(t, m["rows"], tbl)
	}
	assert.Positive(t, before["traces"]["nested"], "span events")
	assert.Positive(t, before["metrics"]["nested"], "exemplars")
	assert.Equal(t, lakeCut-5000, before["traces"]["lo"], "the first span, in µs")
	assert.Equal(t, otlparrowtest.Base.Add(100*time.Minute).UnixMicro(), before["cpu"]["hi"], "Arc nanoseconds truncated to µs")

	mixed := duckdbLakeStats(t, dataDir)
	assert.Equal(t, want, mixed, "DuckDB reads both units as they are")
	py := pythonLakeStats(t, dataDir, "mixed")
	assert.Equal(t, withoutParts(want), py["pyarrow"], "pyarrow with the files' schemas unified")
	assert.Equal(t, withoutParts(want), py["polars"], "Polars with both casts allowed")
	assertDataFusionReads(t, dataDir, "mixed", want)

	res, err := exec.Command(tool(t, "ARCSTORE_BIN", "arcstore"), "compact", "-data-dir", dataDir).CombinedOutput()
	require.NoError(t, err, "arcstore compact: %s", res)
	units = timestampUnits(t, dataDir)
	assert.Equal(t, map[string]int{"MICROS": units["MICROS"]}, units, "no nanosecond file left")
	for dir, n := range filesPerPartition(t, filepath.Join(dataDir, schema.DefaultDatabase)) {
		assert.Equal(t, 1, n, "%s: its files and their copies merged", dir)
	}
	assert.Equal(t, want, duckdbLakeStats(t, dataDir))
	py = pythonLakeStats(t, dataDir, "plain")
	assert.Equal(t, withoutParts(want), py["pyarrow"], "pyarrow, no option")
	assert.Equal(t, withoutParts(want), py["polars"], "Polars, no option")
	assertDataFusionReads(t, dataDir, "plain", want)
}
