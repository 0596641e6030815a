package loss

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

func TestCompute(t *testing.T) {
	tests := []struct {
		name                         string
		expected, found, distinct    int64
		lost, duplicated, unexpected int64
		ok                           bool
	}{
		{name: "exact", expected: 1000, found: 1000, distinct: 1000, ok: true},
		{name: "lost rows", expected: 1000, found: 990, distinct: 990, lost: 10},
		{name: "duplicated rows", expected: 1000, found: 1010, distinct: 1000, duplicated: 10},
		{name: "loss hidden by duplicates is still seen", expected: 1000, found: 1000, distinct: 990, lost: 10, duplicated: 10},
		{name: "rows nobody acknowledged", expected: 1000, found: 1005, distinct: 1005, unexpected: 5},
		{name: "no identity, counts match", expected: 500, found: 500, distinct: -1, ok: true},
		{name: "no identity, fewer rows", expected: 500, found: 480, distinct: -1, lost: 20},
		{name: "no identity, more rows", expected: 500, found: 510, distinct: -1, duplicated: 10},
		{name: "nothing sent, nothing found", expected: 0, found: 0, distinct: 0, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compute("traces", tt.expected, tt.found, tt.distinct)
			assert.Equal(t, tt.lost, got.Lost, "lost")
			assert.Equal(t, tt.duplicated, got.Duplicated, "duplicated")
			assert.Equal(t, tt.unexpected, got.Unexpected, "unexpected")
			assert.Equal(t, tt.ok, got.OK())
		})
	}
}

// TestCountWithDuckDB counts rows of a Parquet file written by DuckDB
// itself, with and without an identity and a filter.
func TestCountWithDuckDB(t *testing.T) {
	bin := duckdbBin(t)
	dir := t.TempDir()
	tableDir := filepath.Join(dir, "default", "logs", "date=2026-11-22", "hour=9")
	require.NoError(t, os.MkdirAll(tableDir, 0o755))
	// 10 rows, ids 0..4 twice.
	q := "COPY (SELECT map {'loadtest.id': printf('%016x', i % 5)} AS attributes FROM range(10) t(i)) TO '" +
		filepath.Join(tableDir, "a.parquet") + "' (FORMAT parquet)"
	out, err := exec.Command(bin, "-c", q).CombinedOutput()
	require.NoError(t, err, string(out))

	e := Engine{DuckDB: bin}
	found, distinct, err := e.Count(dir, "default", "logs", "attributes['loadtest.id']", "")
	require.NoError(t, err)
	assert.Equal(t, int64(10), found)
	assert.Equal(t, int64(5), distinct)

	found, distinct, err = e.Count(dir, "default", "logs", "attributes['loadtest.id']", "attributes['loadtest.id'] BETWEEN '0000000000000001' AND '0000000000000002'")
	require.NoError(t, err)
	assert.Equal(t, int64(4), found)
	assert.Equal(t, int64(2), distinct)

	found, distinct, inDoubt, err := e.CountInDoubt(dir, "default", "logs", "attributes['loadtest.id']", "attributes['loadtest.id'] <= '0000000000000003'",
		"(attributes['loadtest.id'] BETWEEN '0000000000000000' AND '0000000000000001' OR attributes['loadtest.id'] = '0000000000000003')")
	require.NoError(t, err)
	assert.Equal(t, []int64{8, 4, 3}, []int64{found, distinct, inDoubt}, "ids 0 to 3 twice, three of them in doubt")

	found, distinct, err = e.Count(dir, "default", "logs", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(10), found)
	assert.Equal(t, int64(-1), distinct)

	found, distinct, err = e.Count(dir, "default", "traces", "attributes['loadtest.id']", "")
	require.NoError(t, err, "a table without files has no rows")
	assert.Zero(t, found)
	assert.Zero(t, distinct)
}

// TestFilesAndCountInAPlainTree: a server that partitions by plain
// directories (Arc's <table>/YYYY/MM/DD/HH/) is counted like a hive tree;
// files still being written under a temporary name are not.
func TestFilesAndCountInAPlainTree(t *testing.T) {
	bin := duckdbBin(t)
	dir := t.TempDir()
	var want int64
	for i, hour := range []string{"17", "18"} {
		d := filepath.Join(dir, "default", "application_logs", "2026", "11", "23", hour)
		require.NoError(t, os.MkdirAll(d, 0o755))
		f := filepath.Join(d, "application_logs_"+hour+".parquet")
		q := fmt.Sprintf("COPY (SELECT i, 'message ' || i AS message FROM range(%d) t(i)) TO '%s' (FORMAT parquet)", 100*(i+1), f)
		out, err := exec.Command(bin, "-c", q).CombinedOutput()
		require.NoError(t, err, string(out))
		info, err := os.Stat(f)
		require.NoError(t, err)
		want += info.Size()
	}
	tmp := filepath.Join(dir, "default", "application_logs", "2026", "11", "23", "18", ".arc-123.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte("half a file"), 0o644))

	disk, err := Files(dir, "default", "application_logs")
	require.NoError(t, err)
	assert.Equal(t, Disk{Files: 2, Bytes: want}, disk)
	found, distinct, err := Engine{DuckDB: bin}.Count(dir, "default", "application_logs", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(300), found)
	assert.Equal(t, int64(-1), distinct)

	disk, err = Files(dir, "default", "distributed_traces")
	require.NoError(t, err, "a table never written has no files")
	assert.Zero(t, disk)

	tbl := Compute("application_logs", 300, found, distinct)
	tbl.Files, tbl.Bytes = disk.Files, want
	assert.InDelta(t, float64(want)/300, tbl.BytesPerRow(), 1e-9)
	assert.Zero(t, Table{Bytes: 10}.BytesPerRow(), "no rows, no ratio")
}

func duckdbBin(t *testing.T) string {
	if p := os.Getenv("DUCKDB_BIN"); p != "" {
		return p
	}
	if p, err := filepath.Abs("../../../.tools/duckdb"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("duckdb")
	require.NoError(t, err, "duckdb not found: run `make tools`")
	return p
}

// TestCountWithClickHouse counts the same rows as TestCountWithDuckDB in a
// real ClickHouse, with the same identity and filter SQL.
func TestCountWithClickHouse(t *testing.T) {
	srv := chtest.Start(t)
	srv.MustQuery("CREATE TABLE default.logs (attributes Map(LowCardinality(String), String)) ENGINE = MergeTree ORDER BY tuple()")
	srv.MustQuery("INSERT INTO default.logs SELECT map('loadtest.id', leftPad(hex(number % 5), 16, '0')) FROM numbers(10)")
	c := ClickHouse{URL: "http://" + srv.HTTP}

	found, distinct, err := c.Count("default", "logs", "attributes['loadtest.id']", "")
	require.NoError(t, err)
	assert.Equal(t, int64(10), found)
	assert.Equal(t, int64(5), distinct)

	found, distinct, err = c.Count("default", "logs", "attributes['loadtest.id']", "attributes['loadtest.id'] BETWEEN '0000000000000001' AND '0000000000000002'")
	require.NoError(t, err)
	assert.Equal(t, int64(4), found)
	assert.Equal(t, int64(2), distinct)

	found, distinct, inDoubt, err := c.CountInDoubt("default", "logs", "attributes['loadtest.id']", "attributes['loadtest.id'] <= '0000000000000003'",
		"(attributes['loadtest.id'] BETWEEN '0000000000000000' AND '0000000000000001' OR attributes['loadtest.id'] = '0000000000000003')")
	require.NoError(t, err)
	assert.Equal(t, []int64{8, 4, 3}, []int64{found, distinct, inDoubt}, "ids 0 to 3 twice, three of them in doubt")

	found, distinct, err = c.Count("default", "logs", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(10), found)
	assert.Equal(t, int64(-1), distinct)

	found, distinct, err = c.Count("default", "traces", "attributes['loadtest.id']", "")
	require.NoError(t, err, "a table that does not exist has no rows")
	assert.Zero(t, found)
	assert.Zero(t, distinct)

	_, _, err = c.Count("default", "logs", "no_such_column", "")
	assert.ErrorContains(t, err, "clickhouse: 4", "the server's error is passed on")
}

// TestClickHouseParts: Parts sums a table's active parts
// with the tables named after it (a view's target), not a table that merely
// shares its prefix.
func TestClickHouseParts(t *testing.T) {
	srv := chtest.Start(t)
	for _, table := range []string{"otel_traces", "otel_traces_trace_id_ts", "otel_traces2"} {
		srv.MustQuery("CREATE TABLE default." + table + " (id String) ENGINE = MergeTree ORDER BY tuple()")
	}
	srv.MustQuery("INSERT INTO default.otel_traces SELECT toString(number) FROM numbers(100)")
	srv.MustQuery("INSERT INTO default.otel_traces_trace_id_ts SELECT toString(number) FROM numbers(10)")
	srv.MustQuery("INSERT INTO default.otel_traces2 SELECT toString(number) FROM numbers(1000)")
	c := ClickHouse{URL: "http://" + srv.HTTP}

	parts, bytes, err := c.Parts("default", "otel_traces")
	require.NoError(t, err)
	assert.Equal(t, 2, parts, "the table's part and its lookup table's, not otel_traces2's")
	want, err := c.query("SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND table IN ('otel_traces', 'otel_traces_trace_id_ts')")
	require.NoError(t, err)
	assert.Equal(t, want, fmt.Sprint(bytes))

	parts, bytes, err = c.Parts("default", "no_such_table")
	require.NoError(t, err)
	assert.Zero(t, parts)
	assert.Zero(t, bytes)

}

// TestVerdictsOnDamagedTrees feeds the check Parquet trees that each differ
// from what was acknowledged in one way, with the identity and filter the
// OTLP driver's run uses (the id attribute, between the run's first and
// last id), and checks each verdict.
func TestVerdictsOnDamagedTrees(t *testing.T) {
	bin := duckdbBin(t)
	const (
		lo, hi   = 0x1000, 0x1009 // the run's ids: ten sent
		acked    = 10
		identity = Identity("attributes['loadtest.id']")
	)
	where := fmt.Sprintf("%s BETWEEN '%016x' AND '%016x'", identity, lo, hi)
	ids := func(from, to int) []int { // from..to inclusive
		var out []int
		for i := from; i <= to; i++ {
			out = append(out, i)
		}
		return out
	}
	type file struct {
		name string
		ids  []int  // rows to write with these ids
		raw  []byte // or these bytes
	}
	tests := []struct {
		name                         string
		acked                        int64
		files                        []file
		lost, duplicated, unexpected int64
		ok                           bool
		err                          string
		// doubt are requests refused in whole or in part (first and last
		// id), doubtAcked how many of their items were acknowledged.
		doubt      [][2]int
		doubtAcked int64
	}{
		{name: "every row once", acked: acked, files: []file{{name: "a.parquet", ids: ids(lo, hi)}}, ok: true},
		{name: "every row once over two files", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, lo+4)}, {name: "b.parquet", ids: ids(lo+5, hi)}}, ok: true},
		{name: "a missing row", acked: acked, files: []file{{name: "a.parquet", ids: ids(lo, hi-1)}}, lost: 1},
		{name: "a row twice in one file", acked: acked, files: []file{{name: "a.parquet", ids: append(ids(lo, hi), lo+3)}}, duplicated: 1},
		{name: "a row again in a second file", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}, {name: "b.parquet", ids: []int{lo + 7}}}, duplicated: 1},
		{name: "rows of another run are not this run's", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}, {name: "old.parquet", ids: []int{lo - 1, hi + 1, 0x99999}}}, ok: true},
		{name: "a file still being written is not counted", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}, {name: "b.parquet.tmp", ids: ids(lo, hi)}}, ok: true},
		{name: "rows sent but not acknowledged are unexpected, not lost or duplicated", acked: acked - 2,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}}, unexpected: 2},
		{name: "an empty file is an error", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}, {name: "b.parquet", raw: []byte{}}}, err: "duckdb"},
		{name: "a damaged file is an error", acked: acked,
			files: []file{{name: "a.parquet", ids: ids(lo, hi)}, {name: "b.parquet", raw: []byte("PAR1 not a parquet file PAR1")}}, err: "duckdb"},
		{name: "a refused request's rows kept are not taken for acknowledged ones lost", acked: acked - 2,
			doubt: [][2]int{{hi - 1, hi}}, files: []file{{name: "a.parquet", ids: append(ids(lo, hi-3), hi-1)}}, lost: 1, unexpected: 1},
		{name: "a refused request's rows kept, none lost", acked: acked - 2,
			doubt: [][2]int{{hi - 1, hi}}, files: []file{{name: "a.parquet", ids: ids(lo, hi)}}, unexpected: 2},
		{name: "a refused request's rows not kept", acked: acked - 2,
			doubt: [][2]int{{hi - 1, hi}}, files: []file{{name: "a.parquet", ids: ids(lo, hi-2)}}, ok: true},
		{name: "a partly refused request kept whole, an acknowledged row lost", acked: acked - 2, doubtAcked: 2,
			doubt: [][2]int{{hi - 3, hi}}, files: []file{{name: "a.parquet", ids: ids(lo+1, hi)}}, lost: 1, unexpected: 2},
		{name: "a partly refused request kept its acknowledged rows", acked: acked - 2, doubtAcked: 2,
			doubt: [][2]int{{hi - 3, hi}}, files: []file{{name: "a.parquet", ids: ids(lo, hi-2)}}, ok: true},
		{name: "two refused requests", acked: acked - 4,
			doubt: [][2]int{{lo, lo + 1}, {hi - 1, hi}}, files: []file{{name: "a.parquet", ids: ids(lo, hi)}}, unexpected: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			part := filepath.Join(dir, "default", "logs", "date=2026-11-27", "hour=23")
			require.NoError(t, os.MkdirAll(part, 0o755))
			for _, f := range tt.files {
				path := filepath.Join(part, f.name)
				if f.ids == nil {
					require.NoError(t, os.WriteFile(path, f.raw, 0o644))
					continue
				}
				values := ""
				for i, id := range f.ids {
					if i > 0 {
						values += ", "
					}
					values += fmt.Sprintf("(%d)", id)
				}
				q := fmt.Sprintf("COPY (SELECT map {'loadtest.id': printf('%%016x', i)} AS attributes FROM (VALUES %s) v(i)) TO '%s' (FORMAT parquet)", values, path)
				out, err := exec.Command(bin, "-c", q).CombinedOutput()
				require.NoError(t, err, string(out))
			}
			var conds []string
			for _, d := range tt.doubt {
				conds = append(conds, fmt.Sprintf("%s BETWEEN '%016x' AND '%016x'", identity, d[0], d[1]))
			}
			doubt := strings.Join(conds, " OR ")
			if doubt != "" {
				doubt = "(" + doubt + ")"
			}
			found, distinct, inDoubt, err := Engine{DuckDB: bin}.CountInDoubt(dir, "default", "logs", identity, where, doubt)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got := ComputeInDoubt("logs", tt.acked, found, distinct, tt.doubtAcked, inDoubt)
			assert.Equal(t, tt.lost, got.Lost, "lost")
			assert.Equal(t, tt.duplicated, got.Duplicated, "duplicated")
			assert.Equal(t, tt.unexpected, got.Unexpected, "unexpected")
			assert.Equal(t, tt.ok, got.OK(), "ok")
		})
	}
}
