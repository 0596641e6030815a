package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

// cookbookQuery matches a DuckDB query block of docs/QUERIES.md,
// clickhouseQuery its ClickHouse version, filesQuery a ClickHouse query of
// the Parquet files only.
var (
	cookbookQuery   = regexp.MustCompile("(?s)```sql\n-- name: (\\S+)\n(.*?)```")
	clickhouseQuery = regexp.MustCompile("(?s)```sql\n-- clickhouse: (\\S+)\n(.*?)```")
	filesQuery      = regexp.MustCompile("(?s)```sql\n-- clickhouse-files: (\\S+)\n(.*?)```")
)

// chdbScript runs the SQL on stdin in ClickHouse (chdb-core) and prints
// the rows as JSON, one per line, 64-bit integers as numbers.
const chdbScript = "import chdb, sys\nprint(chdb.query('SET output_format_json_quote_64bit_integers = 0;' + sys.stdin.read(), 'JSONEachRow'))\n"

type rows []map[string]any

// storyTimes are the story's turning points, read back from its events.
type storyTimes struct{ started, alert, resolved, ended time.Time }

func parseTime(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "time %v", v)
	// DuckDB's, then ClickHouse's (DateTime64(9, 'UTC') prints without a zone).
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05-07", "2006-01-02 15:04:05.999999999"} {
		if ts, err := time.Parse(layout, s); err == nil {
			return ts
		}
	}
	t.Fatalf("cannot parse time %q", s)
	return time.Time{}
}

func (s storyTimes) inAlert(t *testing.T, v any) bool {
	ts := parseTime(t, v)
	return !ts.Before(s.alert) && ts.Before(s.resolved)
}

// TestQueryCookbook sends the campaign story through the real binaries and
// runs every DuckDB query of docs/QUERIES.md on the Parquet files, checking
// each answer against what the story implies.
func TestQueryCookbook(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "QUERIES.md"))
	require.NoError(t, err)
	queries := map[string]string{}
	var names []string
	for _, m := range cookbookQuery.FindAllStringSubmatch(string(doc), -1) {
		queries[m[1]] = m[2]
		names = append(names, m[1])
	}
	require.Contains(t, queries, "views")

	// The sidecar writes the story to ClickHouse too, through its sink.
	srv := chtest.Start(t)
	out := t.TempDir()
	logs, err := exec.Command(tool(t, "ARCLOAD_BIN", "arcload"), "-scenario", "campaign", "-out", out,
		"-bin-dir", filepath.Join(repoRoot, "bin"), "-duckdb", tool(t, "DUCKDB_BIN", "duckdb"),
		"-sidecar-args", "-clickhouse-addr "+srv.Native).CombinedOutput()
	require.NoError(t, err, "arcload: %s", logs)
	dir := filepath.Join(out, "arc") // holds data/, as the doc's paths expect

	run := func(name string) rows {
		t.Helper()
		cmd := exec.Command(tool(t, "DUCKDB_BIN", "duckdb"), "-json", "-c", queries["views"]+queries[name])
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		res, err := cmd.Output()
		require.NoError(t, err, "%s: %s", name, stderr.String())
		var r rows
		require.NoError(t, json.Unmarshal(res, &r), "%s: %s", name, res)
		return r
	}

	timeline := run("events-timeline")
	var story storyTimes
	var events []any
	for _, r := range timeline {
		events = append(events, r["event_type"])
		at := parseTime(t, r["time"])
		switch r["event_type"] {
		case "marketing_campaign_started":
			story.started = at
		case "alert_triggered":
			story.alert = at
		case "alert_resolved":
			story.resolved = at
		case "marketing_campaign_ended":
			story.ended = at
		}
	}
	checks := map[string]func(t *testing.T, r rows){
		"events-timeline": func(t *testing.T, r rows) {
			assert.Equal(t, []any{"marketing_campaign_started", "autoscale_triggered", "alert_triggered", "alert_resolved", "marketing_campaign_ended"}, events)
			assert.Equal(t, "business", r[0]["category"])
		},
		"trace-by-id": func(t *testing.T, r rows) {
			require.Len(t, r, 4, "a failed checkout never reaches payment")
			assert.Equal(t, "api-gateway", r[0]["service_name"], "root first")
			var services []any
			for _, s := range r {
				services = append(services, s["service_name"])
			}
			assert.ElementsMatch(t, []any{"api-gateway", "order-service", "order-service", "inventory-service"}, services)
			assert.Contains(t, r[1]["span_status_message"], "connection pool exhausted")
		},
		"slow-traces": func(t *testing.T, r rows) {
			require.Len(t, r, 10)
			for _, s := range r {
				assert.True(t, story.inAlert(t, s["time"]), "the slowest checkouts are the ones waiting for the pool: %v", s["time"])
			}
		},
		"errors-by-service": func(t *testing.T, r rows) {
			require.NotEmpty(t, r)
			assert.Contains(t, []any{"order-service", "api-gateway"}, r[0]["service_name"])
			for _, s := range r {
				assert.True(t, story.inAlert(t, s["first"]) && story.inAlert(t, s["last"]), "errors only while the pool is exhausted: %v", s)
			}
		},
		"dependency-map": func(t *testing.T, r rows) {
			var edges []string
			for _, e := range r {
				edges = append(edges, fmt.Sprintf("%v -> %v", e["caller"], e["callee"]))
			}
			assert.ElementsMatch(t, []string{"api-gateway -> order-service", "order-service -> inventory-service", "order-service -> payment-service"}, edges)
		},
		"p95-by-service": func(t *testing.T, r rows) {
			require.Len(t, r, 4)
			assert.Contains(t, []any{"api-gateway", "order-service"}, r[0]["service_name"], "the services that wait for the database are slowest")
		},
		"latency-by-phase": func(t *testing.T, r rows) {
			require.Len(t, r, 3)
			before, during, after := r[0], r[1], r[2]
			assert.Greater(t, during["p95_ms"], before["p95_ms"])
			assert.Greater(t, during["p95_ms"], after["p95_ms"])
			assert.Greater(t, during["requests"], before["requests"], "the campaign brings traffic")
			assert.EqualValues(t, 0, before["error_pct"])
			assert.Greater(t, during["error_pct"], 0.0)
		},
		"logs-for-trace": func(t *testing.T, r rows) {
			require.NotEmpty(t, r)
			assert.Equal(t, "ERROR", r[0]["level"])
			assert.Contains(t, r[0]["message"], "connection pool exhausted")
		},
		"error-logs-in-campaign": func(t *testing.T, r rows) {
			require.Len(t, r, 1)
			assert.Greater(t, r[0]["error_logs"], 0.0)
			assert.Equal(t, r[0]["error_logs"], r[0]["inside_campaign"], "every error log falls inside the campaign")
		},
		"events-during-cpu-spikes": func(t *testing.T, r rows) {
			var got []any
			for _, e := range r {
				got = append(got, e["event_type"])
			}
			assert.Contains(t, got, "marketing_campaign_started")
			assert.Contains(t, got, "autoscale_triggered")
			assert.NotContains(t, got, "marketing_campaign_ended", "six instances keep CPU down by the end")
		},
		"db-pool": func(t *testing.T, r rows) {
			assert.Contains(t, []int{18, 19}, len(r), "90 minutes in 5-minute buckets, the story's start not aligned to them")
			// Readings are taken at the end of each minute: the alert's are
			// from its first minute's end to just before its resolution.
			first, last := story.alert.Add(59*time.Second), story.resolved.Add(-time.Second)
			for _, b := range r {
				at := parseTime(t, b["bucket"])
				full := b["max_connections"] == 100.0
				holdsAlert := !at.After(last) && at.Add(5*time.Minute).After(first)
				assert.Equal(t, holdsAlert, full, "pool full exactly in the buckets of the alert: %v", b)
			}
		},
	}
	for _, name := range names {
		if name == "views" {
			continue
		}
		check, ok := checks[name]
		if !assert.True(t, ok, "query %q of QUERIES.md has no check here", name) {
			continue
		}
		t.Run(name, func(t *testing.T) { check(t, run(name)) })
	}
	for name := range checks {
		assert.True(t, slices.Contains(names, name), "check %q has no query in QUERIES.md", name)
	}

	// The ClickHouse versions, on the Parquet files through the views and
	// on the sink's tables, pass the same checks.
	chdb := filepath.Join(repoRoot, ".tools", "chdb")
	_, err = os.Stat(filepath.Join(chdb, "chdb"))
	require.NoError(t, err, "chdb-core not installed: run `make tools`")
	chQueries := map[string]string{}
	for _, m := range clickhouseQuery.FindAllStringSubmatch(string(doc), -1) {
		chQueries[m[1]] = m[2]
	}
	for _, m := range filesQuery.FindAllStringSubmatch(string(doc), -1) {
		chQueries["files:"+m[1]] = m[2]
	}
	require.Contains(t, chQueries, "views")
	runFiles := func(t *testing.T, name string) rows {
		cmd := exec.Command("python3", "-c", chdbScript)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PYTHONPATH="+chdb)
		cmd.Stdin = strings.NewReader(chQueries["views"] + chQueries[name])
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "clickhouse: %s", out)
		return jsonLines(t, string(out))
	}
	runSink := func(t *testing.T, name string) rows {
		q := url.Values{"database": {"default"}, "default_format": {"JSONEachRow"}, "output_format_json_quote_64bit_integers": {"0"}}
		resp, err := http.Post("http://"+srv.HTTP+"/?"+q.Encode(), "text/plain", strings.NewReader(chQueries[name]))
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "clickhouse: %s", body)
		return jsonLines(t, string(body))
	}
	for _, name := range names {
		if name == "views" || checks[name] == nil {
			continue
		}
		if !assert.Contains(t, chQueries, name, "query %q of QUERIES.md has no ClickHouse version", name) {
			continue
		}
		t.Run("clickhouse-files/"+name, func(t *testing.T) { checks[name](t, runFiles(t, name)) })
		t.Run("clickhouse-sink/"+name, func(t *testing.T) { checks[name](t, runSink(t, name)) })
	}
	spans := duckdb(t, "SELECT count(*) AS n FROM "+table(filepath.Join(dir, "data"), "traces"))[0]["n"]
	got := runFiles(t, "files:count")
	require.Len(t, got, 1)
	assert.EqualValues(t, spans, got[0]["count()"], "ClickHouse reads every span of the files")
	assert.Equal(t, fmt.Sprint(spans), srv.MustQuery("SELECT count() FROM default.traces"), "the sink stored every span once")
}

// jsonLines parses JSONEachRow output.
func jsonLines(t *testing.T, out string) rows {
	t.Helper()
	var got rows
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		got = append(got, r)
	}
	return got
}
