package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/testserver"
)

// repoRoot is where bin/ and .tools/ live.
var repoRoot = func() string {
	dir, _ := filepath.Abs(filepath.Join("..", ".."))
	return dir
}()

// tool finds a binary: an environment override, the repo's bin/ or .tools/,
// then PATH. Missing binaries fail the test with the command that builds
// them: CI runs make test, which builds and installs everything first.
func tool(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	for _, dir := range []string{"bin", ".tools"} {
		p := filepath.Join(repoRoot, dir, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	t.Fatalf("%s not found: run `make build tools` (or set %s)", name, env)
	return ""
}

// freePort is a loopback port for a child process to listen on.
func freePort(t testing.TB) int {
	t.Helper()
	return testserver.LoopbackPort(t)
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// proc is a running binary whose output goes to a log file that the test
// prints when it fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

func start(t testing.TB, name, bin string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			p.dump(t)
		}
	})
	return p
}

func (p *proc) dump(t testing.TB) {
	data, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	t.Logf("--- last lines of %s ---\n%s", p.name, strings.Join(lines, "\n"))
}

func (p *proc) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T, timeout time.Duration) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		require.NoError(t, p.err, "%s did not exit 0 on SIGTERM", p.name)
	case <-time.After(timeout):
		t.Fatalf("%s did not exit within %s of SIGTERM", p.name, timeout)
	}
}

func waitHTTP(t testing.TB, url string, timeout time.Duration, p *proc) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready: %v", p.name, p.err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not ready at %s after %s", p.name, url, timeout)
}

// sidecar is a running arcstore.
type sidecar struct {
	*proc
	dataDir, grpc, http string
}

func startSidecar(t testing.TB, dataDir, grpcAddr, httpAddr string, extra ...string) *sidecar {
	t.Helper()
	args := append([]string{"-data-dir", dataDir, "-grpc-addr", grpcAddr, "-http-addr", httpAddr}, extra...)
	p := start(t, "arcstore", tool(t, "ARCSTORE_BIN", "arcstore"), args...)
	waitHTTP(t, "http://"+httpAddr+"/health", 30*time.Second, p)
	return &sidecar{proc: p, dataDir: dataDir, grpc: grpcAddr, http: httpAddr}
}

// collector is a running otelcol-arc.
type collector struct {
	*proc
	otlpGRPC, otlpHTTP, metrics string
}

const collectorConfig = `
receivers:
  otlp:
    protocols:
      grpc: {endpoint: "%[1]s"}
      http: {endpoint: "%[2]s"}
processors:
  memory_limiter: {check_interval: 1s, limit_mib: 1024, spike_limit_mib: 256}
exporters:
  arc:
    endpoint: "%[3]s"
    tls: {insecure: true}
    database: default
    retry_on_failure: {enabled: true, initial_interval: 100ms, max_interval: 1s, max_elapsed_time: 0s}
%[6]s
  health_check: {endpoint: "%[4]s"}
service:
  extensions: [%[7]s]
  telemetry:
    logs: {level: info}
    metrics:
      level: detailed
      readers:
        - pull:
            exporter:
              prometheus: {host: "127.0.0.1", port: %[5]d, without_units: true, without_type_suffix: true}
  pipelines:
    traces: {receivers: [otlp], processors: [memory_limiter], exporters: [arc]}
    logs: {receivers: [otlp], processors: [memory_limiter], exporters: [arc]}
    metrics: {receivers: [otlp], processors: [memory_limiter], exporters: [arc]}
`

func startCollector(t *testing.T, sidecarGRPC string) *collector {
	t.Helper()
	return startCollectorWith(t, sidecarGRPC, "")
}

const memoryQueue = `    sending_queue: {enabled: true, num_consumers: 4, queue_size: 200000}
extensions:
`

// startCollectorWith adds exporterYAML (indented four spaces) to the arc
// exporter's settings.
func startCollectorWith(t *testing.T, sidecarGRPC, exporterYAML string) *collector {
	t.Helper()
	return startCollectorAt(t, sidecarGRPC, addr(freePort(t)), exporterYAML+"\n"+memoryQueue)
}

// startCollectorAt listens for OTLP gRPC on otlpGRPC; tail ends the arc
// exporter's settings and opens the extensions section (memoryQueue or
// persistentQueue).
func startCollectorAt(t *testing.T, sidecarGRPC, otlpGRPC, tail string) *collector {
	t.Helper()
	return startCollectorFrom(t, collectorConfig, sidecarGRPC, otlpGRPC, tail)
}

// startCollectorFrom starts a collector from a configuration shaped like
// collectorConfig.
func startCollectorFrom(t *testing.T, config, sidecarGRPC, otlpGRPC, tail string) *collector {
	t.Helper()
	c := &collector{otlpGRPC: otlpGRPC, otlpHTTP: addr(freePort(t))}
	extensions := "health_check"
	if strings.Contains(tail, "file_storage:") {
		extensions += ", file_storage"
	}
	health := addr(freePort(t))
	metricsPort := freePort(t)
	c.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	cfg := filepath.Join(t.TempDir(), "otelcol.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf(config, c.otlpGRPC, c.otlpHTTP, sidecarGRPC, health, metricsPort, tail, extensions)), 0o600))
	c.proc = start(t, "otelcol-arc", tool(t, "OTELCOL_BIN", "otelcol-arc"), "--config", cfg)
	waitHTTP(t, "http://"+health+"/", 60*time.Second, c.proc)
	return c
}

// metric sums every series of a metric on the collector's Prometheus
// endpoint, optionally only those whose labels contain filter.
func (c *collector) metric(t *testing.T, name, filter string) float64 {
	t.Helper()
	resp, err := http.Get(c.metrics)
	require.NoError(t, err)
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		if filter != "" && !strings.Contains(line, filter) {
			continue
		}
		f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err, line)
		sum += f
	}
	return sum
}

// waitDrained waits until the arc exporter has had every accepted item
// acknowledged, and returns the accepted counts per signal.
func (c *collector) waitDrained(t *testing.T, timeout time.Duration) map[string]float64 {
	t.Helper()
	pairs := map[string][2]string{
		"spans":         {"otelcol_receiver_accepted_spans", "otelcol_exporter_sent_spans"},
		"log_records":   {"otelcol_receiver_accepted_log_records", "otelcol_exporter_sent_log_records"},
		"metric_points": {"otelcol_receiver_accepted_metric_points", "otelcol_exporter_sent_metric_points"},
	}
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]float64{}
		drained := true
		for k, p := range pairs {
			acc, sent := c.metric(t, p[0], ""), c.metric(t, p[1], `exporter="arc"`)
			got[k] = acc
			if sent != acc {
				drained = false
			}
		}
		if drained {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter did not drain within %s: accepted %v; sent spans %v, failed spans %v, queue size %v", timeout, got,
				c.metric(t, "otelcol_exporter_sent_spans", ""), c.metric(t, "otelcol_exporter_send_failed_spans", ""),
				c.metric(t, "otelcol_exporter_queue_size", ""))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// duckdb runs a query with the DuckDB CLI and returns its rows.
func duckdb(t *testing.T, query string) []map[string]any {
	t.Helper()
	cmd := exec.Command(tool(t, "DUCKDB_BIN", "duckdb"), "-json", "-c", query)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "duckdb: %s\nquery: %s", stderr.String(), query)
	if len(bytes.TrimSpace(out)) == 0 {
		return nil
	}
	var rows []map[string]any
	require.NoError(t, json.Unmarshal(out, &rows), string(out))
	return rows
}

// one returns the single value of a one-row, one-column query.
func one(t *testing.T, query string) any {
	t.Helper()
	rows := duckdb(t, query)
	require.Len(t, rows, 1, query)
	require.Len(t, rows[0], 1, query)
	for _, v := range rows[0] {
		return v
	}
	return nil
}

// table is a read_parquet expression over one table of the default database.
func table(dataDir, name string) string {
	return fmt.Sprintf("read_parquet('%s/default/%s/**/*.parquet', hive_partitioning=true)", dataDir, name)
}

func telemetrygen(t *testing.T, endpoint string, args ...string) {
	t.Helper()
	out, err := runTelemetrygen(t, endpoint, args...)
	require.NoError(t, err, "telemetrygen %v: %s", args, out)
}

// runTelemetrygen runs telemetrygen and returns its output and exit error,
// for tests that expect the collector to refuse what it sends.
func runTelemetrygen(t *testing.T, endpoint string, args ...string) ([]byte, error) {
	t.Helper()
	args = append(args, "--otlp-endpoint", endpoint, "--otlp-insecure", "--rate", "0")
	return exec.Command(tool(t, "TELEMETRYGEN_BIN", "telemetrygen"), args...).CombinedOutput()
}

// How long the outage tests keep a server down: a few seconds in make
// test; the environment variable (whole seconds) makes it longer, e.g.
// ARC_OUTAGE_SECONDS=60 for the full sidecar outage run.
func sidecarOutage(t *testing.T) time.Duration { return envSeconds(t, "ARC_OUTAGE_SECONDS", 4) }
func chOutage(t *testing.T) time.Duration      { return envSeconds(t, "ARC_CH_OUTAGE_SECONDS", 30) }
func s3Outage(t *testing.T) time.Duration      { return envSeconds(t, "ARC_S3_OUTAGE_SECONDS", 10) }

func envSeconds(t *testing.T, name string, def int) time.Duration {
	t.Helper()
	n := def
	if s := os.Getenv(name); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, name)
	}
	return time.Duration(n) * time.Second
}
