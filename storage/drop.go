package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// What components outside the store (the object-storage uploader) may see
// and do in the partition tree.

// DataDir is the directory the store writes partitions under.
func (s *Store) DataDir() string { return s.dir }

// SystemDir is the folder of the sidecar's own files in a data directory
// (Hive-style readers skip it).
func SystemDir(dataDir string) string { return filepath.Join(dataDir, systemDirName) }

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old content or the new: temp file, fsync, rename, fsync the directory.
func WriteFileAtomic(path string, data []byte) error { return writeFileAtomic(OSFS{}, path, data) }

// ErrBadPartition reports a partition path that is not
// <database>/<table>/date=YYYY-MM-DD/hour=H.
var ErrBadPartition = layout.ErrBadPartition

// ParsePartition checks a partition's path relative to the data directory
// and returns when its hour ends.
func ParsePartition(rel string) (end time.Time, err error) { return layout.ParsePartition(rel) }

// droppedDirName holds a tombstone per drop the caller has not forgotten
// (layout.DroppedDirName).
const droppedDirName = layout.DroppedDirName

// ErrBadDropToken reports a drop token that is not a plain name.
var ErrBadDropToken = errors.New("drop token must be 1-64 letters, digits or dashes")

func checkDropToken(token string) error {
	ok := len(token) > 0 && len(token) <= 64
	for _, c := range token {
		ok = ok && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-')
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrBadDropToken, token)
	}
	return nil
}

// DropPartition deletes the partition at rel (relative to the data
// directory) if its Parquet files are exactly files, and says whether it
// did. The uploader calls it once every file is verified in the bucket. Like
// retention it holds the compaction and flush locks, so it never races a
// compaction's swap or a flush's publish, and a file published since the
// caller listed the partition keeps it (the caller has not copied that
// file yet).
//
// The partition's folder leaves the readers' sight by one rename, to a
// tombstone named token, which stays (emptied) until ForgetDrop: after a
// crash Drops tells a drop that happened from one that did not, whatever
// was flushed into or compacted in the partition since. Nothing else can:
// a partition that was dropped and got late rows, and one that was not
// and was compacted, both lack the files the drop was asked for.
func (s *Store) DropPartition(rel string, files []string, token string) (bool, error) {
	return s.retention.drop(rel, files, token)
}

func (rt *retention) drop(rel string, files []string, token string) (bool, error) {
	if _, err := ParsePartition(rel); err != nil {
		return false, err
	}
	if err := checkDropToken(token); err != nil {
		return false, err
	}
	g := rt.guard
	g.Maint().Lock()
	defer g.Maint().Unlock()
	g.Tree().Lock()
	defer g.Tree().Unlock()
	if err := g.Unfinished(); err != nil {
		return false, err
	}
	dir := filepath.Join(rt.dir, rel)
	have, err := layout.ParquetFiles(rt.fs, dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	want := slices.Clone(files)
	slices.Sort(want)
	if !slices.Equal(have, want) {
		return false, nil
	}
	dropped := filepath.Join(rt.sysDir, droppedDirName)
	// Durable before the tombstone goes in: it is what tells a drop
	// that happened after a crash.
	if err := layout.MkdirDurable(rt.fs, dropped); err != nil {
		return false, fmt.Errorf("create dropped dir: %w", err)
	}
	tomb := filepath.Join(dropped, token)
	if err := rt.fs.RenameNoReplace(dir, tomb); err != nil {
		return false, fmt.Errorf("drop partition %s: %w", rel, err)
	}
	for _, d := range []string{filepath.Dir(dir), dropped} {
		if err := rt.fs.SyncDir(d); err != nil {
			return true, fmt.Errorf("sync after dropping a partition: %w", err)
		}
	}
	rt.forget(dir)
	// The tombstone is the folder itself: empty it, keep it.
	entries, err := rt.fs.ReadDir(tomb)
	if err != nil {
		return true, fmt.Errorf("list dropped partition: %w", err)
	}
	for _, e := range entries {
		if err := rt.fs.RemoveAll(filepath.Join(tomb, e.Name())); err != nil {
			return true, fmt.Errorf("delete dropped partition: %w", err)
		}
	}
	return true, nil
}

// Drops lists the tokens of the drops DropPartition did and ForgetDrop has
// not yet forgotten.
func (s *Store) Drops() ([]string, error) { return s.retention.drops() }

func (rt *retention) drops() ([]string, error) {
	entries, err := rt.fs.ReadDir(filepath.Join(rt.sysDir, droppedDirName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list dropped partitions: %w", err)
	}
	var out []string
	for _, e := range entries {
		if checkDropToken(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// ForgetDrop removes a drop's tombstone (and whatever a crash left in it);
// a token that is not there is not an error.
func (s *Store) ForgetDrop(token string) error { return s.retention.forgetDrop(token) }

func (rt *retention) forgetDrop(token string) error {
	if err := checkDropToken(token); err != nil {
		return err
	}
	dropped := filepath.Join(rt.sysDir, droppedDirName)
	if err := rt.fs.RemoveAll(filepath.Join(dropped, token)); err != nil {
		return fmt.Errorf("forget dropped partition: %w", err)
	}
	if err := rt.fs.SyncDir(dropped); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sync dropped dir: %w", err)
	}
	return nil
}
