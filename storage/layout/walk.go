package layout

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"
)

// Partition is a partition folder of the hive tree.
type Partition struct {
	Database, Table string    // their folders
	Rel             string    // <database>/<table>/date=D/hour=H, slash-separated
	Dir             string    // the folder's path
	End             time.Time // when its hour ends
}

// Walk calls fn with every partition folder under dataDir whose path
// ParsePartition takes, in directory order. The tree is read while others
// change it, so a folder that vanishes while it lists (retention, a drop)
// has no partitions, and what is not the sidecar's (files, folders of
// other names) is skipped.
func Walk(fsys DirReader, dataDir string, fn func(Partition) error) error {
	dbs, err := Subdirs(fsys, dataDir)
	if err != nil {
		return fmt.Errorf("list data dir: %w", err)
	}
	for _, db := range dbs {
		if CheckName("database", db) != nil {
			continue
		}
		tables, err := Subdirs(fsys, filepath.Join(dataDir, db))
		if err != nil {
			return fmt.Errorf("list database: %w", err)
		}
		for _, t := range tables {
			if CheckName("table", t) != nil {
				continue
			}
			dates, err := Subdirs(fsys, filepath.Join(dataDir, db, t))
			if err != nil {
				return fmt.Errorf("list table: %w", err)
			}
			for _, d := range dates {
				hours, err := Subdirs(fsys, filepath.Join(dataDir, db, t, d))
				if err != nil {
					return fmt.Errorf("list date: %w", err)
				}
				for _, h := range hours {
					rel := path.Join(db, t, d, h)
					end, err := ParsePartition(rel)
					if err != nil {
						continue
					}
					p := Partition{Database: db, Table: t, Rel: rel, Dir: filepath.Join(dataDir, db, t, d, h), End: end}
					if err := fn(p); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// Subdirs lists the folders in dir; a dir that is gone has none.
func Subdirs(fsys DirReader, dir string) ([]string, error) {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
