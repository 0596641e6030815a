package upload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/storage"
)

// Layout of the uploader's state under the system folder: a manifest per
// partition (uploads/partitions/<db>/<table>/date=D/hour=H.json) and the
// cutoff of the last compaction run (uploads/compacted.json).
const (
	stateDirName      = "uploads"
	manifestsDirName  = "partitions"
	compactedFileName = "compacted.json"
	manifestExt       = ".json"
)

// manifest is what the bucket holds of one partition.
type manifest struct {
	Partition string `json:"partition"`
	// Objects are the partition's files verified in the bucket.
	Objects []object `json:"objects,omitempty"`
	// Pending are multipart uploads begun and not yet completed: a crash
	// leaves them to abort on the next start.
	Pending []pending `json:"pending,omitempty"`
	// Dropping is set before the local partition is deleted: on a restart
	// it tells a drop that happened from files that arrived since.
	Dropping bool `json:"dropping,omitempty"`
}

type object struct {
	File string `json:"file"`
	Key  string `json:"key"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

type pending struct {
	Key      string `json:"key"`
	UploadID string `json:"upload_id"`
}

func (m *manifest) object(file string) (object, bool) {
	for _, o := range m.Objects {
		if o.File == file {
			return o, true
		}
	}
	return object{}, false
}

// manifests reads and writes the manifest files.
type manifests struct {
	dir string // uploads/partitions
}

func (ms manifests) path(partition string) string {
	return filepath.Join(ms.dir, filepath.FromSlash(partition)+manifestExt)
}

// load reads every manifest.
func (ms manifests) load() (map[string]*manifest, error) {
	out := map[string]*manifest{}
	err := filepath.WalkDir(ms.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && path == ms.dir {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, manifestExt) {
			return nil // a temp file a crash left is rewritten with its manifest
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var m manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("decode upload manifest %s: %w", path, err)
		}
		if _, err := storage.ParsePartition(m.Partition); err != nil || ms.path(m.Partition) != path {
			return fmt.Errorf("upload manifest %s names partition %q", path, m.Partition)
		}
		out[m.Partition] = &m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read upload manifests: %w", err)
	}
	return out, nil
}

// save writes a manifest durably; one without objects or uploads is
// removed instead.
func (ms manifests) save(m *manifest) error {
	p := ms.path(m.Partition)
	if len(m.Objects) == 0 && len(m.Pending) == 0 {
		return ms.remove(m.Partition)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create manifest dir: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := storage.WriteFileAtomic(p, data); err != nil {
		return fmt.Errorf("write upload manifest: %w", err)
	}
	return nil
}

// remove deletes a manifest durably.
func (ms manifests) remove(partition string) error {
	p := ms.path(partition)
	if err := os.Remove(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove upload manifest: %w", err)
	}
	if err := (storage.OSFS{}).SyncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("sync manifest dir: %w", err)
	}
	return nil
}

// compactedState is the cutoff of the last compaction run that succeeded.
type compactedState struct {
	Through time.Time `json:"through"`
}

func loadCompacted(path string) (time.Time, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s: %w", path, err)
	}
	var st compactedState
	if err := json.Unmarshal(data, &st); err != nil {
		return time.Time{}, fmt.Errorf("decode %s: %w", path, err)
	}
	return st.Through, nil
}

func saveCompacted(path string, t time.Time) error {
	data, err := json.Marshal(compactedState{Through: t})
	if err != nil {
		return err
	}
	return storage.WriteFileAtomic(path, data)
}
