package e2e

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// TestComposeGrafanaProfile checks, without a Docker engine, that the
// compose grafana profile feeds its dashboard: a Prometheus service in the
// profile with deploy/prometheus/prometheus.yml, whose scrape targets are
// the compose services on the ports their images serve metrics on, under
// the job names the dashboard's legends use; and Grafana's data source is
// that Prometheus.
func TestComposeGrafanaProfile(t *testing.T) {
	read := func(parts ...string) []byte {
		data, err := os.ReadFile(filepath.Join(append([]string{repoRoot}, parts...)...))
		require.NoError(t, err)
		return data
	}
	var compose struct {
		Services map[string]struct {
			Profiles []string `yaml:"profiles"`
			Image    string   `yaml:"image"`
			Volumes  []string `yaml:"volumes"`
			Ports    []string `yaml:"ports"`
		} `yaml:"services"`
	}
	require.NoError(t, yaml.Unmarshal(read("docker-compose.yml"), &compose))
	prom, ok := compose.Services["prometheus"]
	require.True(t, ok, "docker-compose.yml has a prometheus service")
	assert.Equal(t, []string{"grafana"}, prom.Profiles)
	assert.Contains(t, prom.Volumes, "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro")
	assert.Equal(t, []string{"grafana"}, compose.Services["grafana"].Profiles)

	var cfg struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			MetricsPath   string `yaml:"metrics_path"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	require.NoError(t, yaml.Unmarshal(read("deploy", "prometheus", "prometheus.yml"), &cfg))
	// Where each image serves metrics: the sidecar's -http-addr in the
	// Dockerfile, the collector's telemetry port in its compose config.
	ports := map[string]string{"arcstore": "8000", "otelcol-arc": "8888"}
	dockerfile := string(read("Dockerfile"))
	assert.Contains(t, dockerfile, `"-http-addr", "0.0.0.0:8000"`)
	assert.Contains(t, string(read("deploy", "otelcol-compose.yaml")), "METRICS_PORT:-8888")
	jobs := map[string]bool{}
	for _, sc := range cfg.ScrapeConfigs {
		jobs[sc.JobName] = true
		assert.Contains(t, []string{"", "/metrics"}, sc.MetricsPath, "both serve /metrics")
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				host, port, err := net.SplitHostPort(target)
				require.NoError(t, err, target)
				_, isService := compose.Services[host]
				assert.True(t, isService, "target %s is a compose service", target)
				assert.Equal(t, ports[host], port, "target %s is where %s serves metrics", target, host)
				assert.Equal(t, host, sc.JobName, "the job is named after its service")
			}
		}
	}
	dashboard := string(read("deploy", "grafana", "dashboards", "arc-otel.json"))
	assert.Contains(t, dashboard, "{{job}}", "the dashboard's legends use the job names")
	for _, prefix := range []string{"arcstore_", "otelcol_"} {
		assert.Regexp(t, regexp.MustCompile(`"expr": "[^"]*`+prefix), dashboard)
	}
	assert.Equal(t, map[string]bool{"arcstore": true, "otelcol-arc": true}, jobs)

	ds := string(read("deploy", "grafana", "provisioning", "datasources", "prometheus.yaml"))
	assert.True(t, strings.Contains(ds, "url: http://prometheus:9090"), "Grafana reads the profile's Prometheus")
	assert.Contains(t, prom.Ports, "127.0.0.1:9090:9090")
}
