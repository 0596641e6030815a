package storage

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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

// ApplyRetention deletes every partition whose hour ended longer ago than
// its table's retention, and returns how many it deleted. It runs under the
// compaction and flush locks, so it never races a compaction's swap or a
// flush's publish.
func (s *Store) ApplyRetention(now time.Time, r Retention) (int, error) {
	if len(r) == 0 {
		return 0, nil
	}
	g := guard{s}
	g.Maint().Lock()
	defer g.Maint().Unlock()
	g.Tree().Lock()
	defer g.Tree().Unlock()
	if err := g.Unfinished(); err != nil {
		return 0, err
	}
	trash := filepath.Join(s.sysDir, trashDirName)
	if err := layout.EmptyTrash(s.fs, trash); err != nil {
		return 0, err
	}
	if err := s.fs.MkdirAll(trash, 0o755); err != nil {
		return 0, fmt.Errorf("create trash dir: %w", err)
	}
	dbs, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return 0, fmt.Errorf("list data dir: %w", err)
	}
	removed := 0
	for _, db := range dbs {
		if !db.IsDir() || CheckName("database", db.Name()) != nil {
			continue
		}
		tbls, err := s.fs.ReadDir(filepath.Join(s.dir, db.Name()))
		if err != nil {
			return removed, fmt.Errorf("list database: %w", err)
		}
		for _, t := range tbls {
			keep, ok := r.For(db.Name(), t.Name())
			if !ok || !t.IsDir() {
				continue
			}
			parts, err := layout.TablePartitions(s.fs, filepath.Join(s.dir, db.Name(), t.Name()))
			if err != nil {
				return removed, err
			}
			for _, p := range parts {
				if p.End.After(now.Add(-keep)) {
					continue
				}
				if err := layout.Discard(s.fs, p.Dir, trash, func() { s.flusher.forgetDir(p.Dir) }); err != nil {
					return removed, err
				}
				removed++
			}
		}
	}
	if removed > 0 {
		s.log.Info("retention deleted partitions", "partitions", removed)
		s.opts.Observer.Retired(removed)
	}
	return removed, nil
}
