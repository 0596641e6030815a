package storage

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in   string
		want Retention
		err  bool
	}{
		{in: "", want: Retention{}},
		{in: "720h", want: Retention{"*/*": 720 * time.Hour}},
		{in: "default/traces=168h, */*=720h", want: Retention{"default/traces": 168 * time.Hour, "*/*": 720 * time.Hour}},
		{in: "traces=1h", err: true},
		{in: "default/traces=forever", err: true},
		{in: "default/traces=-1h", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRetention(tt.in)
			if tt.err {
				assert.ErrorIs(t, err, ErrBadRetention)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	r := Retention{"default/traces": time.Hour, "default/*": 2 * time.Hour, "*/logs": 3 * time.Hour, "*/*": 4 * time.Hour}
	for _, c := range []struct {
		db, table string
		want      time.Duration
	}{{"default", "traces", time.Hour}, {"default", "logs", 2 * time.Hour}, {"prod", "logs", 3 * time.Hour}, {"prod", "cpu", 4 * time.Hour}} {
		got, ok := r.For(c.db, c.table)
		assert.True(t, ok)
		assert.Equal(t, c.want, got, "%s/%s: the most specific pattern wins", c.db, c.table)
	}
}

func TestRetentionDeletesOnlyOldPartitions(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "old", t0.Add(-72*time.Hour))
	appendBatch(t, s, "young", t0)
	require.NoError(t, s.Flush())

	n, err := s.ApplyRetention(t0.Add(time.Hour), Retention{"other/logs": time.Hour})
	require.NoError(t, err)
	assert.Zero(t, n, "another database's retention does not apply")

	n, err = s.ApplyRetention(t0.Add(time.Hour), Retention{"default/logs": 48 * time.Hour})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"young-0"}}, messages(t, dir))

	// A late row for the deleted hour makes a new partition, not an error.
	appendBatch(t, s, "late", t0.Add(-72*time.Hour))
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"late-0"}, messages(t, dir)["date=2026-11-19/hour=9"])
}

// renameFrom fails the renames of one path.
type renameFrom struct {
	OSFS
	path string
}

func (f *renameFrom) Rename(oldpath, newpath string) error {
	if oldpath == f.path {
		return errInjected
	}
	return f.OSFS.Rename(oldpath, newpath)
}

// TestRetentionGoesOnPastAPartitionItCannotDelete cannot retire one
// partition past its age (its folder cannot be moved): retention says so
// and still deletes the others. It used to stop there, so one such folder
// kept every partition listed after it on disk for good.
func TestRetentionGoesOnPastAPartitionItCannotDelete(t *testing.T) {
	dir := t.TempDir()
	stuck := filepath.Join(dir, "default", "logs", "date=2026-11-19", "hour=10") // listed before hour=9
	s := openStore(t, dir, &renameFrom{path: stuck})
	appendBatch(t, s, "old", t0.Add(-72*time.Hour), t0.Add(-71*time.Hour))
	appendBatch(t, s, "young", t0)
	require.NoError(t, s.Flush())

	n, err := s.ApplyRetention(t0.Add(time.Hour), Retention{"default/logs": 48 * time.Hour})
	require.ErrorIs(t, err, errInjected)
	assert.Equal(t, 1, n)
	require.NoError(t, s.Close())
	assert.Equal(t, map[string][]string{
		"date=2026-11-19/hour=10": {"old-1"},
		"date=2026-11-22/hour=9":  {"young-0"},
	}, messages(t, dir))
}
