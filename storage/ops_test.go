package storage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Operations faults: what an operator or a full disk does to the data
// directory while the sidecar runs.

// TestDeletedPartitionDirIsRecreated: a partition folder deleted from
// outside after a flush made it used to fail every later flush ("sync
// partition dir: no such file") and then every start; the flush makes the
// folder again.
func TestDeletedPartitionDirIsRecreated(t *testing.T) {
	for _, tt := range []struct {
		name    string
		restart bool // delete the folder after the intent, then crash: recovery publishes
	}{
		{"while running", false},
		{"between intent and publish, then a crash", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fsys := &faultFS{}
			s := openStore(t, dir, fsys)
			appendBatch(t, s, "first", t0)
			require.NoError(t, s.Flush())
			table := filepath.Join(dir, "default", "logs")

			appendBatch(t, s, "second", t0)
			if !tt.restart {
				require.NoError(t, os.RemoveAll(table))
				require.NoError(t, s.Flush())
				require.NoError(t, s.Close())
				assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"second-0"}}, messages(t, dir))
				return
			}
			fsys.failRename = func(newpath string) bool {
				if !strings.HasSuffix(newpath, parquetExt) {
					return false
				}
				_ = os.RemoveAll(table) // the intent is durable by now
				return true
			}
			require.ErrorIs(t, s.Flush(), errInjected)
			crash(s)
			fsys.failRename = nil
			s = openStore(t, dir, fsys)
			require.NoError(t, s.Close())
			assert.Equal(t, map[string][]string{"date=2026-11-22/hour=9": {"second-0"}}, messages(t, dir))
		})
	}
}

// mergeFaults fails writes to compaction's merged temp files, as a full
// disk does.
type mergeFaults struct{ OSFS }

type enospcFile struct{ *os.File }

func (f enospcFile) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

func (f *mergeFaults) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(filepath.Base(name), "-compacted-") {
		return file, err
	}
	return enospcFile{file}, nil
}

// TestFailedMergeRemovesItsTempFile: a merge that fails (ENOSPC) used to
// leave its temp file, and its space, until the next start.
func TestFailedMergeRemovesItsTempFile(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, &mergeFaults{})
	defer s.Close()
	threeFlushes(t, s)
	_, err := s.Compact(context.Background(), 0)
	require.ErrorIs(t, err, syscall.ENOSPC)
	entries, err := os.ReadDir(filepath.Join(dir, systemDirName, tmpDirName))
	require.NoError(t, err)
	assert.Empty(t, entries, "no temp file left by the failed merge")
	assert.Len(t, partitionFiles(t, dir, closedHour), 3, "the partition keeps its files")
}

// TestRetentionTrashIsEmptiedAtStart: a crash in the middle of deleting a
// retired partition left it in the trash for good.
func TestRetentionTrashIsEmptiedAtStart(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, nil)
	appendBatch(t, s, "old", t0.Add(-72*time.Hour))
	require.NoError(t, s.Close())
	// What a crash between retiring and deleting leaves.
	trash := filepath.Join(dir, systemDirName, trashDirName)
	require.NoError(t, os.MkdirAll(trash, 0o755))
	require.NoError(t, os.Rename(filepath.Join(dir, "default", "logs", "date=2026-11-19"), filepath.Join(trash, "0123456789ab")))

	s = openStore(t, dir, nil)
	entries, err := os.ReadDir(trash)
	require.NoError(t, err)
	assert.Empty(t, entries, "the trash is emptied at start")
	require.NoError(t, s.Close())
}
