package iceberg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/upload"
)

// tableID names a table by its folders: the database's and the table's.
type tableID struct{ db, table string }

func (id tableID) String() string { return strings.Join(id.ident(), ".") }

// ident is the table's name in the catalog: the database (namespace) and
// table names the folders store (storage.NameOfFolder: "disk io" for
// disk%20io). A measurement named like an OTLP table keeps its folder's
// name ("%74races"): the OTLP table has the name.
func (id tableID) ident() table.Identifier {
	db, err := storage.NameOfFolder(id.db)
	if err != nil {
		db = id.db
	}
	t, err := storage.NameOfFolder(id.table)
	if err != nil || t != id.table && storage.IsOTLPTable(t) {
		t = id.table
	}
	return table.Identifier{db, t}
}

// wanted is a file a table should hold.
type wanted struct {
	partition string // date=D/hour=H
	name      string
	local     string // the bytes on disk (the hive file)
	path      string // what the table calls it: a link's file:// URI, or the object's s3:// URI
	since     time.Time
}

// partition is one partition folder's files as one listing saw them.
type partition struct {
	rel   string // date=D/hour=H
	files []wanted
	// unstable: the listing overlapped a compaction's swap of the folder,
	// or a file vanished between the listing and its link: the table's
	// files of this partition stay as they are until the next pass lists
	// it again.
	unstable bool
}

// tableFiles is what one table should hold, by partition.
type tableFiles struct {
	id         tableID
	partitions map[string]*partition
}

func (t *tableFiles) partition(rel string) *partition {
	p := t.partitions[rel]
	if p == nil {
		p = &partition{rel: rel}
		t.partitions[rel] = p
	}
	return p
}

// sorted lists the partitions oldest hour first (names sort by date, and
// hours within a date are compared as numbers by ParsePartition's end).
func (t *tableFiles) sorted() []*partition {
	out := make([]*partition, 0, len(t.partitions))
	for _, p := range t.partitions {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *partition) int { return strings.Compare(a.rel, b.rel) })
	return out
}

type tables map[tableID]*tableFiles

func (ts tables) table(id tableID) *tableFiles {
	t := ts[id]
	if t == nil {
		t = &tableFiles{id: id, partitions: map[string]*partition{}}
		ts[id] = t
	}
	return t
}

// splitRel splits <db>/<table>/date=D/hour=H.
func splitRel(rel string) (tableID, string, error) {
	if _, err := storage.ParsePartition(rel); err != nil {
		return tableID{}, "", err
	}
	parts := strings.SplitN(rel, "/", 3)
	return tableID{parts[0], parts[1]}, parts[2], nil
}

// partitionOf is the date=D/hour=H of a file path or URI.
func partitionOf(p string) string {
	dir := path.Dir(filepath.ToSlash(p))
	return path.Base(path.Dir(dir)) + "/" + path.Base(dir)
}

// listLocal lists every Parquet file of the hive tree under dataDir, by
// table and partition. Folders that vanish while it lists (retention) are
// skipped: their files are not wanted any more. A partition whose listing
// overlapped a compaction's swap is unstable: its table's files stay as
// they are until a pass lists it whole.
func listLocal(fsys layout.DirReader, dataDir string) (tables, error) {
	out := tables{}
	err := layout.Walk(fsys, dataDir, func(p layout.Partition) error {
		entries, settled, err := layout.ReadDirSettled(fsys, p.Dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list partition: %w", err)
		}
		rel := strings.SplitN(p.Rel, "/", 3)[2]
		var files []wanted
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".parquet") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				settled = false // swapped away since the listing
				break
			}
			files = append(files, wanted{partition: rel, name: e.Name(), local: filepath.Join(p.Dir, e.Name()), since: info.ModTime()})
		}
		switch {
		case !settled:
			out.table(tableID{p.Database, p.Table}).partition(rel).unstable = true
		case len(files) > 0:
			out.table(tableID{p.Database, p.Table}).partition(rel).files = files
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listStored lists the objects the uploader verified in the bucket whose
// local file is still there (an object whose file a compaction replaced is
// on its way out: the uploader settles it with Settle before deleting it).
func listStored(dataDir, bucket string) (tables, error) {
	stored, err := upload.Stored(dataDir)
	if err != nil {
		return nil, err
	}
	out := tables{}
	for rel, objs := range stored {
		id, prel, err := splitRel(rel)
		if err != nil {
			continue
		}
		var files []wanted
		for _, o := range objs {
			local := filepath.Join(dataDir, filepath.FromSlash(rel), o.File)
			info, err := os.Stat(local)
			if err != nil || info.Size() != o.Size {
				continue
			}
			files = append(files, wanted{partition: prel, name: o.File, local: local, path: objectURI(bucket, o.Key), since: info.ModTime()})
		}
		if len(files) > 0 {
			out.table(id).partition(prel).files = files
		}
	}
	return out, nil
}

func objectURI(bucket, key string) string { return "s3://" + bucket + "/" + key }
