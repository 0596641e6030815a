package upload

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// localPartition is a partition folder and its Parquet files.
type localPartition struct {
	rel   string // <db>/<table>/date=D/hour=H, slash-separated
	end   time.Time
	files []localFile // by name
	// unsettled: the listing overlapped a change of the folder (a
	// compaction's swap, a flush) and has no files; the next pass lists
	// it again.
	unsettled bool
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
func listPartitions(fsys layout.DirReader, dataDir string) ([]*localPartition, error) {
	var out []*localPartition
	err := layout.Walk(fsys, dataDir, func(p layout.Partition) error {
		files, settled, err := parquetFiles(fsys, p.Dir)
		if err != nil {
			return err
		}
		out = append(out, &localPartition{rel: p.Rel, end: p.End, files: files, unsettled: !settled})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b *localPartition) int { return a.end.Compare(b.end) })
	return out, nil
}

// parquetFiles lists a partition's files, none if the listing was not of
// one folder (layout.ReadDirSettled): a listing of part of the files
// would take the others' objects for replaced.
func parquetFiles(fsys layout.DirReader, dir string) ([]localFile, bool, error) {
	entries, settled, err := layout.ReadDirSettled(fsys, dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("list partition: %w", err)
	}
	var out []localFile
	for _, e := range entries {
		if !settled {
			break
		}
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".parquet") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			settled = false // swapped away since the listing
			break
		}
		out = append(out, localFile{name: e.Name(), size: info.Size()})
	}
	if !settled {
		return nil, false, nil
	}
	return out, true, nil
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
