package layout_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// mkdirs makes the folders dirs and the one-byte files files under root.
func mkdirs(t *testing.T, root string, dirs []string, files []string) {
	t.Helper()
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	for _, f := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644))
	}
}

func hourEnd(day string, hour int) time.Time {
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		panic(err)
	}
	return d.Add(time.Duration(hour+1) * time.Hour)
}

func TestParsePartition(t *testing.T) {
	tests := []struct {
		name string
		rel  string
		end  time.Time // zero: rejected
	}{
		{"first hour", "default/traces/date=2026-11-27/hour=0", hourEnd("2026-11-27", 0)},
		{"an hour", "db/cpu/date=2026-11-27/hour=5", hourEnd("2026-11-27", 5)},
		{"last hour ends the next day", "db/cpu/date=2026-12-31/hour=23", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"an encoded measurement", "db/disk%20io/date=2026-11-27/hour=1", hourEnd("2026-11-27", 1)},
		{"hour 24", "db/cpu/date=2026-11-27/hour=24", time.Time{}},
		{"negative hour", "db/cpu/date=2026-11-27/hour=-1", time.Time{}},
		{"hour with a leading zero", "db/cpu/date=2026-11-27/hour=05", time.Time{}},
		{"hour not a number", "db/cpu/date=2026-11-27/hour=x", time.Time{}},
		{"no hour= prefix", "db/cpu/date=2026-11-27/5", time.Time{}},
		{"no date= prefix", "db/cpu/2026-11-27/hour=5", time.Time{}},
		{"month 13", "db/cpu/date=2026-13-01/hour=5", time.Time{}},
		{"date not zero-padded", "db/cpu/date=2026-1-01/hour=5", time.Time{}},
		{"too short", "db/date=2026-11-27/hour=5", time.Time{}},
		{"too long", "db/cpu/x/date=2026-11-27/hour=5", time.Time{}},
		{"the system folder as a database", "_arcstore/cpu/date=2026-11-27/hour=5", time.Time{}},
		{"a table escaping its database", "db/../date=2026-11-27/hour=5", time.Time{}},
		{"a table spelt another way", "db/cpu%41/date=2026-11-27/hour=5", time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			end, err := layout.ParsePartition(tt.rel)
			if tt.end.IsZero() {
				assert.ErrorIs(t, err, layout.ErrBadPartition)
				assert.ErrorContains(t, err, tt.rel, "the error names the path")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.end, end)
		})
	}
}

func TestTablePartitions(t *testing.T) {
	table := t.TempDir()
	mkdirs(t, table, []string{
		"date=2026-11-27/hour=0",
		"date=2026-11-27/hour=23",
		"date=2026-11-28/hour=7",
		"date=2026-11-28/hour=24",  // not an hour
		"date=2026-11-28/hour=05",  // not a partition's spelling (ParsePartition's rule)
		"date=2026-11-28/hour=x",   // not an hour
		"date=2026-11-28/minute=7", // not hour=
		"date=2026-13-01/hour=1",   // not a date
		"when=2026-11-27/hour=1",   // not date=
		"date=2026-11-29",          // no hours
	}, []string{
		"date=2026-11-28/hour=8", // a file
		"date=2026-11-30",        // a file
		"date=2026-11-27/hour=0/a.parquet",
	})
	got, err := layout.TablePartitions(layout.OSFS{}, table)
	require.NoError(t, err)
	assert.ElementsMatch(t, []layout.PartitionDir{
		{Dir: filepath.Join(table, "date=2026-11-27", "hour=0"), End: hourEnd("2026-11-27", 0)},
		{Dir: filepath.Join(table, "date=2026-11-27", "hour=23"), End: hourEnd("2026-11-27", 23)},
		{Dir: filepath.Join(table, "date=2026-11-28", "hour=7"), End: hourEnd("2026-11-28", 7)},
	}, got)

	_, err = layout.TablePartitions(layout.OSFS{}, filepath.Join(table, "gone"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a table that cannot be listed is an error")
	fsys := &faultFS{readDir: func(name string) ([]os.DirEntry, error) {
		if name == filepath.Join(table, "date=2026-11-28") {
			return nil, errInjected
		}
		return os.ReadDir(name)
	}}
	_, err = layout.TablePartitions(fsys, table)
	assert.ErrorIs(t, err, errInjected, "a date that cannot be listed is an error")
}

func TestParquetFiles(t *testing.T) {
	dir := t.TempDir()
	mkdirs(t, dir, []string{"folder.parquet"}, []string{"b.parquet", "a.parquet", "c.parquet.tmp", "notes.txt", "parquet"})
	// Listed in reverse: ParquetFiles sorts what the file system returns.
	reversed := &faultFS{readDir: func(name string) ([]os.DirEntry, error) {
		es, err := os.ReadDir(name)
		slices.Reverse(es)
		return es, err
	}}
	got, err := layout.ParquetFiles(reversed, dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"a.parquet", "b.parquet"}, got, "files only, sorted by name")
	_, err = layout.ParquetFiles(layout.OSFS{}, filepath.Join(dir, "gone"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestTables(t *testing.T) {
	data := t.TempDir()
	mkdirs(t, data, []string{
		"default/traces", "default/cpu", "db%20two/disk%20io",
		layout.SystemDirName + "/" + layout.WALDirName, // not a database
		".hidden/cpu", // a folder the sidecar would not make
	}, []string{"default/stray.txt", "file-at-top"})
	type table struct{ db, table, dir string }
	var got []table
	err := layout.Tables(layout.OSFS{}, data, func(db, tb, dir string) error {
		got = append(got, table{db, tb, dir})
		return nil
	})
	require.NoError(t, err)
	assert.ElementsMatch(t, []table{
		{"default", "traces", filepath.Join(data, "default", "traces")},
		{"default", "cpu", filepath.Join(data, "default", "cpu")},
		{"db%20two", "disk%20io", filepath.Join(data, "db%20two", "disk%20io")},
	}, got)

	err = layout.Tables(layout.OSFS{}, data, func(string, string, string) error { return errInjected })
	assert.ErrorIs(t, err, errInjected, "fn's error stops the walk")
	err = layout.Tables(layout.OSFS{}, filepath.Join(data, "gone"), func(string, string, string) error { return nil })
	assert.ErrorIs(t, err, os.ErrNotExist, "a data dir that cannot be listed is an error")
}

func TestWalk(t *testing.T) {
	data := t.TempDir()
	mkdirs(t, data, []string{
		"default/traces/date=2026-11-27/hour=3",
		"default/traces/date=2026-11-27/hour=4",
		"db/disk%20io/date=2026-11-28/hour=0",
		"db/cpu/date=2026-11-28/hour=05",   // not a partition's spelling
		"db/cpu/date=2026-11-28/other",     // not a partition
		"db/cpu%41/date=2026-11-28/hour=1", // a table the sidecar would not make
		layout.SystemDirName + "/" + layout.TrashDirName + "/x/date=2026-11-28/hour=1",
	}, []string{"db/cpu/date=2026-11-28/hour=2"}) // a file
	got, err := walk(layout.OSFS{}, data)
	require.NoError(t, err)
	assert.ElementsMatch(t, []layout.Partition{
		{Database: "default", Table: "traces", Rel: "default/traces/date=2026-11-27/hour=3", Dir: filepath.Join(data, "default/traces/date=2026-11-27/hour=3"), End: hourEnd("2026-11-27", 3)},
		{Database: "default", Table: "traces", Rel: "default/traces/date=2026-11-27/hour=4", Dir: filepath.Join(data, "default/traces/date=2026-11-27/hour=4"), End: hourEnd("2026-11-27", 4)},
		{Database: "db", Table: "disk%20io", Rel: "db/disk%20io/date=2026-11-28/hour=0", Dir: filepath.Join(data, "db/disk%20io/date=2026-11-28/hour=0"), End: hourEnd("2026-11-28", 0)},
	}, got)

	// A folder that vanishes while the tree is read (retention, a drop)
	// has no partitions; any other failure to list is an error.
	vanished := &faultFS{readDir: func(name string) ([]os.DirEntry, error) {
		if name == filepath.Join(data, "default", "traces") {
			return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
		}
		return os.ReadDir(name)
	}}
	got, err = walk(vanished, data)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "db/disk%20io/date=2026-11-28/hour=0", got[0].Rel)

	failing := &faultFS{readDir: func(name string) ([]os.DirEntry, error) {
		if name == filepath.Join(data, "db", "disk%20io", "date=2026-11-28") {
			return nil, errInjected
		}
		return os.ReadDir(name)
	}}
	_, err = walk(failing, data)
	assert.ErrorIs(t, err, errInjected)
	assert.ErrorContains(t, err, "list date")

	err = layout.Walk(layout.OSFS{}, data, func(layout.Partition) error { return errInjected })
	assert.ErrorIs(t, err, errInjected, "fn's error stops the walk")
	got, err = walk(layout.OSFS{}, filepath.Join(data, "gone"))
	assert.NoError(t, err, "a data dir that is gone has no partitions")
	assert.Empty(t, got)
}

// walk returns the partitions Walk finds.
func walk(fsys layout.DirReader, data string) ([]layout.Partition, error) {
	var got []layout.Partition
	err := layout.Walk(fsys, data, func(p layout.Partition) error {
		got = append(got, p)
		return nil
	})
	return got, err
}

// ReadDirSettled says whether two listings of a folder agree: one that
// overlapped a compaction's swap does not.
func TestReadDirSettled(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.parquet"), nil, 0o644))
	entries, settled, err := layout.ReadDirSettled(layout.OSFS{}, dir)
	require.NoError(t, err)
	assert.True(t, settled)
	require.Len(t, entries, 1)

	calls := 0
	swapping := &faultFS{readDir: func(name string) ([]os.DirEntry, error) {
		calls++
		if calls == 1 {
			return nil, nil // the old folder, emptied as it was read
		}
		return os.ReadDir(name)
	}}
	_, settled, err = layout.ReadDirSettled(swapping, dir)
	require.NoError(t, err)
	assert.False(t, settled)

	_, _, err = layout.ReadDirSettled(layout.OSFS{}, filepath.Join(dir, "gone"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
