// Package loss checks a run's Parquet against what the sender had
// acknowledged: every acknowledged item exactly once.
package loss

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Table is the check of one table.
type Table struct {
	Table string `json:"table"`
	// Expected is what was acknowledged: by the sender when it can tell,
	// else what the collector accepted.
	Expected int64 `json:"expected"`
	Found    int64 `json:"found"`
	// Distinct is the number of distinct item identities found; -1 when
	// the data carries none (then only counts are compared).
	Distinct   int64 `json:"distinct"`
	Lost       int64 `json:"lost"`
	Duplicated int64 `json:"duplicated"`
	// Unexpected are distinct items beyond the expected ones: items the
	// sender did not count as acknowledged (a request that failed at the
	// client after the server kept it).
	Unexpected int64 `json:"unexpected"`
	// Files and Bytes are the table's Parquet files on disk after the run
	// (0 where the rows were counted elsewhere).
	Files int   `json:"files,omitempty"`
	Bytes int64 `json:"bytes,omitempty"`
}

// BytesPerRow is the table's size on disk per row found, 0 when unknown.
func (t Table) BytesPerRow() float64 {
	if t.Found <= 0 || t.Bytes <= 0 {
		return 0
	}
	return float64(t.Bytes) / float64(t.Found)
}

// Compute fills in Lost, Duplicated and Unexpected.
func Compute(table string, expected, found, distinct int64) Table {
	return ComputeInDoubt(table, expected, found, distinct, 0, 0)
}

// ComputeInDoubt is Compute for a run some of whose requests were not
// acknowledged in whole: doubtAcked of expected were acknowledged in them,
// and doubtDistinct of the distinct ids found are theirs. The ids outside
// them were all acknowledged, so rows of a refused request that the
// server kept cannot stand in for acknowledged rows it lost.
func ComputeInDoubt(table string, expected, found, distinct, doubtAcked, doubtDistinct int64) Table {
	t := Table{Table: table, Expected: expected, Found: found, Distinct: distinct}
	if distinct < 0 {
		t.Lost = max(0, expected-found)
		t.Duplicated = max(0, found-expected)
		return t
	}
	t.Duplicated = found - distinct
	sureExpected, sureDistinct := expected-doubtAcked, distinct-doubtDistinct
	t.Lost = max(0, sureExpected-sureDistinct) + max(0, doubtAcked-doubtDistinct)
	t.Unexpected = max(0, sureDistinct-sureExpected) + max(0, doubtDistinct-doubtAcked)
	return t
}

// OK is true when every expected item is there exactly once.
func (t Table) OK() bool { return t.Lost == 0 && t.Duplicated == 0 && t.Unexpected == 0 }

// Identity is the SQL expression naming an item of a table, or "" when
// rows cannot be told apart.
type Identity string

// Engine counts rows with the DuckDB CLI.
type Engine struct {
	DuckDB string
}

// Count returns the rows of dataDir/database/table that satisfy where (all
// rows when empty) and the distinct values of identity among them (-1
// without an identity). A table with no file has 0 rows.
func (e Engine) Count(dataDir, database, table string, identity Identity, where string) (found, distinct int64, err error) {
	found, distinct, _, err = e.CountInDoubt(dataDir, database, table, identity, where, "")
	return found, distinct, err
}

// CountInDoubt is Count that also returns the distinct values of identity
// among the rows that satisfy doubt (0 when doubt is empty).
func (e Engine) CountInDoubt(dataDir, database, table string, identity Identity, where, doubt string) (found, distinct, inDoubt int64, err error) {
	dir := filepath.Join(dataDir, database, table)
	disk, err := Files(dataDir, database, table)
	if err != nil {
		return 0, 0, 0, err
	}
	if disk.Files == 0 {
		if identity == "" {
			return 0, -1, 0, nil
		}
		return 0, 0, 0, nil
	}
	distinctSQL, doubtSQL := "-1", "0"
	if identity != "" {
		distinctSQL = fmt.Sprintf("count(DISTINCT %s)", identity)
		if doubt != "" {
			doubtSQL = fmt.Sprintf("count(DISTINCT %s) FILTER (WHERE %s)", identity, doubt)
		}
	}
	q := fmt.Sprintf("SELECT count(*) AS found, %s AS distinct_ids, %s AS in_doubt FROM read_parquet('%s/**/*.parquet', hive_partitioning=true)",
		distinctSQL, doubtSQL, strings.ReplaceAll(dir, "'", "''"))
	if where != "" {
		q += " WHERE " + where
	}
	cmd := exec.Command(e.DuckDB, "-json", "-c", q)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("duckdb: %w: %s", err, stderr.String())
	}
	var rows []struct {
		Found    int64 `json:"found"`
		Distinct int64 `json:"distinct_ids"`
		InDoubt  int64 `json:"in_doubt"`
	}
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		return 0, 0, 0, fmt.Errorf("duckdb answered %q: %v", out, err)
	}
	return rows[0].Found, rows[0].Distinct, rows[0].InDoubt, nil
}

// Disk is what Parquet files take on disk.
type Disk struct {
	Files int
	Bytes int64
}

// Files sums the Parquet files under dataDir/database/table; a directory
// that does not exist holds none. Files still being written under another
// name (temporary files renamed into place) are not counted.
func Files(dataDir, database, table string) (Disk, error) {
	var d Disk
	root := filepath.Join(dataDir, database, table)
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	err := filepath.WalkDir(root, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".parquet") {
			return nil
		}
		info, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while we looked (a compaction)
		}
		if err != nil {
			return err
		}
		d.Files++
		d.Bytes += info.Size()
		return nil
	})
	if err != nil {
		return Disk{}, fmt.Errorf("list parquet files: %w", err)
	}
	return d, nil
}
