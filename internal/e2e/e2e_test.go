package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// The OpenTelemetry SDK's gRPC clients keep a resolver goroutine
		// for a moment after Shutdown.
		goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreAnyFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"),
	)
}

type stack struct {
	sidecar   *sidecar
	collector *collector
}

func startStack(t *testing.T) *stack {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-flush-interval", "1s")
	return &stack{sidecar: sc, collector: startCollector(t, sc.grpc)}
}

func (s *stack) count(t *testing.T, name string) int64 {
	t.Helper()
	v := one(t, "SELECT count(*) FROM "+table(s.sidecar.dataDir, name))
	return int64(v.(float64))
}

// TestEndToEnd sends every signal through the real collector into the real
// sidecar, stops the sidecar with SIGTERM and reads the Parquet with DuckDB.
func TestEndToEnd(t *testing.T) {
	s := startStack(t)
	endpoint := s.collector.otlpGRPC
	telemetrygen(t, endpoint, "traces", "--traces", "300", "--workers", "1")
	telemetrygen(t, endpoint, "logs", "--logs", "700", "--workers", "1")
	telemetrygen(t, endpoint, "metrics", "--metrics", "400", "--workers", "1")
	telemetrygen(t, endpoint, "metrics", "--metrics", "50", "--workers", "1", "--metric-type", "Histogram")
	sent := sendWithSDK(t, endpoint)
	accepted := s.collector.waitDrained(t, 60*time.Second)
	t.Logf("collector accepted %v", accepted)
	require.Positive(t, accepted["spans"])
	s.sidecar.stop(t, 30*time.Second)
	dir := s.sidecar.dataDir

	t.Run("every accepted row exactly once", func(t *testing.T) {
		assert.EqualValues(t, accepted["spans"], s.count(t, "traces"))
		assert.EqualValues(t, accepted["log_records"], s.count(t, "logs")+s.count(t, "events"))
		assert.EqualValues(t, accepted["metric_points"], s.count(t, "metrics"))
		assert.EqualValues(t, 0, one(t, "SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM "+table(dir, "traces")))
	})

	t.Run("partition columns are typed", func(t *testing.T) {
		row := duckdb(t, "SELECT typeof(date) AS d, typeof(hour) AS h, typeof(time) AS ts FROM "+table(dir, "traces")+" LIMIT 1")
		require.Len(t, row, 1)
		assert.Equal(t, "DATE", row[0]["d"])
		assert.Equal(t, "BIGINT", row[0]["h"])
		assert.Contains(t, row[0]["ts"], "TIMESTAMP")
		assert.EqualValues(t, 0, one(t, "SELECT count(*) FROM "+table(dir, "traces")+
			" WHERE date <> CAST(time AT TIME ZONE 'UTC' AS DATE) OR hour <> hour(time AT TIME ZONE 'UTC')"))
	})

	t.Run("trace lookup by hex id", func(t *testing.T) {
		rows := duckdb(t, fmt.Sprintf(`SELECT operation_name, span_kind, service_name, http_method, status_code,
			span_status, error, environment, region, host, scope_name, scope_version, parent_span_id = '' AS root,
			len(events) AS events, len(links) AS links
			FROM %s WHERE trace_id = '%s' ORDER BY operation_name`, table(dir, "traces"), sent.traceID))
		require.Len(t, rows, 2)
		server, client := rows[0], rows[1]
		assert.Equal(t, "GET /orders", server["operation_name"])
		assert.Equal(t, "server", server["span_kind"])
		assert.Equal(t, "GET", server["http_method"])
		assert.EqualValues(t, 503, server["status_code"])
		assert.Equal(t, true, server["root"])
		assert.Equal(t, "e2e-sdk", server["service_name"])
		assert.Equal(t, "test", server["environment"])
		assert.Equal(t, "eu-west-1", server["region"])
		assert.Equal(t, "e2e-host", server["host"])
		assert.Equal(t, "e2e", server["scope_name"])
		assert.Equal(t, "1.2.3", server["scope_version"])
		assert.Equal(t, "SELECT orders", client["operation_name"])
		assert.Equal(t, "client", client["span_kind"])
		assert.Equal(t, "error", client["span_status"])
		assert.Equal(t, true, client["error"])
		assert.Equal(t, false, client["root"])
		assert.EqualValues(t, 1, client["events"])
		assert.EqualValues(t, 1, client["links"])
	})

	t.Run("span events, links and attributes", func(t *testing.T) {
		row := duckdb(t, fmt.Sprintf(`SELECT events[1].name AS ev, events[1].attributes['attempt'] AS attempt,
			events[1].attribute_types['attempt'] AS attempt_type, links[1].trace_id AS link, links[1].attributes['link.kind'] AS kind
			FROM %s WHERE trace_id = '%s' AND span_kind = 'client'`, table(dir, "traces"), sent.traceID))
		require.Len(t, row, 1)
		assert.Equal(t, "retry", row[0]["ev"])
		assert.Equal(t, "2", row[0]["attempt"])
		assert.Equal(t, "int", row[0]["attempt_type"])
		assert.Equal(t, sent.linkTo, row[0]["link"])
		assert.Equal(t, "follows", row[0]["kind"])
		tags := one(t, fmt.Sprintf(`SELECT attributes['tags'] FROM %s WHERE trace_id = '%s' AND span_kind = 'server'`, table(dir, "traces"), sent.traceID))
		assert.Equal(t, `["a","b"]`, tags)
	})

	t.Run("log bodies and events", func(t *testing.T) {
		rows := duckdb(t, `SELECT body_type, message, level, attributes['user'] AS u FROM `+table(dir, "logs")+
			` WHERE service_name = 'e2e-sdk' ORDER BY body_type`)
		require.Len(t, rows, 2)
		assert.Equal(t, "bytes", rows[0]["body_type"])
		assert.Equal(t, "/wAB", rows[0]["message"])
		assert.Equal(t, "INFO", rows[0]["level"])
		assert.Equal(t, "map", rows[1]["body_type"])
		assert.JSONEq(t, `{"order":"o-1","items":3}`, rows[1]["message"].(string))
		assert.Equal(t, "ERROR", rows[1]["level"])
		assert.Equal(t, "bob", rows[1]["u"])
		ev := duckdb(t, `SELECT event_type, json_extract_string(message, '$.campaign') AS c FROM `+table(dir, "events"))
		require.Len(t, ev, 1)
		assert.Equal(t, "marketing_campaign_started", ev[0]["event_type"])
		assert.Equal(t, "black-friday", ev[0]["c"])
	})

	t.Run("metric types", func(t *testing.T) {
		rows := duckdb(t, `SELECT metric_name, metric_type, temporality, is_monotonic, value, value_int, count, sum,
			len(bucket_counts) > 0 AS buckets, scale IS NOT NULL AS has_scale, attributes['route'] AS route
			FROM `+table(dir, "metrics")+` WHERE service_name = 'e2e-sdk' ORDER BY metric_name`)
		require.Len(t, rows, 5)
		byName := map[string]map[string]any{}
		for _, r := range rows {
			byName[r["metric_name"].(string)] = r
		}
		assert.Equal(t, "sum", byName["e2e.requests"]["metric_type"])
		assert.Equal(t, "cumulative", byName["e2e.requests"]["temporality"])
		assert.Equal(t, true, byName["e2e.requests"]["is_monotonic"])
		assert.EqualValues(t, 7, byName["e2e.requests"]["value_int"])
		assert.EqualValues(t, 7, byName["e2e.requests"]["value"])
		assert.Equal(t, "/orders", byName["e2e.requests"]["route"])
		assert.Equal(t, false, byName["e2e.inflight"]["is_monotonic"])
		assert.EqualValues(t, -2.5, byName["e2e.inflight"]["value"])
		assert.Nil(t, byName["e2e.inflight"]["value_int"])
		assert.Equal(t, "gauge", byName["e2e.temperature"]["metric_type"])
		assert.EqualValues(t, 42, byName["e2e.temperature"]["value"])
		assert.Equal(t, "histogram", byName["e2e.latency"]["metric_type"])
		assert.EqualValues(t, 3, byName["e2e.latency"]["count"])
		assert.EqualValues(t, 321, byName["e2e.latency"]["sum"])
		assert.Equal(t, true, byName["e2e.latency"]["buckets"])
		assert.Equal(t, "exponential_histogram", byName["e2e.latency.exp"]["metric_type"])
		assert.Equal(t, true, byName["e2e.latency.exp"]["has_scale"])
		assert.EqualValues(t, 3, byName["e2e.latency.exp"]["count"])
	})
}

// TestSidecarKillAfterAck kills the sidecar with SIGKILL as soon as the
// collector has every acknowledgement, before any flush could run, and
// checks the restarted sidecar still writes every row exactly once.
func TestSidecarKillAfterAck(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "1h")
	col := startCollector(t, grpcAddr)
	telemetrygen(t, col.otlpGRPC, "logs", "--logs", "2500", "--workers", "2")
	telemetrygen(t, col.otlpGRPC, "traces", "--traces", "500", "--workers", "1")
	accepted := col.waitDrained(t, 60*time.Second)
	sc.kill()
	assert.EqualValues(t, 0, parquetFiles(t, dataDir), "the flush interval is 1h: nothing may be in Parquet before the restart")

	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "1h")
	sc.stop(t, 30*time.Second)
	s := &stack{sidecar: sc}
	assert.EqualValues(t, accepted["log_records"], s.count(t, "logs"))
	assert.EqualValues(t, accepted["spans"], s.count(t, "traces"))
	assert.EqualValues(t, 0, one(t, "SELECT count(*) - count(DISTINCT (trace_id, span_id)) FROM "+table(dataDir, "traces")))
}

func parquetFiles(t *testing.T, dataDir string) int {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dataDir, "*", "*", "*", "*", "*.parquet"))
	require.NoError(t, err)
	return len(matches)
}
