package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
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
var ErrBadPartition = errors.New("partition must be <database>/<table>/date=YYYY-MM-DD/hour=H")

// ParsePartition checks a partition's path relative to the data directory
// and returns when its hour ends.
func ParsePartition(rel string) (end time.Time, err error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 4 || CheckName("database", parts[0]) != nil || CheckName("table", parts[1]) != nil {
		return end, fmt.Errorf("%w: %q", ErrBadPartition, rel)
	}
	day, ok1 := strings.CutPrefix(parts[2], "date=")
	hs, ok2 := strings.CutPrefix(parts[3], "hour=")
	date, err1 := time.Parse(time.DateOnly, day)
	hour, err2 := strconv.Atoi(hs)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || hour < 0 || hour > 23 || strconv.Itoa(hour) != hs {
		return end, fmt.Errorf("%w: %q", ErrBadPartition, rel)
	}
	return date.Add(time.Duration(hour+1) * time.Hour), nil
}

// DropPartition deletes the partition at rel (relative to the data
// directory) if its Parquet files are exactly files, and says whether it
// did. The uploader calls it once every file is verified in the bucket. Like
// retention it holds the compaction and flush locks, so it never races a
// compaction's swap or a flush's publish, and a file published since the
// caller listed the partition keeps it (the caller has not copied that
// file yet).
func (s *Store) DropPartition(rel string, files []string) (bool, error) {
	if _, err := ParsePartition(rel); err != nil {
		return false, err
	}
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if err := s.publishUnfinished(); err != nil {
		return false, err
	}
	dir := filepath.Join(s.dir, rel)
	have, err := s.parquetFiles(dir)
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
	trash := filepath.Join(s.sysDir, trashDirName)
	if err := s.fs.MkdirAll(trash, 0o755); err != nil {
		return false, fmt.Errorf("create trash dir: %w", err)
	}
	if err := s.discard(dir, trash); err != nil {
		return false, err
	}
	return true, nil
}
