package iceberg

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// syncLog records the folders fsynced.
type syncLog struct {
	layout.OSFS
	synced map[string]bool
}

func (f *syncLog) SyncDir(name string) error {
	f.synced[filepath.Clean(name)] = true
	return f.OSFS.SyncDir(name)
}

// TestLinkFoldersAreDurable links a table's first file of an hour: the
// commit that follows names the link, so the folders made for it must
// survive a power loss, or the table names a file that is not there.
func TestLinkFoldersAreDurable(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "a.parquet")
	require.NoError(t, os.WriteFile(src, []byte("PAR1"), 0o644))
	table := filepath.Join(root, "iceberg", "default", "logs")
	require.NoError(t, os.MkdirAll(table, 0o755))
	dst := filepath.Join(table, dataDirName, "date=2026-11-27", "hour=5", "a.parquet")
	fsys := &syncLog{synced: map[string]bool{}}

	require.NoError(t, link(fsys, src, dst))

	for _, d := range []string{table, filepath.Join(table, dataDirName), filepath.Join(table, dataDirName, "date=2026-11-27")} {
		assert.True(t, fsys.synced[d], "%s holds a new folder whose name is not fsynced", d)
	}
	a, err := os.Stat(src)
	require.NoError(t, err)
	b, err := os.Stat(dst)
	require.NoError(t, err)
	assert.True(t, os.SameFile(a, b))
}

// TestCatalogFolderIsDurable opens the default SQLite catalog in a data
// directory that has none: the catalog file is fsynced by SQLite, its new
// folder must be durable in its parent too, or a power loss takes every
// table's history with it.
func TestCatalogFolderIsDurable(t *testing.T) {
	dir := t.TempDir()
	sys := filepath.Join(dir, layout.SystemDirName)
	require.NoError(t, os.MkdirAll(sys, 0o755))
	c, err := New(Config{DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	fsys := &syncLog{synced: map[string]bool{}}
	c.fs = fsys
	require.NoError(t, c.connect(context.Background()))
	defer c.Stop()
	assert.DirExists(t, Dir(dir))
	assert.True(t, fsys.synced[sys], "%s holds the new catalog folder, not fsynced", sys)
}

// swapFS lists one folder as empty once: a compaction's old folder read
// as the swap empties it.
type swapFS struct {
	layout.OSFS
	dir  string
	done bool
}

func (f *swapFS) ReadDir(name string) ([]os.DirEntry, error) {
	if name == f.dir && !f.done {
		f.done = true
		return nil, nil
	}
	return f.OSFS.ReadDir(name)
}

// TestSwapDuringTheListingKeepsThePartition lists a partition while a
// compaction swaps it: the listing that read the old folder as it was
// emptied must not take the hour's files out of the table (its rows were
// missing from the current snapshot until the next pass).
func TestSwapDuringTheListingKeepsThePartition(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	h := e.hour(2)
	a, b := rows(h, 50, 0, "api"), rows(h, 30, 100, "web")
	e.write("cpu", h, "1.parquet", a, false)
	e.write("cpu", h, "2.parquet", b, false)
	cm := e.committer(nil)
	require.NoError(t, cm.Sync(ctx))
	require.Equal(t, concat(a, b), scan(t, e.load("cpu")))

	e.write("cpu", h, "3-compacted.parquet", concat(a, b), false)
	e.remove("cpu", h, "1.parquet", "2.parquet")
	cm.fs = &swapFS{dir: e.partitionDir("cpu", h)}
	require.NoError(t, cm.Sync(ctx))
	assert.Equal(t, concat(a, b), scan(t, e.load("cpu")), "the hour's rows stay in the table, once")

	require.NoError(t, cm.Sync(ctx))
	tbl := e.load("cpu")
	assert.Equal(t, e.hiveFiles("cpu"), suffixes(livePaths(t, tbl)))
	assert.Equal(t, concat(a, b), scan(t, tbl))
}
