package upload

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
)

// syncLog records the folders fsynced.
type syncLog struct {
	storage.OSFS
	synced map[string]bool
}

func (f *syncLog) SyncDir(name string) error {
	f.synced[filepath.Clean(name)] = true
	return f.OSFS.SyncDir(name)
}

// TestManifestOfANewPartitionIsDurable records the first upload of a
// partition: its manifest goes into folders made for it, and the record
// must survive a power loss with them (it is what deletes an object the
// server finished after a crash, once a compaction replaced its file).
func TestManifestOfANewPartitionIsDurable(t *testing.T) {
	state := filepath.Join(t.TempDir(), "uploads", "partitions")
	fsys := &syncLog{synced: map[string]bool{}}
	ms := manifests{dir: state, fs: fsys}
	rel := "default/logs/date=2026-11-27/hour=5"
	m := &manifest{Partition: rel, Pending: []pending{{Key: Key("p", rel, "a.parquet")}}}
	require.NoError(t, ms.save(m))

	for d := filepath.Dir(ms.path(rel)); d != filepath.Dir(filepath.Dir(state)); d = filepath.Dir(d) {
		assert.True(t, fsys.synced[d], "%s holds a new name that is not fsynced", d)
	}
	got, err := ms.load()
	require.NoError(t, err)
	assert.Equal(t, m, got[rel])
}
