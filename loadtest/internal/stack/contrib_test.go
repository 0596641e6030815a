package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// contribCollectorEnv names the built contrib collector for
// TestContribConfigValidates; `make loadtest-contrib-clickhouse` sets it,
// so its run starts only with a config the binary accepts.
const contribCollectorEnv = "ARC_CONTRIB_COLLECTOR"

func contribConfig(t *testing.T, o Options) string {
	t.Helper()
	o.Export, o.ClickHouseAddr = ExportContribClickHouse, "127.0.0.1:9000"
	return collectorConfig(o, "127.0.0.1:1", "127.0.0.1:2", "", "127.0.0.1:4", 5)
}

func TestContribConfig(t *testing.T) {
	var cfg struct {
		Exporters map[string]map[string]any
		Service   struct {
			Pipelines map[string]map[string][]string
		}
	}
	require.NoError(t, yaml.Unmarshal([]byte(contribConfig(t, Options{QueueSize: 5000})), &cfg))
	ch := cfg.Exporters[ContribExporter]
	require.NotNil(t, ch, "the exporter is named as its metrics label it")
	assert.Equal(t, "tcp://127.0.0.1:9000", ch["endpoint"])
	assert.Equal(t, "otel", ch["database"])
	assert.Equal(t, ContribTables["traces"].Table, ch["traces_table_name"])
	assert.Equal(t, ContribTables["logs"].Table, ch["logs_table_name"])
	assert.Equal(t, map[string]any{"gauge": map[string]any{"name": ContribTables["metrics"].Table}}, ch["metrics_tables"])
	queue := ch["sending_queue"].(map[string]any)
	assert.Equal(t, 5000, queue["queue_size"])
	assert.Equal(t, true, queue["block_on_overflow"], "saturation pushes back instead of dropping")
	assert.Equal(t, map[string]any{"min_size": 5000, "flush_timeout": "5s"}, queue["batch"], "its README's batching")
	for _, signal := range []string{"traces", "logs", "metrics"} {
		p := cfg.Service.Pipelines[signal]
		assert.Equal(t, []string{ContribExporter}, p["exporters"], signal)
		assert.Equal(t, []string{"memory_limiter"}, p["processors"], "%s: the processors of ours; batching is the queue's", signal)
	}

	extra := contribConfig(t, Options{ExporterExtra: "sending_queue: {enabled: false}"})
	require.NoError(t, yaml.Unmarshal([]byte(extra), &cfg))
	assert.Equal(t, map[string]any{"enabled": false}, cfg.Exporters[ContribExporter]["sending_queue"], "-exporter-yaml replaces the queue")
}

// TestContribConfigValidates runs the built contrib collector's own
// validation on the config the harness gives it. Without the binary (make
// contrib-clickhouse, minutes to build) it skips, unless
// ARC_CONTRIB_COLLECTOR names it.
func TestContribConfigValidates(t *testing.T) {
	bin := os.Getenv(contribCollectorEnv)
	if bin == "" {
		bin = filepath.Join("..", "..", "..", "_build", "contrib-clickhouse", "otelcol-contrib-clickhouse")
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("no contrib collector at %s (make contrib-clickhouse, or set %s)", bin, contribCollectorEnv)
		}
	}
	path := filepath.Join(t.TempDir(), "otelcol-contrib.yaml")
	require.NoError(t, os.WriteFile(path, []byte(contribConfig(t, Options{})), 0o644))
	out, err := exec.Command(bin, "validate", "--config", path).CombinedOutput()
	require.NoError(t, err, "%s", out)

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(contribConfig(t, Options{ExporterExtra: "no_such_setting: 1"})), 0o644))
	out, err = exec.Command(bin, "validate", "--config", bad).CombinedOutput()
	assert.Error(t, err, "the binary checks the exporter's settings")
	assert.Contains(t, string(out), "no_such_setting")
}
