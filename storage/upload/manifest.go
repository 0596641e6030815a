package upload

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/layout"
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
	// Pending are uploads begun and not recorded in Objects: each may have
	// left an object (a PutObject or CompleteMultipartUpload the server
	// finished after a crash or a timeout cut the uploader off) and, if
	// multipart, parts. The next pass aborts a multipart upload at once; the
	// entry itself stays until its file is uploaded and recorded, or, if a
	// compaction replaced the file meanwhile, its object is deleted.
	Pending []pending `json:"pending,omitempty"`
	// Drop is the store's token of the local deletion under way, set before
	// the store is asked to delete the partition: on a restart the store's
	// tombstones say whether that deletion happened. Dropping is set with
	// it (a sidecar before Drop existed reads only Dropping) and, alone, is
	// what such a sidecar left.
	Drop     string `json:"drop,omitempty"`
	Dropping bool   `json:"dropping,omitempty"`
}

type object struct {
	File string `json:"file"`
	Key  string `json:"key"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

type pending struct {
	Key string `json:"key"`
	// UploadID is the multipart upload to abort; empty once aborted, and
	// for a PutObject.
	UploadID string `json:"upload_id,omitempty"`
}

// file is the name of the local file a pending upload copies: a key ends
// with it.
func (p pending) file() string { return path.Base(p.Key) }

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
	dir string     // uploads/partitions
	fs  storage.FS // nil: the real file system
}

func (ms manifests) fsys() storage.FS {
	if ms.fs == nil {
		return storage.OSFS{}
	}
	return ms.fs
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
	// A manifest records an upload before its first request: it must not
	// be lost with a folder whose name is not durable.
	if err := layout.MkdirDurable(ms.fsys(), filepath.Dir(p)); err != nil {
		return fmt.Errorf("create manifest dir: %w", err)
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := layout.WriteFileAtomic(ms.fsys(), p, data); err != nil {
		return fmt.Errorf("write upload manifest: %w", err)
	}
	return nil
}

// remove deletes a manifest durably.
func (ms manifests) remove(partition string) error {
	p := ms.path(partition)
	if err := ms.fsys().Remove(p); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove upload manifest: %w", err)
	}
	if err := ms.fsys().SyncDir(filepath.Dir(p)); err != nil {
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
