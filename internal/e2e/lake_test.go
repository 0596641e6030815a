package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// lakeLateService is the service of the spans sent after the compaction:
// the only spans from docs/LAKE.md's time literal on.
const lakeLateService = "svc-late"

// writeIcebergLake runs the real binaries with -iceberg on the lake story
// so that the tables hold both kinds of files the sidecar writes: the
// story is flushed and then compacted (every hour of it has ended), then
// spans of the current hour and late cpu rows in a compacted hour are
// flushed beside. A last start of the sidecar, with nothing to write,
// brings the tables up to date with the stopped tree. It returns the data
// directory, whose parent is laid out like a checkout after `make run`:
// ./data and ./.tools (a link to the repository's), so that docs/LAKE.md's
// snippets run there as written.
func writeIcebergLake(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.Symlink(filepath.Join(repoRoot, ".tools"), filepath.Join(root, ".tools")))
	dataDir := filepath.Join(root, "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	args := []string{"-flush-interval", "500ms", "-iceberg", "-iceberg-commit-interval", "500ms", "-compact-interval", "0"}
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, sc.grpc)
	sendLakeStory(t, col, sc)
	col.waitDrained(t, 60*time.Second)
	sc.stop(t, 30*time.Second) // flushes what is buffered

	// The story again, moved ten minutes on (new rows in the same hours),
	// flushed beside the first files, then merged with them.
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	sendTraces(t, col, movedTraces(otlparrowtest.Traces(otlparrowtest.Sent, 10), 10*time.Minute, "svc-moved"))
	postCPU(t, sc, 10*int(time.Minute), "h3")
	col.waitDrained(t, 60*time.Second)
	tracesHour := filepath.Join(dataDir, schema.DefaultDatabase, "traces", "date="+otlparrowtest.Base.Format(time.DateOnly), "hour="+strconv.Itoa(otlparrowtest.Base.Hour()))
	cpuHour := filepath.Join(dataDir, schema.DefaultDatabase, "cpu", "date="+otlparrowtest.Base.Format(time.DateOnly), "hour="+strconv.Itoa(otlparrowtest.Base.Hour()))
	require.Eventually(t, func() bool {
		n := filesPerPartition(t, filepath.Join(dataDir, schema.DefaultDatabase))
		return n[tracesHour] == 2 && n[cpuHour] == 2
	}, 30*time.Second, 100*time.Millisecond, "the moved story flushed beside the first")
	compactNow(t, sc)
	n := filesPerPartition(t, filepath.Join(dataDir, schema.DefaultDatabase))
	require.Equal(t, []int{1, 1}, []int{n[tracesHour], n[cpuHour]}, "the story's hours compacted")

	// Flushed files beside the compacted ones: spans of the current hour,
	// late cpu rows in a compacted hour.
	telemetrygen(t, col.otlpGRPC, "traces", "--traces", "40", "--workers", "1", "--service", lakeLateService)
	postCPU(t, sc, 456, "h2")
	col.waitDrained(t, 60*time.Second)
	sc.stop(t, 30*time.Second)
	require.Equal(t, 2, filesPerPartition(t, cpuHour)[cpuHour], "late rows flushed beside the compacted file")

	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	var files int
	for _, n := range filesPerPartition(t, filepath.Join(dataDir, schema.DefaultDatabase)) {
		files += n
	}
	require.Eventually(t, func() bool {
		m := httpGet(t, "http://"+sc.http+"/metrics")
		return metricValue(m, "arcstore_iceberg_last_pass_timestamp_seconds") > 0 &&
			metricValue(m, "arcstore_iceberg_files") == float64(files) &&
			metricValue(m, "arcstore_iceberg_lag_seconds") == 0 && metricValue(m, "arcstore_iceberg_refused_files") == 0
	}, 60*time.Second, 200*time.Millisecond, "the tables list the %d files of the tree", files)
	sc.stop(t, 30*time.Second)
	col.stop(t, 30*time.Second)
	return dataDir
}

// movedTraces moves every time of td by d and names its services service:
// rows that are new to the sidecar.
func movedTraces(td ptrace.Traces, d time.Duration, service string) ptrace.Traces {
	move := func(ts pcommon.Timestamp) pcommon.Timestamp { return pcommon.NewTimestampFromTime(ts.AsTime().Add(d)) }
	for _, rs := range td.ResourceSpans().All() {
		rs.Resource().Attributes().PutStr("service.name", service)
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				s.SetStartTimestamp(move(s.StartTimestamp()))
				s.SetEndTimestamp(move(s.EndTimestamp()))
				for _, e := range s.Events().All() {
					e.SetTimestamp(move(e.Timestamp()))
				}
			}
		}
	}
	return td
}

// metricValue is the value of an unlabelled series in a Prometheus text
// exposition, -1 when it is absent.
func metricValue(exposition, name string) float64 {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(exposition)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return -1
	}
	return v
}

// lakeDocCut is the time docs/LAKE.md's queries count spans from: after
// every span of the story, before the spans of lakeLateService.
var lakeDocCut = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// lakeDocBlocks are the code blocks of a section (### heading) of
// docs/LAKE.md, in order.
func lakeDocBlocks(t *testing.T, section string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "LAKE.md"))
	require.NoError(t, err)
	text := string(doc)
	i := strings.Index(text, "\n### "+section+"\n")
	require.GreaterOrEqual(t, i, 0, "LAKE.md has a section %q", section)
	text = text[i+1:]
	if j := strings.Index(text[4:], "\n### "); j >= 0 {
		text = text[:j+4]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```\\w*\n(.*?)```").FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// icebergStats are what a table reader and DuckDB over the plain files
// count in each table of the lake (icebergReadStats).
type icebergStats map[string]map[string]int64

// lakeFilterService is the service the service_name filters count.
const lakeFilterService = "svc-1"

// duckdbIcebergStats counts with the DuckDB CLI over the plain files what
// the table readers count: the rows, the rows in [lakeCut, lakeDocCut),
// the rows of lakeFilterService, the first and last time and the nested
// times, in µs.
func duckdbIcebergStats(t *testing.T, dataDir string) icebergStats {
	t.Helper()
	out := icebergStats{}
	for tbl, nested := range lakeTables {
		src := fmt.Sprintf("read_parquet('%s/default/%s/**/*.parquet', hive_partitioning = true, union_by_name = true)", dataDir, tbl)
		svc := "NULL"
		if tbl != "cpu" {
			svc = fmt.Sprintf("count(*) FILTER (WHERE service_name = '%s')", lakeFilterService)
		}
		row := duckdb(t, fmt.Sprintf("SELECT count(*) AS rows, count(*) FILTER (WHERE epoch_us(time) >= %d AND epoch_us(time) < %d) AS window, "+
			"%s AS service, epoch_us(min(time)) AS lo, epoch_us(max(time)) AS hi FROM %s", lakeCut, lakeDocCut.UnixMicro(), svc, src))[0]
		if nested != "" {
			for k, v := range duckdb(t, fmt.Sprintf("SELECT count(*) AS nested, epoch_us(max(x.time)) AS nested_max FROM (SELECT unnest(%s) AS x FROM %s)", nested, src))[0] {
				row[k] = v
			}
		}
		out[tbl] = map[string]int64{}
		for k, v := range row {
			if v != nil {
				out[tbl][k] = int64(v.(float64))
			}
		}
	}
	return out
}

// duckdbDocAnswer is docs/LAKE.md's query (spans by service from
// lakeDocCut on) by the DuckDB CLI over the plain files.
func duckdbDocAnswer(t *testing.T, dataDir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, r := range duckdb(t, fmt.Sprintf("SELECT service_name, count(*) AS spans FROM %s WHERE epoch_us(time) >= %d GROUP BY service_name",
		table(dataDir, "traces"), lakeDocCut.UnixMicro())) {
		out[r["service_name"].(string)] = int64(r["spans"].(float64))
	}
	return out
}

// TestPyIcebergRunsTheSnippet runs docs/LAKE.md's PyIceberg block as
// written on the lake the real binaries wrote with -iceberg (flushed and
// compacted files), in a directory laid out like the checkout: its scan
// (an hour of time, one service_name) returns the rows DuckDB counts over
// the plain files.
func TestPyIcebergRunsTheSnippet(t *testing.T) {
	libs := filepath.Join(repoRoot, ".tools", "pyiceberg")
	_, err := os.Stat(filepath.Join(libs, ".installed"))
	require.NoError(t, err, "PyIceberg is not installed in %s: run `make tools`", libs)
	blocks := lakeDocBlocks(t, "PyIceberg")
	require.Len(t, blocks, 1, "LAKE.md's PyIceberg section: one block")
	dataDir := writeIcebergLake(t)
	from := otlparrowtest.Base.Truncate(time.Hour)
	want := one(t, fmt.Sprintf("SELECT count(*) FROM %s WHERE epoch_us(time) >= %d AND epoch_us(time) < %d AND service_name = '%s'",
		table(dataDir, "traces"), from.UnixMicro(), from.Add(time.Hour).UnixMicro(), lakeFilterService))
	require.Positive(t, want)
	require.Contains(t, blocks[0], `"`+from.Format("2006-01-02T15:04:05+00:00")+`"`, "the snippet's hour is the story's")
	require.Contains(t, blocks[0], `"`+lakeFilterService+`"`)

	cmd := exec.Command("python3", "-c", blocks[0]+"\nprint(rows.num_rows)\n")
	cmd.Dir = filepath.Dir(dataDir)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+libs+string(os.PathListSeparator)+filepath.Join(repoRoot, ".tools", "py"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the PyIceberg snippet: %s", out)
	assert.Equal(t, fmt.Sprint(want), strings.TrimSpace(string(out)))
}
