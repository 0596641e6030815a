package storage

import (
	"os"
	"path/filepath"
	"testing"

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
			dropped, err := s.DropPartition(rel, tc.files)
			require.NoError(t, err)
			assert.Equal(t, tc.dropped, dropped)
			_, err = os.Stat(part)
			assert.Equal(t, tc.dropped || tc.have == nil, os.IsNotExist(err), "partition gone only when dropped")
		})
	}
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
	_, err = s.DropPartition("../x/date=2026-01-02/hour=1", nil)
	assert.ErrorIs(t, err, ErrBadPartition)
}
