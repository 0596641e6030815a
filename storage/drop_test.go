package storage

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDropPartition(t *testing.T) {
	const rel = "default/traces/date=2026-01-02/hour=3"
	for _, tc := range []struct {
		name    string
		have    []string
		files   []string
		dropped bool
	}{
		{"the files listed", []string{"a.parquet", "b.parquet"}, []string{"b.parquet", "a.parquet"}, true},
		{"a file published since the listing", []string{"a.parquet", "b.parquet"}, []string{"a.parquet"}, false},
		{"a file gone since the listing", []string{"a.parquet"}, []string{"a.parquet", "b.parquet"}, false},
		{"no partition", nil, []string{"a.parquet"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, OSFS{})
			defer s.Close()
			part := filepath.Join(dir, filepath.FromSlash(rel))
			for _, n := range tc.have {
				require.NoError(t, os.MkdirAll(part, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(part, n), []byte("x"), 0o644))
			}
			dropped, err := s.DropPartition(rel, tc.files, "t0ken")
			require.NoError(t, err)
			assert.Equal(t, tc.dropped, dropped)
			_, err = os.Stat(part)
			assert.Equal(t, tc.dropped || tc.have == nil, os.IsNotExist(err), "partition gone only when dropped")
			drops, err := s.Drops()
			require.NoError(t, err)
			if !tc.dropped {
				assert.Empty(t, drops, "a tombstone only for a drop that happened")
				return
			}
			assert.Equal(t, []string{"t0ken"}, drops, "the drop's tombstone")
			tomb, err := os.ReadDir(filepath.Join(dir, systemDirName, droppedDirName, "t0ken"))
			require.NoError(t, err)
			assert.Empty(t, tomb, "the tombstone holds no data")
			require.NoError(t, s.ForgetDrop("t0ken"))
			require.NoError(t, s.ForgetDrop("t0ken"), "forgetting twice is no error")
			drops, err = s.Drops()
			require.NoError(t, err)
			assert.Empty(t, drops)
		})
	}
}

// TestDropTombstoneOutlivesLateRowsAndCompaction: what tells a drop that
// happened from one that did not is the tombstone, not the partition's
// files: after a drop, late rows and a compaction leave the partition
// without the dropped files, as a compaction without a drop would.
func TestDropTombstoneOutlivesLateRowsAndCompaction(t *testing.T) {
	for _, drop := range []bool{true, false} {
		t.Run(map[bool]string{true: "dropped", false: "not dropped"}[drop], func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			appendBatch(t, s, "first", t0.Add(-72*time.Hour))
			require.NoError(t, s.Flush())
			part := onlyPartition(t, dir)
			first := parquetNames(t, part)
			if drop {
				dropped, err := s.DropPartition(relTo(t, dir, part), first, "drop-1")
				require.NoError(t, err)
				require.True(t, dropped)
			}
			appendBatch(t, s, "late-a", t0.Add(-72*time.Hour))
			require.NoError(t, s.Flush())
			appendBatch(t, s, "late-b", t0.Add(-72*time.Hour))
			require.NoError(t, s.Flush())
			_, err := s.Compact(context.Background(), 0)
			require.NoError(t, err)
			now := parquetNames(t, part)
			require.Len(t, now, 1, "compacted")
			assert.NotContains(t, now, first[0], "either way the first file is gone")
			drops, err := s.Drops()
			require.NoError(t, err)
			assert.Equal(t, drop, slices.Contains(drops, "drop-1"), "the tombstone tells which")
			require.NoError(t, s.Close())
			s = openStore(t, dir, nil) // and survives a restart
			defer s.Close()
			drops, err = s.Drops()
			require.NoError(t, err)
			assert.Equal(t, drop, slices.Contains(drops, "drop-1"))
		})
	}
}

func parquetNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), parquetExt) {
			out = append(out, e.Name())
		}
	}
	return out
}

// onlyPartition is the one partition folder under dir.
func onlyPartition(t *testing.T, dir string) string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*", "*", "date=*", "hour=*"))
	require.NoError(t, err)
	require.Len(t, matches, 1)
	return matches[0]
}

func relTo(t *testing.T, dir, part string) string {
	t.Helper()
	rel, err := filepath.Rel(dir, part)
	require.NoError(t, err)
	return filepath.ToSlash(rel)
}

func TestParsePartition(t *testing.T) {
	end, err := ParsePartition("db/t/date=2026-01-02/hour=23")
	require.NoError(t, err)
	assert.Equal(t, "2026-01-03T00:00:00Z", end.Format("2006-01-02T15:04:05Z07:00"))
	for _, bad := range []string{"db/t/date=2026-01-02", "../t/date=2026-01-02/hour=1", "db/t/date=2026-01-02/hour=09",
		"db/t/date=2026-01-02/hour=24", "_arcstore/t/date=2026-01-02/hour=1", "db/a%3ab/date=2026-01-02/hour=1", "db/%74races%20/date=2026-01-02/hour=1", "db/t/date=x/hour=1"} {
		_, err := ParsePartition(bad)
		assert.ErrorIs(t, err, ErrBadPartition, bad)
	}
	s := openStore(t, t.TempDir(), OSFS{})
	defer s.Close()
	_, err = s.DropPartition("../x/date=2026-01-02/hour=1", nil, "t")
	assert.ErrorIs(t, err, ErrBadPartition)
	for _, bad := range []string{"", "../x", "a/b", ".", strings.Repeat("a", 65)} {
		_, err = s.DropPartition("db/t/date=2026-01-02/hour=1", nil, bad)
		assert.ErrorIs(t, err, ErrBadDropToken, bad)
		assert.ErrorIs(t, s.ForgetDrop(bad), ErrBadDropToken, bad)
	}
}
