package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/upload"
)

// TestLocalTableFollowsFiles: flushed files are added, a compaction's swap
// and retention's deletion are committed, and the table reads back exactly
// the rows of the hive tree each time; the table's metadata and links stay
// out of the hive tree.
func TestLocalTableFollowsFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h1, h2 := e.hour(2), e.hour(1)
	a, b, c := rows(h1, 50, 0, "api"), rows(h1, 30, 100, "web"), rows(h2, 20, 200, "api")
	e.write("cpu", h1, "1.parquet", a, false)
	e.write("cpu", h1, "2.parquet", b, false)
	e.write("cpu", h2, "1.parquet", c, false)

	cm := e.committer(nil)
	require.NoError(t, cm.Sync(ctx))
	tbl := e.load("cpu")
	assert.Equal(t, e.hiveFiles("cpu"), suffixes(livePaths(t, tbl)))
	assert.Equal(t, concat(a, b, c), scan(t, tbl))
	assert.Equal(t, 3.0, testutil.ToFloat64(cm.metrics.files))
	assert.Equal(t, 0.0, testutil.ToFloat64(cm.metrics.lag))
	for _, p := range livePaths(t, tbl) {
		assert.True(t, strings.HasPrefix(p, "file://"+filepath.Join(Dir(e.dir), "default", "cpu", "data")+"/"), p)
	}
	assert.True(t, strings.HasPrefix(tbl.MetadataLocation(), "file://"+filepath.Join(Dir(e.dir), "default", "cpu", "metadata")+"/"))
	assert.Equal(t, []string{"date=2026-11-27"}, storagetest.DirNames(t, filepath.Join(e.dir, "default", "cpu")), "nothing but partitions in the hive tree")
	assert.FileExists(t, CatalogPath(e.dir))

	// Nothing changed: no commit.
	snap := tbl.CurrentSnapshot().SnapshotID
	require.NoError(t, cm.Sync(ctx))
	assert.Equal(t, snap, e.load("cpu").CurrentSnapshot().SnapshotID)

	// A compaction merges the hour's two files into one.
	e.write("cpu", h1, "3-compacted.parquet", concat(a, b), false)
	e.remove("cpu", h1, "1.parquet", "2.parquet")
	require.NoError(t, cm.Sync(ctx))
	tbl = e.load("cpu")
	assert.Equal(t, e.hiveFiles("cpu"), suffixes(livePaths(t, tbl)))
	assert.Equal(t, concat(a, b, c), scan(t, tbl))
	assert.Equal(t, table.OpOverwrite, tbl.CurrentSnapshot().Summary.Operation, "one snapshot swaps the files")

	// The previous snapshot still reads: its replaced files are links that
	// stay until it expires.
	prev := tbl.Metadata().SnapshotByID(*tbl.CurrentSnapshot().ParentSnapshotID)
	assert.Equal(t, concat(a, b, c), scan(t, tbl, table.WithSnapshotID(prev.SnapshotID)))

	// Retention deletes the older hour.
	require.NoError(t, os.RemoveAll(filepath.Join(e.dir, "default", "cpu", "date="+h1.Format(time.DateOnly), "hour="+strconv.Itoa(h1.Hour()))))
	require.NoError(t, cm.Sync(ctx))
	tbl = e.load("cpu")
	assert.Equal(t, c, scan(t, tbl))
	assert.Equal(t, 1.0, testutil.ToFloat64(cm.metrics.files))
	assert.Equal(t, 3.0, testutil.ToFloat64(cm.metrics.commits.WithLabelValues(resultOK)))
}

// TestExpiryFreesReplacedFiles: once the snapshots that listed replaced
// files expire, their links go (and with them the disk space); the live
// files' links and the hive tree stay.
func TestExpiryFreesReplacedFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	a, b := rows(h, 10, 0, "api"), rows(h, 10, 10, "api")
	e.write("cpu", h, "1.parquet", a, false)
	const retention = 3 * time.Second // longer than the three passes take
	cm := e.committer(nil, func(c *Config) { c.SnapshotRetention, c.KeepSnapshots = retention, 1 })
	require.NoError(t, cm.Sync(ctx))
	e.write("cpu", h, "2.parquet", b, false)
	require.NoError(t, cm.Sync(ctx))
	e.write("cpu", h, "3.parquet", concat(a, b), false)
	e.remove("cpu", h, "1.parquet", "2.parquet")
	require.NoError(t, cm.Sync(ctx))
	links := filepath.Join(Dir(e.dir), "default", "cpu", "data", filepath.FromSlash(rel(h)))
	assert.Equal(t, []string{"1.parquet", "2.parquet", "3.parquet"}, fileNames(t, links), "snapshots not yet expired keep their files")

	time.Sleep(2 * retention) // snapshots carry the wall clock's time
	require.NoError(t, cm.Sync(ctx))
	tbl := e.load("cpu")
	assert.Len(t, tbl.Metadata().Snapshots(), 1)
	assert.Equal(t, []string{"3.parquet"}, fileNames(t, links))
	assert.Equal(t, []string{rel(h) + "/3.parquet"}, e.hiveFiles("cpu"))
	assert.Equal(t, concat(a, b), scan(t, tbl))
}

// TestSchemaEvolution: a measurement's new column is added to the table as
// optional (older files read it as null); a file whose column type
// conflicts with the table's is kept out of it, logged once, and counted.
func TestSchemaEvolution(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	a := rows(h, 5, 0, "api")
	e.write("cpu", h, "1.parquet", a, false)
	cm := e.committer(nil)
	require.NoError(t, cm.Sync(ctx))

	eu := "eu"
	b := rows(h, 5, 10, "web")
	for i := range b {
		b[i].Region = &eu
	}
	e.write("cpu", h, "2.parquet", b, true)
	// value as a string: the table's value is a double.
	bad := arrowSchema(t, map[string]string{"value": "string"})
	e.writeRecord("cpu", h, "3.parquet", bad, rows(h, 3, 99, "bad"))
	require.NoError(t, cm.Sync(ctx))
	tbl := e.load("cpu")
	f, ok := tbl.Schema().FindFieldByName("region")
	require.True(t, ok)
	assert.False(t, f.Required)
	assert.Equal(t, iceberg.PrimitiveTypes.String, f.Type)
	nm := tbl.NameMapping()
	require.NotNil(t, nm)
	ids := map[string]int{}
	for _, m := range nm {
		if m.FieldID != nil {
			for _, n := range m.Names {
				ids[n] = *m.FieldID
			}
		}
	}
	assert.Equal(t, f.ID, ids["region"], "the name mapping knows the new column")
	assert.Equal(t, concat(a, b), scan(t, tbl))
	assert.Equal(t, []string{rel(h) + "/1.parquet", rel(h) + "/2.parquet"}, suffixes(livePaths(t, tbl)))
	assert.Equal(t, 1.0, testutil.ToFloat64(cm.metrics.refused))
	require.Len(t, cm.refused, 1)
	for _, why := range cm.refused {
		assert.Contains(t, why, `column "value" is optional string in the file and optional double in the table`)
	}
	// The refused file is not tried again, and not linked.
	snap := tbl.CurrentSnapshot().SnapshotID
	require.NoError(t, cm.Sync(ctx))
	assert.Equal(t, snap, e.load("cpu").CurrentSnapshot().SnapshotID)
	assert.NoFileExists(t, filepath.Join(Dir(e.dir), "default", "cpu", "data", filepath.FromSlash(rel(h)), "3.parquet"))

	// Once the refused file is gone (retention, a hand), it is not counted.
	e.remove("cpu", h, "3.parquet")
	require.NoError(t, cm.Sync(ctx))
	assert.Equal(t, 0.0, testutil.ToFloat64(cm.metrics.refused))
}

// TestOtherWarehouse: a table kept in the local warehouse is not mixed with
// the bucket's objects when the sidecar is given a bucket later (the same
// rows would be listed twice): the commit is refused, naming both places.
func TestOtherWarehouse(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	e.write("cpu", h, "1.parquet", rows(h, 5, 0, "api"), false)
	require.NoError(t, e.committer(nil).Sync(ctx))
	cm := e.committer(nil, func(c *Config) { c.Bucket = &Bucket{Name: "lake", Prefix: "otel"} })
	err := cm.Settle(ctx, "default/cpu/"+rel(h), []upload.StoredFile{{File: "1.parquet", Key: "otel/default/cpu/" + rel(h) + "/1.parquet", Size: 1}}, nil)
	require.ErrorIs(t, err, ErrOtherWarehouse)
	assert.Contains(t, err.Error(), "s3://lake/otel/_iceberg/default/cpu")
	assert.Error(t, cm.Ready())
	assert.Equal(t, rows(h, 5, 0, "api"), scan(t, e.load("cpu")), "the local table is left as it was")
}

// TestNanosecondFilesRefused: Iceberg v2 has no nanosecond timestamps; a
// file written with them (by a build before microseconds) stays out.
func TestNanosecondFilesRefused(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	e.write("cpu", h, "1.parquet", rows(h, 5, 0, "api"), false)
	e.writeRecord("cpu", h, "2.parquet", arrowSchema(t, map[string]string{"time": "ns"}), rows(h, 5, 10, "api"))
	cm := e.committer(nil)
	require.NoError(t, cm.Sync(ctx))
	assert.Equal(t, rows(h, 5, 0, "api"), scan(t, e.load("cpu")))
	require.Len(t, cm.refused, 1)
	for _, why := range cm.refused {
		assert.Contains(t, why, `column "time" is a ns timestamp; Iceberg v2 tables take microseconds`)
	}
}

func concat(parts ...[]row) []row {
	var out []row
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range storagetest.DirNames(t, dir) {
		if !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

// TestReservedCharactersInDataDir: a data directory whose path holds
// characters URIs reserve (#, ?, %, a space) keeps its catalog, metadata
// and links where they belong (unescaped, a # cut the SQLite URI short and
// every such directory shared one catalog file).
func TestReservedCharactersInDataDir(t *testing.T) {
	e := newEnv(t)
	e.dir = filepath.Join(t.TempDir(), "a#b?c%d e", "data")
	h := e.hour(1)
	want := rows(h, 5, 0, "api")
	e.write("cpu", h, "1.parquet", want, false)
	require.NoError(t, e.committer(nil).Sync(context.Background()))
	assert.FileExists(t, CatalogPath(e.dir))
	tbl := e.load("cpu")
	assert.Equal(t, want, scan(t, tbl))
	for _, p := range livePaths(t, tbl) {
		assert.FileExists(t, localPath(p))
	}
}

// TestUnreachableCatalog: a shared catalog that cannot be reached fails the
// pass and shows in Ready (for /ready) with the password redacted.
func TestUnreachableCatalog(t *testing.T) {
	for _, uri := range []string{"postgres://arc:secret@127.0.0.1:1/lake?sslmode=disable", "http://127.0.0.1:1/catalog"} {
		t.Run(strings.SplitN(uri, ":", 2)[0], func(t *testing.T) {
			e := newEnv(t)
			cm := e.committer(nil, func(c *Config) { c.Catalog, c.Bucket = uri, &Bucket{Name: "lake"} })
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := cm.Sync(ctx)
			require.Error(t, err)
			require.Error(t, cm.Ready())
			assert.NotContains(t, cm.Ready().Error(), "secret")
			assert.NoFileExists(t, CatalogPath(e.dir))
		})
	}
}

// TestCatalogBackCatchesUp: while the catalog cannot be opened nothing is
// committed, Ready fails and the lag counts what waits; the next pass after it is back commits every
// file waiting and Ready clears.
func TestCatalogBackCatchesUp(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	want := rows(h, 5, 0, "api")
	f := e.write("cpu", h, "1.parquet", want, false)
	// The file arrived before the test's clock (the lag counts from it).
	require.NoError(t, os.Chtimes(f, e.now.Add(-time.Minute), e.now.Add(-time.Minute)))
	// A folder where the catalog's file goes: it cannot be opened.
	require.NoError(t, os.MkdirAll(CatalogPath(e.dir), 0o755))
	cm := e.committer(nil)
	cm.lastOK = time.Time{} // the file arrived since the last pass
	require.Error(t, cm.Sync(ctx))
	require.Error(t, cm.Ready())
	assert.Greater(t, testutil.ToFloat64(cm.metrics.lag), 0.0, "the lag counts the file that waits")

	require.NoError(t, os.Remove(CatalogPath(e.dir)))
	require.NoError(t, cm.Sync(ctx))
	assert.NoError(t, cm.Ready())
	assert.Equal(t, want, scan(t, e.load("cpu")))
	assert.Equal(t, 0.0, testutil.ToFloat64(cm.metrics.lag))
}

// TestTableNames: a table is named in the catalog by the names its folders
// store (percent-decoded); a measurement named like an OTLP table keeps its
// folder's name.
func TestTableNames(t *testing.T) {
	for _, tt := range []struct {
		db, table string
		want      table.Identifier
	}{
		{"default", "cpu", table.Identifier{"default", "cpu"}},
		{"my%20db", "disk%20io", table.Identifier{"my db", "disk io"}},
		{"default", "traces", table.Identifier{"default", "traces"}},
		{"default", "%74races", table.Identifier{"default", "%74races"}},
	} {
		assert.Equal(t, tt.want, tableID{tt.db, tt.table}.ident(), tt.table)
	}
	e := newEnv(t)
	h := e.hour(1)
	want := rows(h, 3, 0, "api")
	e.write("disk%20io", h, "1.parquet", want, false)
	require.NoError(t, e.committer(nil).Sync(context.Background()))
	assert.Equal(t, want, scan(t, e.load("disk io")))
}

// TestRequiredMapValuesReadWhole: files whose map values and list elements
// are required (as the contract's are) are read back whole by iceberg-go's
// ToArrowTable; with those values required in the table it panicked on its
// own batches, which read them as nullable.
func TestRequiredMapValuesReadWhole(t *testing.T) {
	e := newEnv(t)
	h := e.hour(1)
	m := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	m.SetItemNullable(false)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "attributes", Type: m},
		{Name: "tags", Type: arrow.ListOfNonNullable(arrow.BinaryTypes.String)},
	}, nil)
	for f, first := range map[string]float64{"1.parquet": 0, "2.parquet": 10} {
		e.writeRecord("spans", h, f, sc, rows(h, 5, first, "api"))
	}
	require.NoError(t, e.committer(nil).Sync(context.Background()))
	whole, err := e.load("spans").Scan().ToArrowTable(context.Background())
	require.NoError(t, err)
	defer whole.Release()
	assert.EqualValues(t, 10, whole.NumRows())
}

// TestCommittersCollide: another committer moves the table between this
// one's staging and its commit (a shared catalog); the commit is refused,
// counted as a conflict and retried at once on the table as it is now:
// the pass succeeds, Ready stays nil, every file is in the table once.
func TestCommittersCollide(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(1)
	a, b := rows(h, 5, 0, "api"), rows(h, 5, 10, "web")
	e.write("cpu", h, "1.parquet", a, false)
	require.NoError(t, e.committer(nil).Sync(ctx)) // the table exists
	e.write("cpu", h, "2.parquet", b, false)
	other := e.committer(nil)
	collided := false
	cm := e.committer(func(step string) error {
		if step == "staged" && !collided {
			collided = true
			require.NoError(t, other.Sync(ctx))
		}
		return nil
	})
	require.NoError(t, cm.Sync(ctx))
	assert.True(t, collided)
	assert.NoError(t, cm.Ready())
	assert.Equal(t, 1.0, testutil.ToFloat64(cm.metrics.commits.WithLabelValues(resultConflict)))
	tbl := e.load("cpu")
	assert.Equal(t, e.hiveFiles("cpu"), suffixes(livePaths(t, tbl)))
	assert.Equal(t, concat(a, b), scan(t, tbl))
}
