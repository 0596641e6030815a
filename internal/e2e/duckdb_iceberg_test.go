package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireDuckDBIcebergEnv makes the DuckDB iceberg test fail instead of
// skipping when DuckDB 1.4.4 and its extension wheels are missing: make
// test sets it (make tools installs them).
const requireDuckDBIcebergEnv = "ARC_REQUIRE_DUCKDB_ICEBERG"

// duckdbIcebergPath is where make tools installs DuckDB 1.4.4 with the
// iceberg and avro extension wheels.
func duckdbIcebergPath(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot, ".tools", "duckdb-iceberg")
	if _, err := os.Stat(filepath.Join(dir, ".installed")); err != nil {
		missing := "DuckDB 1.4.4 with its iceberg extension is not installed in " + dir + ": run `make tools`"
		if os.Getenv(requireDuckDBIcebergEnv) == "1" {
			t.Fatal(missing)
		}
		t.Skip(missing + " (" + requireDuckDBIcebergEnv + "=1 fails instead)")
	}
	return dir
}

// TestDuckDBReadsTheIcebergTables: DuckDB 1.4.4's iceberg extension,
// loaded from the extension wheels (no download), reads the Iceberg tables
// the real binaries wrote with -iceberg (writeIcebergLake: flushed and
// compacted files) from the metadata files the catalog names. docs/LAKE.md's
// two DuckDB blocks run as written (the first on the catalog file, the
// second with the metadata file it found), and per table the rows, a time
// range, a service_name filter, the first and last time and the nested
// times equal DuckDB's over the plain files.
func TestDuckDBReadsTheIcebergTables(t *testing.T) {
	libs := duckdbIcebergPath(t)
	blocks := lakeDocBlocks(t, "DuckDB")
	require.Len(t, blocks, 2, "LAKE.md's DuckDB section: the catalog query, then the scan")
	dataDir := writeIcebergLake(t)
	wantTables := duckdbIcebergStats(t, dataDir)
	wantDoc := duckdbDocAnswer(t, dataDir)

	script, err := filepath.Abs(filepath.Join("testdata", "duckdb_iceberg.py"))
	require.NoError(t, err)
	cmd := exec.Command("python3", script, fmt.Sprint(lakeCut), fmt.Sprint(lakeDocCut.UnixMicro()), lakeFilterService)
	cmd.Dir = filepath.Dir(dataDir) // the checkout's layout, for the doc's relative paths
	cmd.Env = append(os.Environ(), "PYTHONPATH="+libs, "LOCATION_SQL="+blocks[0], "SCAN_SQL="+blocks[1])
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "duckdb_iceberg.py: %s", stderr.String())
	var got struct {
		Location string
		Doc      map[string]int64
		Iceberg  map[string]map[string]any
	}
	require.NoError(t, json.Unmarshal(stdout, &got), "duckdb_iceberg.py printed %q", stdout)

	assert.Regexp(t, `^file://.*/data/_arcstore/iceberg/default/traces/metadata/[^/]+\.metadata\.json$`, got.Location)
	assert.Equal(t, wantDoc, got.Doc, "LAKE.md's query on the metadata file the catalog names")
	assert.Len(t, wantDoc, 1, "the query's time filter keeps the late spans only")
	for tbl, w := range wantTables {
		g := got.Iceberg[tbl]
		assert.Equal(t, "TIMESTAMP WITH TIME ZONE", g["time_type"], tbl)
		delete(g, "time_type")
		assert.Equal(t, w, asInts(g), "%s: the Iceberg table and the plain files", tbl)
	}
}
