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

// requireSparkEnv makes the Spark tests fail instead of skipping when
// pyspark or Java is missing: make test sets it (make tools installs
// pyspark; Java 17 is the machine's).
const requireSparkEnv = "ARC_REQUIRE_SPARK"

// sparkPath is where make tools installs pyspark; it skips the test, or
// fails it under ARC_REQUIRE_SPARK=1, when pyspark or java is missing.
func sparkPath(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot, ".tools", "spark")
	missing := ""
	if _, err := os.Stat(filepath.Join(dir, "pyspark")); err != nil {
		missing = "pyspark is not installed in " + dir + ": run `make tools`"
	} else if _, err := exec.LookPath("java"); err != nil {
		missing = "java is not on PATH (Spark 4.1 needs Java 17)"
	}
	if missing != "" {
		if os.Getenv(requireSparkEnv) == "1" {
			t.Fatal(missing)
		}
		t.Skip(missing + " (" + requireSparkEnv + "=1 fails instead)")
	}
	return dir
}

// TestSparkReadsThePlainTree: Spark 4.1 reads the Parquet tree the real
// binaries wrote as it is (no setting but the session's time zone for
// printing), the Hive partitions typed from the folder names, and sees what
// DuckDB sees: the rows of every table, the rows of a filter on time, the
// first and last time and the nested times (span events, exemplars) at
// the microsecond, the partitions.
func TestSparkReadsThePlainTree(t *testing.T) {
	spark := sparkPath(t)
	dataDir := writeLakeStory(t)
	want := duckdbLakeStats(t, dataDir)

	cmd := exec.Command("python3", filepath.Join("testdata", "spark_read.py"), dataDir, fmt.Sprint(lakeCut))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+spark, "PYSPARK_PYTHON=python3")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "spark_read.py: %s", stderr.String())
	var got map[string]struct {
		Rows, Late, Lo, Hi, Parts int64
		Nested                    *int64 `json:"nested"`
		NestedMax                 *int64 `json:"nested_max"`
		Types                     map[string]string
	}
	require.NoError(t, json.Unmarshal(stdout, &got), "spark_read.py printed %q", stdout)

	for tbl, nested := range lakeTables {
		g, w := got[tbl], want[tbl]
		assert.Equal(t, []int64{w["rows"], w["late"], w["lo"], w["hi"], w["parts"]}, []int64{g.Rows, g.Late, g.Lo, g.Hi, g.Parts},
			"%s: rows, rows from the cut on, first and last time, partitions", tbl)
		assert.Positive(t, g.Late, tbl)
		assert.Equal(t, "timestamp", g.Types["time"], tbl)
		assert.Equal(t, "date", g.Types["date"], "%s: the date folder typed", tbl)
		assert.Equal(t, "int", g.Types["hour"], "%s: the hour folder typed", tbl)
		if nested != "" {
			require.NotNil(t, g.Nested, tbl)
			assert.Equal(t, []int64{w["nested"], w["nested_max"]}, []int64{*g.Nested, *g.NestedMax}, "%s: nested %s", tbl, nested)
			assert.Contains(t, g.Types[nested], "time:timestamp", tbl)
		}
	}
	assert.Greater(t, want["cpu"]["parts"], int64(1), "the measurement spans hours")
}
