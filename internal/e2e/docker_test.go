package e2e

import (
	"fmt"
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

// compose runs docker-compose on the test deployment with the test's ports.
type compose struct {
	project string
	env     []string
}

func (c *compose) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("docker-compose", append([]string{"-p", c.project, "-f", filepath.Join(repoRoot, "deploy", "docker-compose.test.yml")}, args...)...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "docker-compose %v: %s", args, out)
	return string(out)
}

func waitOK(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not ready after %s", url, timeout)
}

// TestDockerCompose brings up the images with docker-compose (host network,
// loopback addresses), sends spans, restarts the sidecar's container, sends
// more, and checks every span the collector accepted is in the Parquet files
// on the named volume. It needs a Docker engine and docker-compose: make
// test uses one that is running, installs and starts one only when asked
// (DOCKER=install, or CI=true; deploy/engine.sh), and otherwise the test
// skips and says how to run it.
func TestDockerCompose(t *testing.T) {
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("no Docker engine; `make test DOCKER=install` installs and starts one (as root on Debian):", err)
	}
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("no docker-compose; `make test DOCKER=install` installs it (as root on Debian)")
	}
	make := exec.Command("make", "-C", repoRoot, "images")
	out, err := make.CombinedOutput()
	require.NoError(t, err, "make images: %s", out)

	cfg := exec.Command("docker-compose", "-f", filepath.Join(repoRoot, "docker-compose.yml"), "config", "-q")
	out, err = cfg.CombinedOutput()
	require.NoError(t, err, "the user-facing compose file is valid: %s", out)
	cfg = exec.Command("docker-compose", "-f", filepath.Join(repoRoot, "docker-compose.yml"), "--profile", "clickhouse", "config")
	cfg.Env = append(os.Environ(), "ARC_CLICKHOUSE_ADDR=clickhouse:9000")
	out, err = cfg.CombinedOutput()
	require.NoError(t, err, "the clickhouse profile is valid: %s", out)
	assert.Contains(t, string(out), "clickhouse/clickhouse-server", "the profile adds the server")
	assert.Contains(t, string(out), "clickhouse:9000", "and points the sidecar at it")
	out, err = exec.Command("docker-compose", "-f", filepath.Join(repoRoot, "docker-compose.yml"), "--profile", "grafana", "config").CombinedOutput()
	require.NoError(t, err, "the grafana profile is valid: %s", out)
	assert.Contains(t, string(out), "prom/prometheus", "the profile adds the Prometheus the dashboard reads")
	assert.Contains(t, string(out), "deploy/prometheus/prometheus.yml")
	cfg = exec.Command("docker-compose", "-f", filepath.Join(repoRoot, "docker-compose.yml"), "--profile", "s3", "config")
	cfg.Env = append(os.Environ(), "ARC_S3_BUCKET=arc", "ARC_S3_ENDPOINT=http://versitygw:7070", "ARC_S3_PATH_STYLE=true")
	out, err = cfg.CombinedOutput()
	require.NoError(t, err, "the s3 profile is valid: %s", out)
	assert.Contains(t, string(out), "arc-otel/versitygw:dev", "the profile adds the server")
	assert.Contains(t, string(out), "http://versitygw:7070", "and points the sidecar at it")

	ports := map[string]int{}
	for _, k := range []string{"ARC_GRPC_PORT", "ARC_HTTP_PORT", "OTLP_GRPC_PORT", "OTLP_HTTP_PORT", "HEALTH_PORT", "METRICS_PORT"} {
		ports[k] = freePort(t)
	}
	c := &compose{project: fmt.Sprintf("arcotel%d", os.Getpid())}
	for k, v := range ports {
		c.env = append(c.env, k+"="+strconv.Itoa(v))
	}
	t.Cleanup(func() {
		if t.Failed() {
			cmd := exec.Command("docker-compose", "-p", c.project, "-f", filepath.Join(repoRoot, "deploy", "docker-compose.test.yml"), "logs", "--tail", "30")
			cmd.Env = append(os.Environ(), c.env...)
			logs, _ := cmd.CombinedOutput()
			t.Logf("compose logs:\n%s", logs)
		}
		cmd := exec.Command("docker-compose", "-p", c.project, "-f", filepath.Join(repoRoot, "deploy", "docker-compose.test.yml"), "down", "-v", "-t", "30")
		cmd.Env = append(os.Environ(), c.env...)
		_ = cmd.Run()
	})
	c.run(t, "up", "-d")
	sidecar := fmt.Sprintf("http://127.0.0.1:%d", ports["ARC_HTTP_PORT"])
	waitOK(t, sidecar+"/ready", 60*time.Second)
	waitOK(t, fmt.Sprintf("http://127.0.0.1:%d/", ports["HEALTH_PORT"]), 60*time.Second)
	col := &collector{metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports["METRICS_PORT"])}
	otlp := addr(ports["OTLP_GRPC_PORT"])

	telemetrygen(t, otlp, "traces", "--traces", "500")
	c.run(t, "restart", "arcstore") // SIGTERM: flush, exit, start again on the same volume
	waitOK(t, sidecar+"/ready", 60*time.Second)
	telemetrygen(t, otlp, "traces", "--traces", "500")
	accepted := col.waitDrained(t, 120*time.Second)["spans"]
	require.Positive(t, accepted)

	c.run(t, "stop", "-t", "60") // the sidecar flushes on SIGTERM
	volume := c.project + "_arc-data"
	mount, err := exec.Command("docker", "volume", "inspect", "-f", "{{.Mountpoint}}", volume).Output()
	require.NoError(t, err)
	data := strings.TrimSpace(string(mount))
	found := one(t, "SELECT count(*) FROM "+table(data, "traces"))
	assert.EqualValues(t, accepted, found, "every span the collector accepted is in Parquet on the volume, across the restart")
	distinct := one(t, "SELECT count(DISTINCT span_id) FROM "+table(data, "traces"))
	assert.Equal(t, found, distinct, "no span twice")
}
