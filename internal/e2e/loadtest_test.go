package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

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
	}{
		{name: "mixed with the otlp driver and the ceiling", args: []string{"-scenario", "mixed", "-workers", "3", "-rate", "30000"},
			ceiling: true, tables: []string{"traces", "logs", "metrics"}},
		{name: "Arc MessagePack to the sidecar", args: []string{"-scenario", "arc-mixed", "-workers", "4", "-rate", "40000"},
			tables: []string{"system_metrics", "application_logs", "distributed_traces", "system_events"}},
		{name: "traces with telemetrygen", args: []string{"-scenario", "traces", "-driver", "telemetrygen", "-workers", "2", "-rate", "5000", "-ceiling=false"},
			tables: []string{"traces"}},
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
			if tt.ceiling {
				require.NotNil(t, rep.Ceiling)
				assert.Positive(t, rep.Ceiling.Rate)
				assert.InDelta(t, rep.Arc.Rate/rep.Ceiling.Rate, rep.Ratio, 1e-9)
			}
		})
	}
}
