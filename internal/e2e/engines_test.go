package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pyarrowScript prints, as JSON, what the DuckDB side of
// TestEnginesAgree computes, read with pyarrow's dataset API.
const pyarrowScript = `
import json, sys
import pyarrow as pa, pyarrow.compute as pc, pyarrow.dataset as ds
root = sys.argv[1]
out = {}
for table in ["traces", "logs", "events", "metrics"]:
    d = ds.dataset(f"{root}/default/{table}", format="parquet", partitioning="hive")
    t = d.to_table()
    out[table] = {"rows": t.num_rows, "hours": len(pc.unique(t["hour"]))}
t = ds.dataset(f"{root}/default/traces", format="parquet", partitioning="hive").to_table()
out["traces"]["duration_ns"] = pc.sum(t["duration_ns"]).as_py()
out["traces"]["errors"] = pc.sum(pc.cast(t["error"], pa.int64())).as_py()
out["traces"]["services"] = len(pc.unique(t["service_name"]))
out["traces"]["attribute_entries"] = sum(c.offsets[len(c)].as_py() - c.offsets[0].as_py() for c in t["attributes"].chunks)
m = ds.dataset(f"{root}/default/metrics", format="parquet", partitioning="hive").to_table()
out["metrics"]["value"] = round(pc.sum(m["value"]).as_py(), 3)
# A directory mixing an older schema (no region column) with the current one.
old = sys.argv[2]
tables = [ds.dataset(p, format="parquet", partitioning="hive").to_table() for p in (f"{root}/default/traces", old)]
# by column name; absent columns are null, and DuckDB wrote the older
# file's timestamps in µs
mixed = pa.concat_tables(tables, promote_options="permissive")
out["mixed"] = {"rows": mixed.num_rows, "null_region": mixed["region"].null_count}
print(json.dumps(out))
`

// TestEnginesAgree reads the campaign story's files with DuckDB and with
// pyarrow and checks both see the same rows, partitions and values,
// nested columns included; then it adds a file of an older schema (without
// the region column) and reads the mix by column name. DataFusion reads the
// same (assertDataFusionAgrees).
func TestEnginesAgree(t *testing.T) {
	py := filepath.Join(repoRoot, ".tools", "py")
	if _, err := os.Stat(filepath.Join(py, "pyarrow")); err != nil {
		t.Fatalf("pyarrow not found under %s: run `make tools`", py)
	}
	out := t.TempDir()
	logs, err := exec.Command(tool(t, "ARCLOAD_BIN", "arcload"), "-scenario", "campaign", "-out", out,
		"-bin-dir", filepath.Join(repoRoot, "bin"), "-duckdb", tool(t, "DUCKDB_BIN", "duckdb")).CombinedOutput()
	require.NoError(t, err, "arcload: %s", logs)
	data := filepath.Join(out, "arc", "data")

	// An "older version" file: today's traces without the region column, in
	// a directory of its own with the same layout.
	old := filepath.Join(t.TempDir(), "traces")
	oldFile := filepath.Join(old, "date=2026-01-01", "hour=0", "old.parquet")
	require.NoError(t, os.MkdirAll(filepath.Dir(oldFile), 0o755))
	duckdb(t, "COPY (SELECT * EXCLUDE (region, date, hour) FROM "+table(data, "traces")+" LIMIT 100) TO '"+oldFile+"' (FORMAT parquet)")

	cmd := exec.Command("python3", "-c", pyarrowScript, data, old)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+py)
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "pyarrow: %s", res)
	var pyOut map[string]map[string]any
	require.NoError(t, json.Unmarshal(res, &pyOut), string(res))

	for _, tbl := range []string{"traces", "logs", "events", "metrics"} {
		row := duckdb(t, "SELECT count(*) AS rows, count(DISTINCT hour) AS hours FROM "+table(data, tbl))[0]
		assert.EqualValues(t, row["rows"], pyOut[tbl]["rows"], tbl)
		assert.EqualValues(t, row["hours"], pyOut[tbl]["hours"], "%s: hive partition columns", tbl)
	}
	tr := duckdb(t, "SELECT sum(duration_ns)::BIGINT AS d, count(*) FILTER (WHERE error) AS e, count(DISTINCT service_name) AS s, "+
		"sum(cardinality(attributes))::BIGINT AS a FROM "+table(data, "traces"))[0]
	assert.EqualValues(t, tr["d"], pyOut["traces"]["duration_ns"])
	assert.EqualValues(t, tr["e"], pyOut["traces"]["errors"])
	assert.EqualValues(t, tr["s"], pyOut["traces"]["services"])
	assert.EqualValues(t, tr["a"], pyOut["traces"]["attribute_entries"], "map columns read alike")
	assert.InDelta(t, one(t, "SELECT round(sum(value), 3) FROM "+table(data, "metrics")), pyOut["metrics"]["value"], 1e-6)

	// The mixed directory, by column name.
	glob := "read_parquet(['" + data + "/default/traces/**/*.parquet', '" + old + "/**/*.parquet'], hive_partitioning = true, union_by_name = true)"
	mixed := duckdb(t, "SELECT count(*) AS rows, count(*) FILTER (WHERE region IS NULL) AS null_region FROM "+glob)[0]
	assert.EqualValues(t, mixed["rows"], pyOut["mixed"]["rows"])
	assert.EqualValues(t, 100, mixed["null_region"], "rows of the older file have no region")
	assert.EqualValues(t, mixed["null_region"], pyOut["mixed"]["null_region"])
	// Without union_by_name DuckDB binds the first file's columns: a column
	// that file lacks is unknown. The documented reason to always pass it.
	cmd = exec.Command(tool(t, "DUCKDB_BIN", "duckdb"), "-c", "SELECT count(region) FROM read_parquet(['"+old+"/**/*.parquet', '"+data+"/default/traces/**/*.parquet'])")
	b, err := cmd.CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(b), `"region" not found`)

	assertDataFusionAgrees(t, data, old, pyOut)
}

// assertDataFusionAgrees checks that DataFusion reads the campaign story
// (testdata/datafusion_agree.py) as pyarrow did (py, checked against
// DuckDB above): rows, hours, the spans' sums and map entries, the
// metrics' values; the traces and the older file's folder bound by name
// with UNION ALL BY NAME; in one folder, a file of the older schema whose
// other columns are typed as ours; and that it refuses a folder holding
// DuckDB's file, whose map values are nullable (docs/QUERIES.md).
func assertDataFusionAgrees(t *testing.T, data, old string, py map[string]map[string]any) {
	t.Helper()
	cmd := exec.Command("python3", filepath.Join("testdata", "datafusion_agree.py"), data, old, t.TempDir())
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonTools(t, "py", "datafusion"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	res, err := cmd.Output()
	require.NoError(t, err, "datafusion_agree.py: %s", stderr.String())
	var df map[string]any
	require.NoError(t, json.Unmarshal(res, &df), string(res))
	for _, tbl := range []string{"traces", "logs", "events", "metrics"} {
		got, _ := df[tbl].(map[string]any)
		for k, v := range py[tbl] {
			assert.Equal(t, v, got[k], "DataFusion: %s's %s", tbl, k)
		}
	}
	assert.Equal(t, py["mixed"], df["union"], "DataFusion: two folders, UNION ALL BY NAME")
	assert.Equal(t, map[string]any{"rows": py["traces"]["rows"].(float64) + 100, "null_region": 100.0}, df["folder"],
		"DataFusion: one folder, the older schema's file bound by name")
	assert.Contains(t, df["refused"], "Fail to merge schema field 'resource_attributes'", "DataFusion: a folder with DuckDB's file")
}
