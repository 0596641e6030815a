package iceberg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/layout"
)

// A local table does not reference the hive files by their own paths:
// compaction replaces a partition folder whole (one rename exchanges it
// with a staging folder), so no moment has both the old files and the
// merged one at their paths, and a table pointing there would point at
// missing files from the exchange to its next commit. Each data file is
// instead a hard link under the table's folder,
// _arcstore/iceberg/<db>/<table>/data/date=D/hour=H/<file>: the same bytes
// (no copy), at a path only the committer removes. Compaction and
// retention then go on as before, and the replaced rows stay readable
// through the table until the commit that swaps them out and the
// snapshots that still list them expire (ExpireSnapshots deletes the
// links; the disk space is freed then).

// errVanished: the hive file went away before it was linked.
var errVanished = errors.New("file vanished before it was linked")

// linkPath is where a local table's link to a hive file lives.
func (c *Committer) linkPath(id tableID, f wanted) string {
	return filepath.Join(c.tableDir(id), dataDirName, filepath.FromSlash(f.partition), f.name)
}

// tableDir is a local table's location: metadata/ and data/.
func (c *Committer) tableDir(id tableID) string {
	return filepath.Join(Dir(c.cfg.DataDir), id.db, id.table)
}

// link makes dst a hard link to src. A link already there from an
// earlier pass is kept if it is the same file. The folders it makes for
// dst are durable in their parents (the commit names the link; syncDirs
// makes the link's own name durable).
func link(fsys layout.FS, src, dst string) error {
	if err := layout.MkdirDurable(fsys, filepath.Dir(dst)); err != nil {
		return fmt.Errorf("create link dir: %w", err)
	}
	err := os.Link(src, dst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		if _, serr := os.Stat(src); errors.Is(serr, fs.ErrNotExist) {
			return errVanished
		}
		return fmt.Errorf("link %s: %w", src, err)
	case errors.Is(err, fs.ErrExist):
		a, err1 := os.Stat(src)
		b, err2 := os.Stat(dst)
		if errors.Is(err1, fs.ErrNotExist) {
			return errVanished
		}
		if err1 != nil || err2 != nil {
			return fmt.Errorf("check link %s: %w", dst, errors.Join(err1, err2))
		}
		if !os.SameFile(a, b) {
			return fmt.Errorf("link %s exists and is another file than %s", dst, src)
		}
		return nil
	default:
		return fmt.Errorf("link %s: %w", src, err)
	}
}

// syncDirs makes new links durable before a commit names them.
func syncDirs(dirs map[string]bool) error {
	for d := range dirs {
		if err := (storage.OSFS{}).SyncDir(d); err != nil {
			return fmt.Errorf("sync link dir: %w", err)
		}
	}
	return nil
}
