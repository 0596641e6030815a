package upload

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/arc-otel/arc-otel/storage"
)

// Table is a table format kept over the bucket's objects (storage/iceberg
// registers them in Iceberg tables). The uploader settles a partition with
// it before it deletes anything a table may point at: before deleting the
// objects a compaction replaced, and before deleting a local partition
// (after which nothing here lists its objects any more). It deletes only
// once Settle returned nil; otherwise it keeps the object or partition and
// tries again on a later pass.
type Table interface {
	// Settle makes the tables hold every object of live and none of gone,
	// in one commit. partition is <db>/<table>/date=D/hour=H; the local
	// files of live are still on disk.
	Settle(ctx context.Context, partition string, live, gone []StoredFile) error
}

// StoredFile is a local Parquet file verified in the bucket under Key.
type StoredFile struct {
	File string // name in the local partition folder
	Key  string
	Size int64
}

func storedFiles(objects []object) []StoredFile {
	out := make([]StoredFile, len(objects))
	for i, o := range objects {
		out[i] = StoredFile{File: o.File, Key: o.Key, Size: o.Size}
	}
	return out
}

// Stored reads the uploader's manifests in dataDir: for each partition
// that has one, the objects verified in the bucket. A manifest is written
// atomically, so each partition's list is one the uploader recorded; it
// may name an object a compaction replaced locally and the uploader is
// about to delete (its local file is gone).
func Stored(dataDir string) (map[string][]StoredFile, error) {
	ms, err := manifests{dir: filepath.Join(storage.SystemDir(dataDir), stateDirName, manifestsDirName)}.load()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]StoredFile, len(ms))
	for rel, m := range ms {
		if len(m.Objects) > 0 {
			out[rel] = storedFiles(m.Objects)
		}
	}
	return out, nil
}

// settle asks the table to hold live and drop gone; without a table there
// is nothing to ask.
func (u *Uploader) settle(ctx context.Context, m *manifest, live, gone []object) error {
	if u.cfg.Table == nil {
		return nil
	}
	if err := u.cfg.Table.Settle(ctx, m.Partition, storedFiles(live), storedFiles(gone)); err != nil {
		return fmt.Errorf("%w: %w", errTableBehind, err)
	}
	return u.step("settled")
}

// split sorts a manifest's objects into those whose local file is still in
// the partition and those a compaction replaced.
func split(m *manifest, p *localPartition) (live, gone []object) {
	for _, o := range m.Objects {
		if _, ok := p.file(o.File); ok {
			live = append(live, o)
		} else {
			gone = append(gone, o)
		}
	}
	return live, slices.Clip(gone)
}
