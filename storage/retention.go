package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// Retention maps "database/table" patterns to how long partitions are
// kept; "*" matches any database or table. The most specific pattern wins:
// db/table, then db/*, then */table, then */*.
type Retention map[string]time.Duration

// ErrBadRetention reports an unparsable retention setting.
var ErrBadRetention = errors.New("retention must be a list of [database/table=]duration, e.g. 720h or default/traces=168h,*/*=720h")

// ParseRetention reads "720h" (everything) or a comma-separated list of
// pattern=duration.
func ParseRetention(s string) (Retention, error) {
	r := Retention{}
	if strings.TrimSpace(s) == "" {
		return r, nil
	}
	for _, item := range strings.Split(s, ",") {
		pattern, age, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			pattern, age = "*/*", pattern
		}
		db, table, ok := strings.Cut(pattern, "/")
		if !ok || db == "" || table == "" {
			return nil, fmt.Errorf("%w: pattern %q", ErrBadRetention, pattern)
		}
		d, err := time.ParseDuration(age)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("%w: duration %q", ErrBadRetention, age)
		}
		r[db+"/"+table] = d
	}
	return r, nil
}

// For returns the retention of a table, if any pattern covers it.
func (r Retention) For(database, table string) (time.Duration, bool) {
	for _, k := range []string{database + "/" + table, database + "/*", "*/" + table, "*/*"} {
		if d, ok := r[k]; ok {
			return d, true
		}
	}
	return 0, false
}

// trashDirName holds partitions on their way out (layout.TrashDirName).
const trashDirName = layout.TrashDirName

// treeGuard is the store's guard as retention sees it: Maint then Tree,
// and no change while a flush is half published.
type treeGuard interface {
	Maint() sync.Locker
	Tree() sync.Locker
	Unfinished() error
}

// retention retires partitions: those past their table's retention
// (apply) and those the uploader has verified in the bucket (drop). It
// owns trash/ and dropped/ in the system folder. It deletes only by a
// rename out of the readers' sight first (into the trash, or a drop's
// tombstone), only with the guard's Maint then Tree held and no flush
// half published, and it keeps no copy of the flusher's folders: it
// tells the flusher (forget) which folder is gone.
type retention struct {
	fs          FS
	dir, sysDir string
	log         *slog.Logger
	guard       treeGuard
	forget      func(dir string) // the flusher forgets a folder it made
	retired     func(n int)      // Observer.Retired
}

// recover deletes what a crash left in the trash.
func (rt *retention) recover() error {
	return layout.EmptyTrash(rt.fs, filepath.Join(rt.sysDir, trashDirName))
}

func (rt *retention) apply(now time.Time, r Retention) (int, error) {
	if len(r) == 0 {
		return 0, nil
	}
	g := rt.guard
	g.Maint().Lock()
	defer g.Maint().Unlock()
	g.Tree().Lock()
	defer g.Tree().Unlock()
	if err := g.Unfinished(); err != nil {
		return 0, err
	}
	trash := filepath.Join(rt.sysDir, trashDirName)
	if err := layout.EmptyTrash(rt.fs, trash); err != nil {
		return 0, err
	}
	if err := rt.fs.MkdirAll(trash, 0o755); err != nil {
		return 0, fmt.Errorf("create trash dir: %w", err)
	}
	removed := 0
	// A partition that cannot be retired does not keep the others: they
	// would stay on disk behind it for good. Its error is returned.
	var failed []error
	err := layout.Tables(rt.fs, rt.dir, func(db, table, dir string) error {
		keep, ok := r.For(db, table)
		if !ok {
			return nil
		}
		parts, err := layout.TablePartitions(rt.fs, dir)
		if err != nil {
			return err
		}
		for _, p := range parts {
			if p.End.After(now.Add(-keep)) {
				continue
			}
			retired := false
			if err := layout.Discard(rt.fs, p.Dir, trash, func() { rt.forget(p.Dir); retired = true }); err != nil {
				failed = append(failed, err)
			}
			if retired {
				removed++
			}
		}
		return nil
	})
	if removed > 0 {
		rt.log.Info("retention deleted partitions", "partitions", removed)
		rt.retired(removed)
	}
	return removed, errors.Join(append(failed, err)...)
}
