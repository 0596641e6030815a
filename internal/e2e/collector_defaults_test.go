package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// startShippedCollector runs otelcol-arc with the repository's
// otelcol-config.yaml as shipped, only its listen addresses moved to free
// ports and its sidecar to sidecarGRPC. Every address must still be in the
// file, so a changed default config cannot silently skip this test.
func startShippedCollector(t *testing.T, sidecarGRPC, otlpGRPC string) *collector {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "otelcol-config.yaml"))
	require.NoError(t, err)
	cfg := string(raw)
	c := &collector{otlpGRPC: otlpGRPC, otlpHTTP: addr(freePort(t))}
	health := addr(freePort(t))
	metricsPort := freePort(t)
	c.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	for _, r := range [][2]string{
		{"localhost:4317", otlpGRPC},
		{"localhost:4318", c.otlpHTTP},
		{"127.0.0.1:8815", sidecarGRPC},
		{"localhost:13133", health},
		{"localhost:1777", addr(freePort(t))},
		{"localhost:55679", addr(freePort(t))},
		{"port: 8888", "port: " + strconv.Itoa(metricsPort)},
	} {
		require.Equal(t, 1, strings.Count(cfg, r[0]), "otelcol-config.yaml should hold %q once", r[0])
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	path := filepath.Join(t.TempDir(), "otelcol-config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	c.proc = start(t, "otelcol-arc", tool(t, "OTELCOL_BIN", "otelcol-arc"), "--config", path)
	waitHTTP(t, "http://"+health+"/", 60*time.Second, c.proc)
	return c
}

// TestChaosCollectorKillsDefaultConfig kills the collector with SIGKILL under
// load with the shipped otelcol-config.yaml (in-memory queue) and restarts
// it: every span the collector acknowledged to a client is in Parquet,
// exactly once. With a queue that answers clients when data is queued
// (wait_for_result: false, the exporterhelper default) the spans the queue
// held at each kill are lost.
func TestChaosCollectorKillsDefaultConfig(t *testing.T) {
	kills := chaosKills(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-flush-interval", "300ms")
	otlp := addr(freePort(t))
	col := startShippedCollector(t, sc.grpc, otlp)

	sender, stop := startLoad(t, otlp, 4, 200, time.Millisecond)
	for i := range kills {
		// Kill only while requests are flowing, at a random moment.
		waitAcked(t, sender, sender.ackedCount()+2000)
		time.Sleep(time.Duration(100+rand.IntN(500)) * time.Millisecond)
		col.kill()
		t.Logf("collector kill %d: %d spans acknowledged so far, %d requests failed", i+1, sender.ackedCount(), sender.failedCount())
		col = startShippedCollector(t, sc.grpc, otlp)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	col.stop(t, 30*time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("default-config collector chaos: kills survived %d, spans acknowledged %d, lost %d, duplicated %d, client requests failed %d",
		kills, sender.ackedCount(), lost, dup, sender.failedCount())
	require.Positive(t, sender.ackedCount())
	assert.Zero(t, lost, "acknowledged spans missing from Parquet")
	assert.Zero(t, dup, "spans stored more than once")
}

// waitAcked waits until the sender has n spans acknowledged.
func waitAcked(t *testing.T, sender *spanSender, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for sender.ackedCount() < n {
		require.True(t, time.Now().Before(deadline), "only %d of %d spans acknowledged after a minute", sender.ackedCount(), n)
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCollectorMinimalConfig: `arc: {endpoint: <sidecar>}` and nothing else
// works against the sidecar's plaintext loopback listener (no TLS unless
// set for a loopback endpoint), and what it acknowledges is durable.
func TestCollectorMinimalConfig(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)))
	otlp, health := addr(freePort(t)), addr(freePort(t))
	cfg := fmt.Sprintf(`receivers:
  otlp: {protocols: {grpc: {endpoint: %q}}}
exporters:
  arc: {endpoint: %q}
extensions:
  health_check: {endpoint: %q}
service:
  extensions: [health_check]
  telemetry: {metrics: {level: none}}
  pipelines:
    traces: {receivers: [otlp], exporters: [arc]}
`, otlp, sc.grpc, health)
	path := filepath.Join(t.TempDir(), "minimal.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	col := start(t, "otelcol-arc", tool(t, "OTELCOL_BIN", "otelcol-arc"), "--config", path)
	waitHTTP(t, "http://"+health+"/", 60*time.Second, col)

	conn, err := grpc.NewClient(otlp, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	sender := &spanSender{client: ptraceotlp.NewGRPCClient(conn), acked: map[string]bool{}}
	for range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		sender.send(ctx, 100)
		cancel()
	}
	// Every acknowledged span is durable already: kill, do not drain.
	col.kill()
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	require.Equal(t, 500, sender.ackedCount(), "requests failed; is the exporter talking TLS to the plaintext sidecar?")
	assert.Zero(t, lost, "acknowledged spans missing from Parquet")
	assert.Zero(t, dup)
}
