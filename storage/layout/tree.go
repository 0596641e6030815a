package layout

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Layout of the data directory. Directories the sidecar keeps for itself
// start with an underscore, which Hive-style readers (Spark, DuckDB's
// hive_partitioning, pyarrow) skip.
const (
	// SystemDirName is the sidecar's own folder beside the databases.
	SystemDirName = "_arcstore"
	// Folders under SystemDirName.
	WALDirName     = "wal"
	TmpDirName     = "tmp"
	CompactDirName = "compact"
	SinksDirName   = "sinks"
	// TrashDirName holds partitions on their way out: a partition is
	// renamed there (one atomic step: readers see it whole or not at all)
	// and then deleted.
	TrashDirName = "trash"
	// DroppedDirName holds a tombstone per drop the caller has not
	// forgotten: the partition's own folder, renamed there and emptied.
	DroppedDirName = "dropped"
	ParquetExt     = ".parquet"
)

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
	end, ok := hourEnd(parts[2], parts[3])
	if !ok {
		return end, fmt.Errorf("%w: %q", ErrBadPartition, rel)
	}
	return end, nil
}

// hourEnd is when the hour of the folders date=YYYY-MM-DD/hour=H ends; ok
// is false for any other names (hour=05 included: the store writes hours
// unpadded, so a padded one is not its folder).
func hourEnd(dateName, hourName string) (end time.Time, ok bool) {
	day, ok1 := strings.CutPrefix(dateName, "date=")
	hs, ok2 := strings.CutPrefix(hourName, "hour=")
	date, err1 := time.Parse(time.DateOnly, day)
	hour, err2 := strconv.Atoi(hs)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || hour < 0 || hour > 23 || strconv.Itoa(hour) != hs {
		return end, false
	}
	return date.Add(time.Duration(hour+1) * time.Hour), true
}

// PartitionDir is a partition folder and when its hour ends.
type PartitionDir struct {
	Dir string
	End time.Time
}

// Tables calls fn with every table folder of every database folder under
// dataDir (folders only, databases by CheckName), in directory order. It
// is the tree as the store's maintenance walks it, holding the locks that
// keep it still: a folder that cannot be listed is an error.
func Tables(fsys DirReader, dataDir string, fn func(database, table, dir string) error) error {
	dbs, err := fsys.ReadDir(dataDir)
	if err != nil {
		return fmt.Errorf("list data dir: %w", err)
	}
	for _, db := range dbs {
		if !db.IsDir() || CheckName("database", db.Name()) != nil {
			continue
		}
		tables, err := fsys.ReadDir(filepath.Join(dataDir, db.Name()))
		if err != nil {
			return fmt.Errorf("list database: %w", err)
		}
		for _, t := range tables {
			if !t.IsDir() {
				continue
			}
			if err := fn(db.Name(), t.Name(), filepath.Join(dataDir, db.Name(), t.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// TablePartitions lists date=YYYY-MM-DD/hour=H folders of a table.
func TablePartitions(fsys DirReader, table string) ([]PartitionDir, error) {
	var out []PartitionDir
	dates, err := fsys.ReadDir(table)
	if err != nil {
		return nil, fmt.Errorf("list table: %w", err)
	}
	for _, d := range dates {
		if _, ok := hourEnd(d.Name(), "hour=0"); !d.IsDir() || !ok {
			continue
		}
		hours, err := fsys.ReadDir(filepath.Join(table, d.Name()))
		if err != nil {
			return nil, fmt.Errorf("list date: %w", err)
		}
		for _, h := range hours {
			end, ok := hourEnd(d.Name(), h.Name())
			if !h.IsDir() || !ok {
				continue
			}
			out = append(out, PartitionDir{Dir: filepath.Join(table, d.Name(), h.Name()), End: end})
		}
	}
	return out, nil
}

// ParquetFiles lists the Parquet files of a folder, by name.
func ParquetFiles(fsys DirReader, dir string) ([]string, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list partition: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ParquetExt) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// Discard retires the partition folder dir: one rename into trash takes
// it out of every reader's sight, made durable, then it is deleted.
// retired runs once it is out of sight, before the delete.
func Discard(fsys FS, dir, trash string, retired func()) error {
	var r [6]byte
	_, _ = rand.Read(r[:])
	gone := filepath.Join(trash, hex.EncodeToString(r[:]))
	if err := fsys.Rename(dir, gone); err != nil {
		return fmt.Errorf("retire partition %s: %w", dir, err)
	}
	if err := fsys.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("sync after retiring a partition: %w", err)
	}
	retired()
	if err := fsys.RemoveAll(gone); err != nil {
		return fmt.Errorf("delete retired partition: %w", err)
	}
	return nil
}

// EmptyTrash deletes what a crash (or a failed delete) left in the trash
// folder: partitions already out of every reader's sight, still holding
// their space.
func EmptyTrash(fsys FS, trash string) error {
	entries, err := fsys.ReadDir(trash)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list trash dir: %w", err)
	}
	for _, e := range entries {
		if err := fsys.RemoveAll(filepath.Join(trash, e.Name())); err != nil {
			return fmt.Errorf("delete retired partition: %w", err)
		}
	}
	return nil
}

// ReadDirSettled lists dir and says whether the listing is of one folder:
// it lists dir again and compares the names. A compaction replaces a
// partition's folder by an exchange and then empties the old one, so a
// listing that overlaps the swap may show part of the old files, or none,
// and not the merged one; the second listing then differs (the merged
// file's name is new).
func ReadDirSettled(fsys DirReader, dir string) (entries []os.DirEntry, settled bool, err error) {
	entries, err = fsys.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	again, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	same := slices.EqualFunc(entries, again, func(a, b os.DirEntry) bool { return a.Name() == b.Name() })
	return entries, same, nil
}
