package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/apache/iceberg-go/table"
)

// orphanEvery is how often a table's folder is searched for metadata
// files no snapshot references (a commit cut off by a crash leaves its
// manifests behind).
const orphanEvery = time.Hour

// upkeep expires a table's old snapshots, which deletes the files only
// they referenced (locally the links of replaced files: their space is
// freed then), and now and then removes orphaned metadata.
func (c *Committer) upkeep(ctx context.Context, id tableID, tbl *table.Table) error {
	if c.expirable(tbl) {
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithOlderThan(c.cfg.SnapshotRetention), table.WithRetainLast(c.cfg.KeepSnapshots)); err != nil {
			return fmt.Errorf("expire snapshots: %w", err)
		}
		next, err := txn.Commit(ctx)
		if next != nil && onlyMissing(err) {
			// Committed; the files it deleted afterwards were gone already:
			// an earlier expiry deleted those a later snapshot still
			// listed as removed.
			err = nil
		}
		if err != nil {
			return c.counted(ctx, tbl, fmt.Errorf("commit expired snapshots: %w", err))
		}
		c.metrics.commits.WithLabelValues(resultOK).Inc()
		tbl = next
		if err := c.step("expired"); err != nil {
			return err
		}
	}
	if last, ok := c.cleaned[id]; ok && c.now().Sub(last) < orphanEvery {
		return nil
	}
	res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(c.cfg.OrphanAge))
	if err != nil {
		return fmt.Errorf("remove orphaned files: %w", err)
	}
	c.cleaned[id] = c.now()
	if n := len(res.DeletedFiles); n > 0 {
		c.log.Info("removed orphaned Iceberg files", "table", id.String(), "files", n)
	}
	return nil
}

// expirable says whether a table has snapshots past the retention beyond
// the last KeepSnapshots: without it no commit is made.
func (c *Committer) expirable(tbl *table.Table) bool {
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) <= c.cfg.KeepSnapshots {
		return false
	}
	// Snapshots carry the wall clock's time, which ExpireSnapshots
	// compares with.
	cutoff := time.Now().Add(-c.cfg.SnapshotRetention).UnixMilli()
	for _, s := range snaps {
		if s.TimestampMs < cutoff {
			return true
		}
	}
	return false
}

// onlyMissing says whether err is nil or made only of "file does not
// exist" errors.
func onlyMissing(err error) bool {
	if err == nil {
		return true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyMissing(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, fs.ErrNotExist)
}
