package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The retention room on its own: a tree of partition folders, a guard
// that records what is held, no store.

type recordingGuard struct {
	maint, tree sync.Mutex
	treeHeld    bool
	maintHeld   bool
	unfinished  error
}

type flagLock struct {
	mu   *sync.Mutex
	held *bool
}

func (l flagLock) Lock()   { l.mu.Lock(); *l.held = true }
func (l flagLock) Unlock() { *l.held = false; l.mu.Unlock() }

func (g *recordingGuard) Maint() sync.Locker { return flagLock{&g.maint, &g.maintHeld} }
func (g *recordingGuard) Tree() sync.Locker  { return flagLock{&g.tree, &g.treeHeld} }
func (g *recordingGuard) Unfinished() error  { return g.unfinished }

// roomTree makes a partition folder with one file for each rel.
func roomTree(t *testing.T, rels ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, rel := range rels {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(p, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(p, "a.parquet"), []byte("x"), 0o644))
	}
	return dir
}

type roomRun struct {
	rt        *retention
	g         *recordingGuard
	forgotten []string
	retired   []int
	// forgetUnlocked lists folders forgotten without both locks held.
	forgetUnlocked []string
}

func newRoom(dir string) *roomRun {
	r := &roomRun{g: &recordingGuard{}}
	r.rt = &retention{fs: OSFS{}, dir: dir, sysDir: filepath.Join(dir, systemDirName), log: quiet, guard: r.g,
		forget: func(d string) {
			r.forgotten = append(r.forgotten, d)
			if !r.g.maintHeld || !r.g.treeHeld {
				r.forgetUnlocked = append(r.forgetUnlocked, d)
			}
		},
		retired: func(n int) { r.retired = append(r.retired, n) }}
	return r
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestRetentionRoomRetiresOnlyExpiredPartitions(t *testing.T) {
	const (
		oldLogs   = "default/logs/date=2026-11-01/hour=3"
		newLogs   = "default/logs/date=2026-11-22/hour=9"
		oldTraces = "default/traces/date=2026-11-01/hour=3"
	)
	dir := roomTree(t, oldLogs, newLogs, oldTraces)
	r := newRoom(dir)
	n, err := r.rt.apply(t0, Retention{"default/logs": 7 * 24 * time.Hour})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.False(t, exists(t, filepath.Join(dir, oldLogs)), "expired")
	assert.True(t, exists(t, filepath.Join(dir, newLogs)), "within retention")
	assert.True(t, exists(t, filepath.Join(dir, oldTraces)), "no retention for traces")
	assert.Equal(t, []string{filepath.Join(dir, oldLogs)}, r.forgotten, "the flusher forgets the folder")
	assert.Empty(t, r.forgetUnlocked, "under Maint and Tree")
	assert.Equal(t, []int{1}, r.retired)
	trash, err := os.ReadDir(filepath.Join(dir, systemDirName, trashDirName))
	require.NoError(t, err)
	assert.Empty(t, trash)

	n, err = r.rt.apply(t0, Retention{"default/logs": 7 * 24 * time.Hour})
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, []int{1}, r.retired, "nothing retired, nothing reported")
}

func TestRetentionRoomWaitsForAHalfPublishedFlush(t *testing.T) {
	const old = "default/logs/date=2026-11-01/hour=3"
	dir := roomTree(t, old)
	r := newRoom(dir)
	r.g.unfinished = errPublishUnfinished
	_, err := r.rt.apply(t0, Retention{"*/*": time.Hour})
	require.ErrorIs(t, err, errPublishUnfinished)
	_, err = r.rt.drop(old, []string{"a.parquet"}, "tok")
	require.ErrorIs(t, err, errPublishUnfinished)
	assert.True(t, exists(t, filepath.Join(dir, old)), "left alone")
	assert.Empty(t, r.forgotten)
}

func TestRetentionRoomRecoverEmptiesTheTrash(t *testing.T) {
	dir := roomTree(t)
	left := filepath.Join(dir, systemDirName, trashDirName, "0123456789ab", "hour-files")
	require.NoError(t, os.MkdirAll(left, 0o755))
	require.NoError(t, newRoom(dir).rt.recover())
	trash, err := os.ReadDir(filepath.Join(dir, systemDirName, trashDirName))
	require.NoError(t, err)
	assert.Empty(t, trash)
	require.NoError(t, newRoom(t.TempDir()).rt.recover(), "no trash is nothing to do")
}

func TestRetentionRoomDropKeepsATombstoneUntilForgotten(t *testing.T) {
	const rel = "default/logs/date=2026-11-22/hour=9"
	dir := roomTree(t, rel)
	r := newRoom(dir)
	ok, err := r.rt.drop(rel, []string{"a.parquet", "b.parquet"}, "tok")
	require.NoError(t, err)
	assert.False(t, ok, "not the files the partition holds")
	assert.True(t, exists(t, filepath.Join(dir, rel)))

	ok, err = r.rt.drop(rel, []string{"a.parquet"}, "tok")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.False(t, exists(t, filepath.Join(dir, rel)))
	assert.Equal(t, []string{filepath.Join(dir, rel)}, r.forgotten)
	assert.Empty(t, r.forgetUnlocked)
	drops, err := r.rt.drops()
	require.NoError(t, err)
	assert.Equal(t, []string{"tok"}, drops)
	tomb, err := os.ReadDir(filepath.Join(dir, systemDirName, droppedDirName, "tok"))
	require.NoError(t, err)
	assert.Empty(t, tomb, "the tombstone is emptied")

	require.NoError(t, r.rt.forgetDrop("tok"))
	drops, err = r.rt.drops()
	require.NoError(t, err)
	assert.Empty(t, drops)
	require.NoError(t, r.rt.forgetDrop("tok"), "forgetting twice is no error")
}
