package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadHarness runs the load harness as `make loadtest-*` does, briefly:
// it starts its own stacks, sends, checks loss with DuckDB and writes the
// three report files. The full-length runs are not part of make test.
func TestLoadHarness(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		ceiling bool
		tables  []string
		// endpoint starts the arc exporter's endpoint in the collector's
		// configuration; empty without a collector.
		endpoint string
	}{
		{name: "mixed with the otlp driver and the ceiling", args: []string{"-scenario", "mixed", "-workers", "3", "-rate", "30000"},
			ceiling: true, tables: []string{"traces", "logs", "metrics"}, endpoint: "127.0.0.1:"},
		{name: "Arc MessagePack to the sidecar", args: []string{"-scenario", "arc-mixed", "-workers", "4", "-rate", "40000"},
			tables: []string{"system_metrics", "application_logs", "distributed_traces", "system_events"}},
		{name: "traces with telemetrygen", args: []string{"-scenario", "traces", "-driver", "telemetrygen", "-workers", "2", "-rate", "5000", "-ceiling=false"},
			tables: []string{"traces"}, endpoint: "127.0.0.1:"},
		{name: "logs over a Unix socket", args: []string{"-scenario", "logs", "-workers", "2", "-rate", "20000", "-ceiling=false", "-transport", "unix"},
			tables: []string{"logs"}, endpoint: "unix://"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			args := append([]string{"-duration", "3s", "-interval", "1s", "-out", out,
				"-bin-dir", filepath.Join(repoRoot, "bin"),
				"-telemetrygen", tool(t, "TELEMETRYGEN_BIN", "telemetrygen"),
				"-duckdb", tool(t, "DUCKDB_BIN", "duckdb")}, tt.args...)
			cmd := exec.Command(tool(t, "ARCLOAD_BIN", "arcload"), args...)
			logs, err := cmd.CombinedOutput()
			require.NoError(t, err, "arcload: %s", logs)

			for _, f := range []string{"report.json", "report.md", "report.png"} {
				info, err := os.Stat(filepath.Join(out, f))
				require.NoError(t, err)
				assert.Positive(t, info.Size(), f)
			}
			var rep struct {
				Ceiling *struct {
					Rate float64 `json:"rate_per_s"`
				} `json:"ceiling"`
				Arc struct {
					Rate  float64          `json:"rate_per_s"`
					Acked map[string]int64 `json:"acked"`
					Loss  []struct {
						Table                             string
						Expected, Found, Lost, Duplicated int64
						Distinct                          int64
					} `json:"loss"`
					Samples []json.RawMessage `json:"samples"`
				} `json:"arc"`
				Ratio    float64  `json:"ratio"`
				Failures []string `json:"failures"`
			}
			data, err := os.ReadFile(filepath.Join(out, "report.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &rep))
			assert.Empty(t, rep.Failures)
			require.Len(t, rep.Arc.Loss, len(tt.tables))
			for i, table := range tt.tables {
				l := rep.Arc.Loss[i]
				assert.Equal(t, table, l.Table)
				assert.Positive(t, l.Expected, "%s: something was acknowledged", table)
				assert.Equal(t, l.Expected, l.Found, "%s: every acknowledged row found", table)
				assert.Zero(t, l.Lost+l.Duplicated, table)
			}
			assert.Positive(t, rep.Arc.Rate)
			assert.GreaterOrEqual(t, len(rep.Arc.Samples), 2, "progress every interval")
			if tt.endpoint != "" {
				cfg, err := os.ReadFile(filepath.Join(out, "arc", "otelcol-arc.yaml"))
				require.NoError(t, err)
				assert.Contains(t, string(cfg), `endpoint: "`+tt.endpoint)
			}
			if tt.ceiling {
				require.NotNil(t, rep.Ceiling)
				assert.Positive(t, rep.Ceiling.Rate)
				assert.InDelta(t, rep.Arc.Rate/rep.Ceiling.Rate, rep.Ratio, 1e-9)
			}
		})
	}
}

// TestLoadHarnessAgainstARunningServer measures an Arc-protocol server the
// harness did not start, as for the side-by-side with Arc itself: it is
// sampled by pid, its Parquet tree is counted once it has settled, and
// every acknowledged row must be there (ours keeps them all); -target-stop
// stops it gracefully before the count.
func TestLoadHarnessAgainstARunningServer(t *testing.T) {
	dataDir := t.TempDir()
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-flush-interval", "1s")
	out := t.TempDir()
	cmd := exec.Command(tool(t, "ARCLOAD_BIN", "arcload"), "-scenario", "arc-logs", "-duration", "3s", "-interval", "1s",
		"-workers", "2", "-rate", "20000", "-out", out, "-duckdb", tool(t, "DUCKDB_BIN", "duckdb"),
		"-target", "http://"+sc.http, "-target-pid", strconv.Itoa(sc.cmd.Process.Pid),
		"-target-parquet", dataDir, "-target-settle", "3s", "-target-stop")
	logs, err := cmd.CombinedOutput()
	require.NoError(t, err, "arcload: %s", logs)
	select {
	case <-sc.done:
		require.NoError(t, sc.err, "-target-stop stops the server gracefully")
	case <-time.After(30 * time.Second):
		t.Fatal("-target-stop did not stop the server")
	}

	var rep struct {
		Arc struct {
			Name   string  `json:"name"`
			Rate   float64 `json:"rate_per_s"`
			FlushS float64 `json:"flush_s"`
			Loss   []struct {
				Table                 string
				Expected, Found, Lost int64
				Files                 int
				Bytes                 int64
			} `json:"loss"`
			Procs map[string]struct {
				CPU  float64 `json:"cpu_seconds"`
				Peak int64   `json:"peak_rss_bytes"`
			} `json:"processes"`
			Payload map[string]struct {
				Raw  int `json:"raw_bytes"`
				Gzip int `json:"gzip_bytes"`
			} `json:"payload"`
		} `json:"arc"`
		Failures []string `json:"failures"`
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	assert.Empty(t, rep.Failures)
	assert.Equal(t, "target http://"+sc.http, rep.Arc.Name)
	require.Len(t, rep.Arc.Loss, 1)
	l := rep.Arc.Loss[0]
	assert.Equal(t, "application_logs", l.Table)
	assert.Positive(t, l.Expected)
	assert.Equal(t, l.Expected, l.Found, "every acknowledged row counted in the running server's tree")
	assert.Positive(t, l.Files)
	assert.Positive(t, l.Bytes)
	assert.Positive(t, rep.Arc.Rate)
	require.Contains(t, rep.Arc.Procs, "target")
	assert.Positive(t, rep.Arc.Procs["target"].CPU)
	assert.Positive(t, rep.Arc.Procs["target"].Peak)
	assert.Greater(t, rep.Arc.Payload["application_logs"].Raw, rep.Arc.Payload["application_logs"].Gzip)
}
