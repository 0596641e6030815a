package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireSparkEnv makes the Spark tests fail instead of skipping when
// pyspark or Java is missing: make test sets it (make tools installs
// pyspark; Java 17 is the machine's).
const requireSparkEnv = "ARC_REQUIRE_SPARK"

// sparkPath is where make tools installs pyspark; it skips the test, or
// fails it under ARC_REQUIRE_SPARK=1, when pyspark, the jars Spark reads
// the Iceberg tables with, or java is missing.
func sparkPath(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(repoRoot, ".tools", "spark")
	jars := filepath.Join(repoRoot, ".tools", "spark-jars")
	missing := ""
	if _, err := os.Stat(filepath.Join(dir, "pyspark")); err != nil {
		missing = "pyspark is not installed in " + dir + ": run `make tools`"
	} else if _, err := os.Stat(filepath.Join(jars, ".installed")); err != nil {
		missing = "the Iceberg and SQLite jars are not in " + jars + ": run `make tools`"
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

// sparkDocSettings are docs/LAKE.md's Spark settings: the --jars and the
// --conf pairs of its pyspark command, and the query after it.
type sparkDocSettings struct {
	Jars  string            `json:"jars"`
	Conf  map[string]string `json:"conf"`
	Query string            `json:"query"`
}

func sparkDoc(t *testing.T) sparkDocSettings {
	t.Helper()
	blocks := lakeDocBlocks(t, "Spark")
	require.Len(t, blocks, 2, "LAKE.md's Spark section: the pyspark command, then the query")
	args := strings.Fields(strings.ReplaceAll(blocks[0], "\\\n", " "))
	require.Equal(t, "pyspark", args[0])
	s := sparkDocSettings{Conf: map[string]string{}, Query: blocks[1]}
	for i := 1; i < len(args); i += 2 {
		require.Less(t, i+1, len(args), "%s has a value", args[i])
		switch args[i] {
		case "--jars":
			s.Jars = args[i+1]
		case "--conf":
			k, v, ok := strings.Cut(args[i+1], "=")
			require.True(t, ok, args[i+1])
			s.Conf[k] = v
		default:
			t.Fatalf("LAKE.md's pyspark command has %s, which the test does not pass on", args[i])
		}
	}
	require.NotEmpty(t, s.Jars)
	return s
}

// TestSparkReadsTheLake: Spark 4.1 reads the lake the real binaries wrote
// with -iceberg (writeIcebergLake: flushed and compacted files), in one
// JVM. The Parquet tree as it is (no setting but the session's time zone
// for printing), the Hive partitions typed from the folder names: the rows
// of every table, the rows of a filter on time, the first and last time
// and the nested times (span events, exemplars) at the microsecond, the
// partitions. Then the Iceberg tables through the JDBC catalog on the
// sidecar's SQLite file, with docs/LAKE.md's settings: its query as
// written, and per table the rows, a time range, a service_name filter,
// the first and last time and the nested times. All equal DuckDB's over
// the plain files.
func TestSparkReadsTheLake(t *testing.T) {
	spark := sparkPath(t)
	doc := sparkDoc(t)
	dataDir := writeIcebergLake(t)
	want := duckdbLakeStats(t, dataDir)
	wantTables := duckdbIcebergStats(t, dataDir)
	wantDoc := duckdbDocAnswer(t, dataDir)

	script, err := filepath.Abs(filepath.Join("testdata", "spark_read.py"))
	require.NoError(t, err)
	settings, err := json.Marshal(doc)
	require.NoError(t, err)
	cmd := exec.Command("python3", script, dataDir, fmt.Sprint(lakeCut), fmt.Sprint(lakeDocCut.UnixMicro()), lakeFilterService)
	cmd.Dir = filepath.Dir(dataDir) // the checkout's layout, for the doc's relative paths
	cmd.Env = append(os.Environ(), "PYTHONPATH="+spark, "PYSPARK_PYTHON=python3", "ICEBERG="+string(settings))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "spark_read.py: %s", stderr.String())
	var got struct {
		Plain map[string]struct {
			Rows, Late, Lo, Hi, Parts int64
			Nested                    *int64 `json:"nested"`
			NestedMax                 *int64 `json:"nested_max"`
			Types                     map[string]string
		}
		Doc     map[string]int64
		Iceberg map[string]map[string]any
	}
	require.NoError(t, json.Unmarshal(stdout, &got), "spark_read.py printed %q", stdout)

	for tbl, nested := range lakeTables {
		g, w := got.Plain[tbl], want[tbl]
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

	assert.Equal(t, wantDoc, got.Doc, "LAKE.md's query through the catalog")
	assert.Equal(t, []string{lakeLateService}, slices.Collect(maps.Keys(wantDoc)), "the query's time filter keeps the late spans only")
	for tbl, w := range wantTables {
		g := got.Iceberg[tbl]
		assert.Equal(t, "timestamp", g["time_type"], tbl)
		delete(g, "time_type")
		assert.Equal(t, w, asInts(g), "%s: the Iceberg table and the plain files", tbl)
	}
	assert.Positive(t, wantTables["traces"]["window"])
	assert.Less(t, wantTables["traces"]["window"], wantTables["traces"]["rows"]-wantDoc[lakeLateService], "the range cuts the story's spans")
	assert.Positive(t, wantTables["traces"]["service"])
	assert.Less(t, wantTables["traces"]["service"], wantTables["traces"]["rows"])
}

// asInts converts a decoded JSON object of numbers to int64s.
func asInts(m map[string]any) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		if f, ok := v.(float64); ok {
			out[k] = int64(f)
		}
	}
	return out
}
