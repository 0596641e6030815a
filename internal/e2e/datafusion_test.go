package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pythonTools is a PYTHONPATH of the Python tools make tools installs
// under .tools (py is pyarrow, which the others then import); it fails the
// test when one is missing.
func pythonTools(t *testing.T, dirs ...string) string {
	t.Helper()
	var path []string
	for _, dir := range dirs {
		p := filepath.Join(repoRoot, ".tools", dir)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s not found: run `make tools`", p)
		}
		path = append(path, p)
	}
	return strings.Join(path, string(os.PathListSeparator))
}

// dataFusionRead is what testdata/datafusion_read.py prints.
type dataFusionRead struct {
	Stats      lakeStats
	Types      map[string]map[string]string
	Attributes map[string]string
	Partitions map[string][]string
	Refused    map[string]string
	IDs        string
}

// readWithDataFusion runs testdata/datafusion_read.py on a tree of the
// lake story (mode plain or mixed, as lake_read.py's).
func readWithDataFusion(t *testing.T, dataDir, mode string) dataFusionRead {
	t.Helper()
	cmd := exec.Command("python3", filepath.Join("testdata", "datafusion_read.py"), dataDir, fmt.Sprint(lakeCut), mode)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonTools(t, "py", "datafusion"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "datafusion_read.py: %s", stderr.String())
	var out dataFusionRead
	require.NoError(t, json.Unmarshal(stdout, &out), "datafusion_read.py printed %q", stdout)
	return out
}

// duckdbAttributes is the md5 of a table's attribute map entries, one
// "time(µs) key=value" line per entry, sorted, joined by commas.
func duckdbAttributes(t *testing.T, dataDir, tbl string) string {
	t.Helper()
	d, ok := one(t, "SELECT md5(string_agg(line, ',' ORDER BY line)) FROM (SELECT epoch_us(time) || ' ' || unnest(map_keys(attributes)) || '=' || unnest(map_values(attributes)) AS line FROM "+
		parquetOf(dataDir, "default", tbl)+")").(string)
	require.True(t, ok, tbl)
	return d
}

// duckdbPartitions are a table's partitions as "date hour", in date and
// hour order.
func duckdbPartitions(t *testing.T, dataDir, tbl string) []string {
	t.Helper()
	var out []string
	for _, r := range duckdb(t, "SELECT DISTINCT date::VARCHAR AS date, hour FROM "+parquetOf(dataDir, "default", tbl)+" ORDER BY date, hour") {
		out = append(out, fmt.Sprintf("%v %v", r["date"], r["hour"]))
	}
	return out
}

// assertDataFusionReads checks that DataFusion reads the lake story's tree
// as DuckDB does: want (duckdbLakeStats, partitions included), the same
// attribute map entries and span ids, every time column a µs UTC
// timestamp. Read plain, the hive partition columns are inferred as
// strings (docs/QUERIES.md says so and gives the typed registration,
// checked here against DuckDB's partitions); mixed, DataFusion refuses
// the two units until it is given a schema (docs/SCHEMA.md).
func assertDataFusionReads(t *testing.T, dataDir, mode string, want lakeStats) {
	t.Helper()
	got := readWithDataFusion(t, dataDir, mode)
	assert.Equal(t, want, got.Stats, "DataFusion (%s): rows, rows from the cut on, first and last time, partitions, nested times", mode)
	partitionType := "Dictionary(UInt16, Utf8)" // inferred from the folder names
	if mode == "mixed" {
		partitionType = "Utf8" // as the workaround registers them
	}
	for tbl, nested := range lakeTables {
		types := map[string]string{"time": `Timestamp(µs, "UTC")`, "date": partitionType, "hour": partitionType}
		if nested != "" {
			types["nested"] = `Timestamp(µs, "UTC")`
		}
		assert.Equal(t, types, got.Types[tbl], "DataFusion (%s): %s's column types", mode, tbl)
		if mode == "mixed" {
			assert.Contains(t, got.Refused[tbl], "Fail to merge schema field 'time'", "%s: DataFusion refuses two units as is", tbl)
		} else {
			assert.Equal(t, duckdbPartitions(t, dataDir, tbl), got.Partitions[tbl], "DataFusion (typed partition columns): %s's partitions", tbl)
		}
	}
	assert.Len(t, got.Attributes, 4)
	for tbl, d := range got.Attributes {
		assert.Equal(t, duckdbAttributes(t, dataDir, tbl), d, "DataFusion (%s): every attribute of %s", mode, tbl)
	}
	assert.Equal(t, duckdbSpanIDs(t, filepath.Join(dataDir, "default", "traces")), got.IDs, "DataFusion (%s): every span id", mode)
}
