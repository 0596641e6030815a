package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/upload"
)

// Committer keeps one Iceberg table per database and table in step with
// the Parquet files: it adds the files that exist and are not in their
// table, and (local warehouse) removes the table's files that no longer
// exist, in one commit per table. Every pass computes that difference
// afresh from what is on disk (or verified in the bucket) and what the
// table lists, so a pass cut off anywhere (kill -9) is completed by the
// next one: nothing is replayed, nothing added twice.
type Committer struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu      sync.Mutex // one pass or Settle at a time; guards the fields below
	cat     catalog.Catalog
	closeDB func() error
	refused map[string]string    // files no table takes, by table path; logged once
	files   map[tableID]int      // data files per table after the last pass
	seen    map[string]time.Time // bucket: when a pass first found an object not in its table
	lastOK  time.Time            // when a pass last completed (or the committer started)
	cleaned map[tableID]time.Time

	readyMu  sync.Mutex
	notReady error

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	now  func() time.Time
	hook func(step string) error // tests crash the committer here
	fs   layout.FS               // makes the folders of the catalog and the links
}

// New checks the settings. Start begins committing; Sync runs one pass.
func New(cfg Config) (*Committer, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("iceberg: data dir: %w", err)
	}
	cfg.DataDir = abs
	log := cfg.Logger.With("component", "iceberg")
	return &Committer{
		cfg: cfg, log: log, metrics: newMetrics(),
		refused: map[string]string{}, files: map[tableID]int{}, seen: map[string]time.Time{}, cleaned: map[tableID]time.Time{},
		wake: make(chan struct{}, 1), now: time.Now, lastOK: time.Now(), fs: layout.OSFS{},
	}, nil
}

// Start commits in the background, every CommitInterval, until Stop.
func (c *Committer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.done = cancel, make(chan struct{})
	go c.run(ctx)
}

// Stop ends the commits (one in flight is abandoned; the next start
// completes it) and closes the catalog.
func (c *Committer) Stop() {
	if c.cancel != nil {
		c.cancel()
		<-c.done
		c.cancel = nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeCatalog()
}

func (c *Committer) closeCatalog() {
	if cl, ok := c.cat.(interface{ Close() error }); ok {
		_ = cl.Close()
	}
	if c.closeDB != nil {
		_ = c.closeDB()
	}
	c.cat, c.closeDB = nil, nil
}

// jitter is d give or take a tenth.
func jitter(d time.Duration) time.Duration {
	return d - d/10 + time.Duration(rand.Int64N(int64(d/5)+1))
}

// Wake starts a pass now.
func (c *Committer) Wake() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Ready is nil unless the last pass could not reach the catalog or
// commit: then it is that error, for /ready.
func (c *Committer) Ready() error {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	return c.notReady
}

// readiness is what a pass's error says of the catalog: conflicts alone
// (another committer kept winning) are no readiness failure.
func readiness(err error) error {
	if err != nil && onlyMoved(err) {
		return nil
	}
	return err
}

func (c *Committer) setReady(err error) {
	c.readyMu.Lock()
	was := c.notReady
	c.notReady = err
	c.readyMu.Unlock()
	switch {
	case err != nil && was == nil:
		c.log.Error("Iceberg tables are behind: the catalog cannot be reached or refuses the commit; writes and flushes go on, the tables catch up when it is back", "catalog", c.catalogName(), "error", err)
	case err == nil && was != nil:
		c.log.Info("Iceberg tables are committing again", "catalog", c.catalogName())
	}
}

func (c *Committer) catalogName() string {
	if c.cfg.Catalog == "" {
		return CatalogPath(c.cfg.DataDir)
	}
	return redact(c.cfg.Catalog)
}

func (c *Committer) run(ctx context.Context) {
	defer close(c.done)
	for {
		if err := c.Sync(ctx); err != nil && ctx.Err() == nil {
			c.log.Debug("iceberg pass stopped; retried at the next", "error", err)
		}
		// Jittered: sidecars started together do not commit in step.
		t := time.NewTimer(jitter(c.cfg.CommitInterval))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Sync brings every table up to date with the files once.
func (c *Committer) Sync(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.sync(ctx)
	if ctx.Err() == nil {
		c.setReady(readiness(err))
	}
	return err
}

func (c *Committer) sync(ctx context.Context) error {
	ts, err := c.list()
	if err != nil {
		return err
	}
	c.forgetGone(ts)
	now := c.now()
	if err := c.connect(ctx); err != nil {
		// Unreachable: what arrived since the last pass that completed
		// waits.
		var oldest time.Time
		for _, t := range ts {
			for _, p := range t.partitions {
				if o := oldestSince(c.since(p.files, c.lastOK)); !o.IsZero() && (oldest.IsZero() || o.Before(oldest)) {
					oldest = o
				}
			}
		}
		c.setLag(now, oldest)
		return err
	}
	var oldest time.Time
	var errs []error
	ids := slices.SortedFunc(maps.Keys(ts), func(a, b tableID) int { return cmpID(a, b) })
	for _, id := range ids {
		var pending time.Time
		err := retryMoved(ctx, func() (err error) {
			pending, err = c.reconcile(ctx, ts[id])
			return err
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, fmt.Errorf("table %s: %w", id, err))
		}
		if !pending.IsZero() && (oldest.IsZero() || pending.Before(oldest)) {
			oldest = pending
		}
	}
	c.setLag(now, oldest)
	var n int
	for _, k := range c.files {
		n += k
	}
	c.metrics.files.Set(float64(n))
	c.metrics.refused.Set(float64(len(c.refused)))
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	c.lastOK = now
	c.metrics.lastCommitted.Set(float64(now.Unix()))
	return nil
}

// forgetGone drops what the committer remembers of files that are not
// there any more: refused files (so the gauge counts those that are) and
// when bucket objects were first seen.
func (c *Committer) forgetGone(ts tables) {
	there := map[string]bool{}
	for _, t := range ts {
		for _, p := range t.partitions {
			for _, f := range p.files {
				there[f.local] = true
				if f.path != "" {
					there[f.path] = true
				}
			}
		}
	}
	for k := range c.refused {
		if !there[k] {
			delete(c.refused, k)
		}
	}
	for k := range c.seen {
		if !there[k] {
			delete(c.seen, k)
		}
	}
}

// setLag sets the lag gauge: how long the oldest file missing from its
// table has waited.
func (c *Committer) setLag(now, oldest time.Time) {
	var lag float64
	if !oldest.IsZero() {
		lag = max(now.Sub(oldest).Seconds(), 0)
	}
	c.metrics.lag.Set(lag)
}

func cmpID(a, b tableID) int {
	if a.db != b.db {
		if a.db < b.db {
			return -1
		}
		return 1
	}
	switch {
	case a.table < b.table:
		return -1
	case a.table > b.table:
		return 1
	}
	return 0
}

// connect opens the catalog if it is not open.
func (c *Committer) connect(ctx context.Context) error {
	if c.cat != nil {
		return nil
	}
	cat, err := c.openCatalog(ctx)
	if err != nil {
		return err
	}
	c.cat = cat
	return nil
}

// list is what every table should hold now. Locally it also names the
// tables that have links but no files any more (retention took every
// partition): their files go.
func (c *Committer) list() (tables, error) {
	if b := c.cfg.Bucket; b != nil {
		ts, err := listStored(c.cfg.DataDir, b.Name)
		if err != nil {
			return nil, err
		}
		// An object's wait starts when a pass first finds it (its file's
		// own age counts the hour and the upload before it).
		now := c.now()
		for _, t := range ts {
			for _, p := range t.partitions {
				for i, f := range p.files {
					s, ok := c.seen[f.path]
					if !ok {
						s = now
						c.seen[f.path] = s
					}
					p.files[i].since = s
				}
			}
		}
		return ts, nil
	}
	ts, err := listLocal(c.fs, c.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	dbs, err := layout.Subdirs(layout.OSFS{}, Dir(c.cfg.DataDir))
	if err != nil {
		return nil, fmt.Errorf("list iceberg dir: %w", err)
	}
	for _, db := range dbs {
		tbls, err := layout.Subdirs(layout.OSFS{}, filepath.Join(Dir(c.cfg.DataDir), db))
		if err != nil {
			return nil, fmt.Errorf("list iceberg dir: %w", err)
		}
		for _, t := range tbls {
			ts.table(tableID{db, t})
		}
	}
	for id, t := range ts {
		for _, p := range t.partitions {
			for i := range p.files {
				p.files[i].path = fileURI(c.linkPath(id, p.files[i]))
			}
		}
	}
	return ts, nil
}

// reconcile commits one table's difference with its files and says since
// when the oldest file still missing from it has waited (zero if none).
func (c *Committer) reconcile(ctx context.Context, tf *tableFiles) (time.Time, error) {
	local := c.cfg.Bucket == nil
	parts := tf.sorted()
	var all []wanted
	for _, p := range parts {
		all = append(all, p.files...)
	}
	// Until the table says which files it has, those that arrived since
	// the last pass that completed wait.
	pendingSince := oldestSince(c.since(all, c.lastOK))
	if len(all) == 0 && !c.known(ctx, tf.id) {
		return time.Time{}, nil
	}
	tbl, err := c.table(ctx, tf.id, all)
	if errors.Is(err, errConflict) {
		for _, f := range all {
			c.refuse(f, err)
		}
		return time.Time{}, nil
	}
	if err != nil {
		return pendingSince, err
	}
	live, err := liveFiles(ctx, tbl)
	if err != nil {
		return pendingSince, fmt.Errorf("list the table's files: %w", err)
	}
	adds, dirs, err := c.toAdd(tf.id, parts, live)
	if err != nil {
		return pendingSince, err
	}
	var removes []iceberg.DataFile
	if local {
		removes = toRemove(parts, live)
	}
	if len(adds) > 0 || len(removes) > 0 {
		if err := syncDirs(dirs); err != nil {
			return pendingSince, err
		}
		if err := c.step("linked"); err != nil {
			return pendingSince, err
		}
		n, err := c.commit(ctx, tbl, adds, removes)
		if err != nil {
			return oldestSince(adds), err
		}
		c.files[tf.id] = len(live) + n - len(removes)
		if err := c.step("committed"); err != nil {
			return time.Time{}, err
		}
		if tbl, err = c.cat.LoadTable(ctx, tbl.Identifier()); err != nil {
			return time.Time{}, err
		}
	} else {
		c.files[tf.id] = len(live)
	}
	for _, f := range all {
		delete(c.seen, f.path)
	}
	return time.Time{}, c.upkeep(ctx, tf.id, tbl)
}

// known says whether a table without files is in the catalog (its files
// must then go).
func (c *Committer) known(ctx context.Context, id tableID) bool {
	ok, err := c.cat.CheckTableExists(ctx, id.ident())
	return err == nil && ok
}

// since are the files that arrived after t.
func (c *Committer) since(files []wanted, t time.Time) []wanted {
	var out []wanted
	for _, f := range files {
		if f.since.After(t) {
			out = append(out, f)
		}
	}
	return out
}

func oldestSince(files []wanted) time.Time {
	var t time.Time
	for _, f := range files {
		if t.IsZero() || f.since.Before(t) {
			t = f.since
		}
	}
	return t
}

// liveFiles are the data files of a table's current snapshot, by path.
func liveFiles(ctx context.Context, tbl *table.Table) (map[string]iceberg.DataFile, error) {
	return plan(ctx, tbl)
}

// liveFilesOfHour are the data files of one hour: the manifests whose
// partition summaries leave the hour out are not read, so a commit of one
// partition costs the same in a table of a day or of a year.
func liveFilesOfHour(ctx context.Context, tbl *table.Table, start time.Time) (map[string]iceberg.DataFile, error) {
	ref := iceberg.Reference(timeColumn)
	return plan(ctx, tbl, table.WithRowFilter(iceberg.NewAnd(
		iceberg.GreaterThanEqual(ref, iceberg.Timestamp(start.UnixMicro())),
		iceberg.LessThan(ref, iceberg.Timestamp(start.Add(time.Hour).UnixMicro())))))
}

func plan(ctx context.Context, tbl *table.Table, opts ...table.ScanOption) (map[string]iceberg.DataFile, error) {
	out := map[string]iceberg.DataFile{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	tasks, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range tasks {
		out[t.File.FilePath()] = t.File
	}
	return out, nil
}

// toAdd links (locally) and returns the files of stable partitions that
// the table lacks, and the folders of new links. A partition where a file
// vanished before its link is left for the next pass, its new links
// removed.
func (c *Committer) toAdd(id tableID, parts []*partition, live map[string]iceberg.DataFile) ([]wanted, map[string]bool, error) {
	local := c.cfg.Bucket == nil
	var adds []wanted
	dirs := map[string]bool{}
	for _, p := range parts {
		var padds []wanted
		var made []string
		for _, f := range p.files {
			if _, ok := live[f.path]; ok {
				continue
			}
			if _, ok := c.refused[f.path]; ok {
				continue
			}
			if local {
				dst := c.linkPath(id, f)
				err := link(c.fs, f.local, dst)
				if errors.Is(err, errVanished) {
					p.unstable = true
					break
				}
				if err != nil {
					return nil, nil, err
				}
				made = append(made, dst)
				dirs[filepath.Dir(dst)] = true
			}
			padds = append(padds, f)
		}
		if p.unstable {
			for _, m := range made {
				_ = os.Remove(m)
			}
			continue
		}
		adds = append(adds, padds...)
	}
	return adds, dirs, nil
}

// toRemove are the table's files whose hive file is gone, in partitions
// listed whole.
func toRemove(parts []*partition, live map[string]iceberg.DataFile) []iceberg.DataFile {
	want := map[string]bool{}
	unstable := map[string]bool{}
	for _, p := range parts {
		if p.unstable {
			unstable[p.rel] = true
		}
		for _, f := range p.files {
			want[f.path] = true
		}
	}
	var out []iceberg.DataFile
	for _, path := range slices.Sorted(maps.Keys(live)) {
		if !want[path] && !unstable[partitionOf(path)] {
			out = append(out, live[path])
		}
	}
	return out
}

// commit adds and removes files in one snapshot, after adding the columns
// the new files bring. It returns how many files it added.
func (c *Committer) commit(ctx context.Context, tbl *table.Table, adds []wanted, removes []iceberg.DataFile) (int, error) {
	tbl, adds, err := c.evolve(ctx, tbl, adds)
	if err != nil {
		return 0, err
	}
	dfs := c.dataFiles(ctx, tbl, adds)
	if len(dfs) == 0 && len(removes) == 0 {
		return 0, nil
	}
	txn := tbl.NewTransaction()
	// The files to add were found missing from this very snapshot; the
	// library's own check would read every manifest again.
	if err := txn.ReplaceDataFilesWithDataFiles(ctx, removes, dfs, nil, table.WithoutDuplicateCheck()); err != nil {
		return 0, c.counted(ctx, tbl, fmt.Errorf("stage commit: %w", err))
	}
	if err := c.step("staged"); err != nil {
		return 0, err
	}
	if _, err := txn.Commit(ctx); err != nil {
		return 0, c.counted(ctx, tbl, fmt.Errorf("commit: %w", err))
	}
	c.metrics.commits.WithLabelValues(resultOK).Inc()
	c.log.Debug("committed", "table", tbl.Identifier(), "added", len(dfs), "removed", len(removes))
	return len(dfs), nil
}

// errMoved marks a commit that failed because another committer moved the
// table since it was loaded (a shared catalog): retried at once on the
// table as it is now.
var errMoved = errors.New("the table moved under the commit")

// counted counts a failed commit by its kind: a conflict if the table
// moved since tbl was loaded (catalogs word that differently: a failed
// requirement, ErrCommitFailed, a 409), an error otherwise.
func (c *Committer) counted(ctx context.Context, tbl *table.Table, err error) error {
	if errors.Is(err, table.ErrCommitFailed) || c.moved(ctx, tbl) {
		c.metrics.commits.WithLabelValues(resultConflict).Inc()
		return fmt.Errorf("%w: %w", errMoved, err)
	}
	c.metrics.commits.WithLabelValues(resultError).Inc()
	return err
}

// moved says whether the catalog's table is no longer tbl.
func (c *Committer) moved(ctx context.Context, tbl *table.Table) bool {
	fresh, err := c.cat.LoadTable(ctx, tbl.Identifier())
	return err == nil && fresh.MetadataLocation() != tbl.MetadataLocation()
}

// Conflicts are retried at once, a few times, after a jittered backoff:
// committers that collided do not collide again in step.
const (
	conflictRetries    = 10
	conflictBackoff    = 50 * time.Millisecond
	conflictBackoffMax = 5 * time.Second
)

// retryMoved runs f again while it fails because the table moved.
func retryMoved(ctx context.Context, f func() error) error {
	for attempt := 0; ; attempt++ {
		err := f()
		if !errors.Is(err, errMoved) || attempt == conflictRetries {
			return err
		}
		d := min(conflictBackoff<<attempt, conflictBackoffMax)
		t := time.NewTimer(time.Duration(rand.Int64N(int64(d))) + time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// onlyMoved says whether err is made only of conflicts: the catalog is
// reachable and busy, not behind.
func onlyMoved(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyMoved(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, errMoved)
}

// evolve adds to the table, as optional columns, the columns new files
// bring, and refuses the files whose columns conflict with the table's.
func (c *Committer) evolve(ctx context.Context, tbl *table.Table, adds []wanted) (*table.Table, []wanted, error) {
	type group struct {
		schema string
		files  []wanted
		cols   []iceberg.NestedField
	}
	var groups []*group
	byKey := map[string]*group{}
	var ok []wanted
	for _, f := range adds {
		as, err := fileSchema(c.readPath(f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // bucket: replaced since the listing; the uploader settles it
		}
		if err != nil {
			c.refuse(f, err)
			continue
		}
		key := as.String()
		g := byKey[key]
		if g == nil {
			cols, err := newColumns(tbl.Schema(), as)
			if err != nil {
				c.refuse(f, err)
				continue
			}
			g = &group{schema: key, cols: cols}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.files = append(g.files, f)
	}
	var add []iceberg.NestedField
	names := map[string]iceberg.NestedField{}
	for _, g := range groups {
		conflict := false
		for _, col := range g.cols {
			if prev, dup := names[col.Name]; dup && !sameType(prev.Type, col.Type) {
				err := fmt.Errorf("%w: column %q is %s in one new file and %s in another", errConflict, col.Name, describe(col), describe(prev))
				for _, f := range g.files {
					c.refuse(f, err)
				}
				conflict = true
				break
			}
		}
		if conflict {
			continue
		}
		for _, col := range g.cols {
			if _, dup := names[col.Name]; !dup {
				names[col.Name] = col
				add = append(add, col)
			}
		}
		ok = append(ok, g.files...)
	}
	if len(add) == 0 {
		return tbl, ok, nil
	}
	tbl, err := c.addColumns(ctx, tbl, add)
	return tbl, ok, err
}

// addColumns commits new optional columns and keeps the name mapping (how
// the files' columns, which carry no field ids, find theirs) current.
func (c *Committer) addColumns(ctx context.Context, tbl *table.Table, cols []iceberg.NestedField) (*table.Table, error) {
	nm := tbl.NameMapping()
	if nm == nil {
		nm = tbl.Schema().NameMapping()
	}
	txn := tbl.NewTransaction()
	us := txn.UpdateSchema(true, false, table.WithNameMapping(nm))
	names := make([]string, len(cols))
	for i, col := range cols {
		us.AddColumn([]string{col.Name}, col.Type, col.Doc, false, nil)
		names[i] = col.Name
	}
	if err := us.Commit(); err != nil {
		return nil, fmt.Errorf("add columns %v: %w", names, err)
	}
	next, err := txn.Commit(ctx)
	if err != nil {
		return nil, c.counted(ctx, tbl, fmt.Errorf("commit columns %v: %w", names, err))
	}
	c.metrics.commits.WithLabelValues(resultOK).Inc()
	c.log.Info("added columns to an Iceberg table", "table", tbl.Identifier(), "columns", names)
	return next, nil
}

// readPath is where a file's bytes are read: the link (stable across a
// compaction) locally, the local copy of an object in the bucket.
func (c *Committer) readPath(f wanted) string {
	if c.cfg.Bucket == nil {
		return localPath(f.path)
	}
	return f.local
}

// dataFiles reads each file's footer for its statistics and partition.
func (c *Committer) dataFiles(ctx context.Context, tbl *table.Table, adds []wanted) []iceberg.DataFile {
	var fio iceio.IO = iceio.LocalFS{}
	if c.cfg.Bucket != nil {
		m := localCopies{}
		for _, f := range adds {
			m[f.path] = f.local
		}
		fio = m
	}
	spec := tbl.Spec()
	var hourField int
	for _, f := range spec.Fields() {
		hourField = f.FieldID
	}
	var out []iceberg.DataFile
	for _, f := range adds {
		df, err := table.FileToDataFile(ctx, fio, f.path, tbl.Schema(), spec, 0, tbl.Properties())
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && df.Partition()[hourField] == nil {
			err = fmt.Errorf("%w: its %s statistics do not place it in one hour", errConflict, timeColumn)
		}
		if err != nil {
			c.refuse(f, err)
			continue
		}
		out = append(out, df)
	}
	return out
}

// localCopies reads objects of the bucket from their local files, which
// hold the same bytes.
type localCopies map[string]string

func (m localCopies) Open(name string) (iceio.File, error) {
	p, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return os.Open(p)
}

func (m localCopies) Remove(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrPermission}
}

// refuse keeps a file out of its table and logs why, once.
func (c *Committer) refuse(f wanted, err error) {
	key := f.path
	if key == "" {
		key = f.local
	}
	if _, ok := c.refused[key]; ok {
		return
	}
	c.refused[key] = err.Error()
	if c.cfg.Bucket == nil && f.path != "" {
		_ = os.Remove(localPath(f.path)) // its link, made before its schema was read
	}
	c.log.Error("a Parquet file stays out of its Iceberg table (plain readers still see it)", "file", f.local, "error", err)
}

// Settle makes the table of partition hold the objects of live and none of
// gone, in one commit: the uploader calls it before deleting a replaced
// object or a local partition (upload.Table).
func (c *Committer) Settle(ctx context.Context, rel string, live, gone []upload.StoredFile) error {
	if c.cfg.Bucket == nil {
		return errors.New("iceberg: Settle without a bucket warehouse")
	}
	id, prel, err := splitRel(rel)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err = retryMoved(ctx, func() error { return c.settle(ctx, id, prel, live, gone) })
	if ctx.Err() == nil {
		c.setReady(readiness(err))
	}
	return err
}

func (c *Committer) settle(ctx context.Context, id tableID, prel string, live, gone []upload.StoredFile) error {
	if err := c.connect(ctx); err != nil {
		return err
	}
	dir := filepath.Join(c.cfg.DataDir, id.db, id.table, filepath.FromSlash(prel))
	files := make([]wanted, len(live))
	for i, o := range live {
		files[i] = wanted{partition: prel, name: o.File, local: filepath.Join(dir, o.File), path: objectURI(c.cfg.Bucket.Name, o.Key), since: c.now()}
	}
	tbl, err := c.table(ctx, id, files)
	if errors.Is(err, errConflict) {
		for _, f := range files {
			c.refuse(f, err)
		}
		tbl, err = nil, nil
		if len(gone) == 0 {
			return nil
		}
		if tbl, err = c.cat.LoadTable(ctx, id.ident()); errors.Is(err, catalog.ErrNoSuchTable) {
			return nil // no table: nothing points at gone
		}
	}
	if err != nil {
		return err
	}
	end, err := storage.ParsePartition(id.db + "/" + id.table + "/" + prel)
	if err != nil {
		return err
	}
	have, err := liveFilesOfHour(ctx, tbl, end.Add(-time.Hour))
	if err != nil {
		return fmt.Errorf("list the table's files: %w", err)
	}
	var adds []wanted
	for _, f := range files {
		if _, ok := have[f.path]; !ok {
			if _, refused := c.refused[f.path]; !refused {
				adds = append(adds, f)
			}
		}
	}
	var removes []iceberg.DataFile
	for _, o := range gone {
		if df, ok := have[objectURI(c.cfg.Bucket.Name, o.Key)]; ok {
			removes = append(removes, df)
		}
	}
	if len(adds) == 0 && len(removes) == 0 {
		return nil
	}
	n, err := c.commit(ctx, tbl, adds, removes)
	if err != nil {
		return err
	}
	c.files[id] += n - len(removes)
	return c.step("committed")
}

// crash is a fault a test injects: the committer stops as a killed process
// would.
type crash struct{ step string }

func (c crash) Error() string { return "crash injected at " + c.step }

func (c *Committer) step(name string) error {
	if c.hook == nil {
		return nil
	}
	if err := c.hook(name); err != nil {
		return crash{step: name}
	}
	return nil
}

// Table loads a table through the committer's catalog, as a reader would:
// database and table are the names the catalog knows ("default", "cpu").
func (c *Committer) Table(ctx context.Context, database, name string) (*table.Table, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	return c.cat.LoadTable(ctx, table.Identifier{database, name})
}
