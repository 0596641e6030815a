package upload

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/storage"
)

// localPartition is a partition folder and its Parquet files.
type localPartition struct {
	rel   string // <db>/<table>/date=D/hour=H, slash-separated
	end   time.Time
	files []localFile // by name
}

type localFile struct {
	name string
	size int64
}

func (p *localPartition) file(name string) (localFile, bool) {
	for _, f := range p.files {
		if f.name == name {
			return f, true
		}
	}
	return localFile{}, false
}

func (p *localPartition) names() []string {
	out := make([]string, len(p.files))
	for i, f := range p.files {
		out[i] = f.name
	}
	return out
}

// listPartitions lists every partition folder under dataDir, oldest hour
// first. Folders that vanish while it lists (retention, a compaction's
// swap leaves the path in place) are skipped.
func listPartitions(dataDir string) ([]*localPartition, error) {
	var out []*localPartition
	dbs, err := readDirs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("list data dir: %w", err)
	}
	for _, db := range dbs {
		if storage.CheckName("database", db) != nil {
			continue
		}
		tables, err := readDirs(filepath.Join(dataDir, db))
		if err != nil {
			return nil, fmt.Errorf("list database: %w", err)
		}
		for _, t := range tables {
			if storage.CheckName("table", t) != nil {
				continue
			}
			dates, err := readDirs(filepath.Join(dataDir, db, t))
			if err != nil {
				return nil, fmt.Errorf("list table: %w", err)
			}
			for _, d := range dates {
				hours, err := readDirs(filepath.Join(dataDir, db, t, d))
				if err != nil {
					return nil, fmt.Errorf("list date: %w", err)
				}
				for _, h := range hours {
					rel := path.Join(db, t, d, h)
					end, err := storage.ParsePartition(rel)
					if err != nil {
						continue
					}
					files, err := parquetFiles(filepath.Join(dataDir, filepath.FromSlash(rel)))
					if err != nil {
						return nil, err
					}
					out = append(out, &localPartition{rel: rel, end: end, files: files})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *localPartition) int { return a.end.Compare(b.end) })
	return out, nil
}

// readDirs lists the subdirectories of dir; a dir that is gone has none.
func readDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
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

func parquetFiles(dir string) ([]localFile, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list partition: %w", err)
	}
	var out []localFile
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // swapped away since the listing
		}
		out = append(out, localFile{name: e.Name(), size: info.Size()})
	}
	return out, nil
}

// compacted says whether a partition holds one file per schema, so that
// compaction would leave it as it is. Compaction groups files by schema
// the same way.
func compacted(dir string, files []localFile) (bool, error) {
	if len(files) < 2 {
		return true, nil
	}
	seen := map[string]bool{}
	for _, f := range files {
		key, err := schemaOf(filepath.Join(dir, f.name))
		if err != nil {
			return false, err
		}
		if seen[key] {
			return false, nil
		}
		seen[key] = true
	}
	return true, nil
}

func schemaOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	return pf.Schema().String(), nil
}
