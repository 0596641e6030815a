package compact

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// Layout of compaction state under the system folder.
const (
	compactDirName = layout.CompactDirName
	// IntentName is the compaction's intent, in the system folder.
	IntentName        = "compact-intent.json"
	compactIntentName = IntentName
)

// FS is the file system calls compaction makes.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (layout.File, error)
	Rename(oldpath, newpath string) error
	Remove(name string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	SyncDir(name string) error
	Link(oldname, newname string) error
	RemoveAll(path string) error
	// Exchange swaps two paths atomically (renameat2 RENAME_EXCHANGE).
	Exchange(a, b string) error
}

// Guard is what compaction shares with the rooms that change the
// partition tree. Lock order is Maint, then Tree.
type Guard interface {
	// Maint is held for a whole run: no retention or drop meanwhile.
	Maint() sync.Locker
	// Tree is held only while a partition folder is swapped: flushes
	// wait for the swap, never for a merge.
	Tree() sync.Locker
	// Unfinished is an error while a flush has not finished publishing
	// (Tree held): its files must stay where it put them.
	Unfinished() error
}

// Config is what a Compactor works with.
type Config struct {
	FS      FS
	DataDir string
	Logger  *slog.Logger
	Mem     memory.Allocator
	// Compression and RowGroupRows of the merged files (the flush's).
	Compression  string
	RowGroupRows int64
	// Sort orders a merged OTLP file's rows by the table's sort columns.
	Sort  bool
	Guard Guard
	// Report gets each run's Stats on the goroutine that ran it.
	Report func(Stats)
	// Hook is called after each step of a swap (merged, staged, intent,
	// exchanged, removed), and when a sorted merge has spilled its runs
	// (spilled); an error stops it there. Tests crash compactions, and
	// damage their runs, with it.
	Hook func(step string) error
	// Limits size the merge; zero is DefaultMergeLimits.
	Limits MergeLimits
}

// Compactor merges the files of closed partitions. It owns its intent
// (compact-intent.json), the staging folders under compact/ and the temp
// files and spills it makes in tmp/.
type Compactor struct {
	cfg            Config
	sysDir, tmpDir string
	// current are the files compaction found in the contract's time unit
	// (not an earlier build's nanoseconds) and left alone, by path; under
	// Maint. Files never change, so each footer is read once.
	current map[string]bool
}

// New returns a compactor of cfg's directory. It touches nothing on disk:
// Recover settles what a crash left.
func New(cfg Config) *Compactor {
	if cfg.Limits == (MergeLimits{}) {
		cfg.Limits = DefaultMergeLimits
	}
	if cfg.Report == nil {
		cfg.Report = func(Stats) {}
	}
	sys := filepath.Join(cfg.DataDir, layout.SystemDirName)
	return &Compactor{cfg: cfg, sysDir: sys, tmpDir: filepath.Join(sys, layout.TmpDirName)}
}

// Known is how many files compaction has read the footer of and left
// alone.
func (c *Compactor) Known() int { return len(c.current) }

// compactIntent is written before the swap.
type compactIntent struct {
	Partition string   `json:"partition"`
	Staging   string   `json:"staging"`
	Outputs   []string `json:"outputs"`
}

// Stats says what a compaction did.
type Stats struct {
	Partitions int
	FilesIn    int
	FilesOut   int
	Rows       int64
	BytesIn    int64
	BytesOut   int64
	Duration   time.Duration
	// Cutoff: the run covered every partition whose hour ended by then
	// (all of them compacted unless Err is set).
	Cutoff time.Time
	Err    error
}

// Run merges the files of every partition whose hour ended at least
// minAge ago, and rewrites the files of earlier builds (nanosecond
// timestamps, schema.StoredParquet) in any partition, so that every engine
// reads the whole tree. Flushes wait while a partition is swapped, not
// while it is merged.
func (c *Compactor) Run(ctx context.Context, minAge time.Duration) (Stats, error) {
	maint := c.cfg.Guard.Maint()
	maint.Lock()
	defer maint.Unlock()
	start := time.Now()
	st := Stats{Cutoff: start.Add(-minAge)}
	parts, err := c.partitions()
	current := map[string]bool{}
	// A partition that fails (a damaged file, a full disk) does not keep
	// the others from compacting: each would otherwise wait behind it for
	// good. Its error is reported with the run's.
	var errs []error
	for _, p := range parts {
		if err != nil {
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
		closed := !p.End.After(st.Cutoff)
		if perr := c.compactPartition(p.Dir, closed, current, &st); perr != nil {
			errs = append(errs, perr)
			if errors.As(perr, new(stopRun)) {
				break
			}
		}
	}
	err = errors.Join(append(errs, err)...)
	c.current = current
	st.Duration, st.Err = time.Since(start), err
	c.cfg.Report(st)
	if st.Partitions > 0 || err != nil {
		c.cfg.Logger.Info("compacted", "partitions", st.Partitions, "files_in", st.FilesIn, "files_out", st.FilesOut,
			"rows", st.Rows, "bytes_in", st.BytesIn, "bytes_out", st.BytesOut, "duration", st.Duration, "error", err)
	}
	return st, err
}

// partitions lists every partition folder of every table.
func (c *Compactor) partitions() ([]layout.PartitionDir, error) {
	var out []layout.PartitionDir
	err := layout.Tables(c.cfg.FS, c.cfg.DataDir, func(_, _, dir string) error {
		parts, err := layout.TablePartitions(c.cfg.FS, dir)
		out = append(out, parts...)
		return err
	})
	return out, err
}

// compactPartition merges each schema's files of one closed partition,
// and in any partition the files of earlier builds, whose timestamps are
// not in the contract's unit, with the files of their shape. current
// collects the files left alone that are in the unit.
func (c *Compactor) compactPartition(dir string, closed bool, current map[string]bool, st *Stats) error {
	names, err := layout.ParquetFiles(c.cfg.FS, dir)
	if err != nil || len(names) == 0 {
		return err
	}
	if !closed || len(names) == 1 {
		// Nothing to merge unless a file is an earlier build's: only the
		// files not seen before need their footer read.
		known := true
		for _, n := range names {
			if p := filepath.Join(dir, n); c.current[p] {
				current[p] = true
			} else {
				known = false
			}
		}
		if known {
			return nil
		}
	}
	groups, err := groupBySchema(dir, names)
	if err != nil {
		return err
	}
	merged := map[string]bool{}
	var outputs []mergedFile
	defer func() {
		for _, o := range outputs {
			_ = c.cfg.FS.Remove(o.temp)
		}
	}()
	for _, g := range groups {
		if !g.legacy && (!closed || len(g.names) < 2) {
			for _, n := range g.names {
				current[filepath.Join(dir, n)] = true
			}
			continue
		}
		out, err := c.merge(dir, g)
		if err != nil {
			return fmt.Errorf("compact %s: %w", dir, err)
		}
		outputs = append(outputs, out)
		for _, n := range g.names {
			merged[n] = true
		}
		st.FilesIn += len(g.names)
		st.BytesIn += g.bytes
		st.Rows += out.rows
		st.BytesOut += out.bytes
	}
	if len(outputs) == 0 {
		return nil
	}
	if err := c.hook("merged"); err != nil {
		return err
	}
	if err := c.swap(dir, merged, outputs); err != nil {
		return fmt.Errorf("compact %s: %w", dir, err)
	}
	st.Partitions++
	st.FilesOut += len(outputs)
	outputs = nil // published: nothing left to clean up
	return nil
}

// schemaGroup is the files of one shape in a partition. schema is their
// shape in the contract's time unit (schema.StoredParquet), the one a
// merge writes; legacy says some file is not in that unit.
type schemaGroup struct {
	schema *parquet.Schema
	legacy bool
	names  []string
	bytes  int64
	rows   int64
}

// groupBySchema sorts a partition's files by shape: a measurement table
// that gained a column has files of both shapes in one folder. A file of
// an earlier build (nanosecond timestamps) joins the files of its shape
// in microseconds.
func groupBySchema(dir string, names []string) ([]*schemaGroup, error) {
	bySchema := map[string]*schemaGroup{}
	var order []string
	for _, n := range names {
		fileSchema, size, rows, err := ReadSchema(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		stored, legacy := schema.StoredParquet(fileSchema)
		// The shape is the columns: the root's name is a writer's choice
		// (the flush names it after the row type, pqarrow "schema").
		_, key, _ := strings.Cut(stored.String(), "\n")
		g := bySchema[key]
		if g == nil {
			g = &schemaGroup{schema: stored}
			bySchema[key] = g
			order = append(order, key)
		}
		g.legacy = g.legacy || legacy
		g.names = append(g.names, n)
		g.bytes += size
		g.rows += rows
	}
	out := make([]*schemaGroup, len(order))
	for i, k := range order {
		out[i] = bySchema[k]
	}
	return out, nil
}

func ReadSchema(path string) (schema *parquet.Schema, size, rows int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	pf, err := parquet.OpenFile(f, info.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("open %s: %w", path, err)
	}
	return pf.Schema(), info.Size(), pf.NumRows(), nil
}

type mergedFile struct {
	temp, name  string
	rows, bytes int64
}

// merge streams the rows of a group's files, row group by row group, into
// one durable temp file.
func (c *Compactor) merge(dir string, g *schemaGroup) (mergedFile, error) {
	out := mergedFile{name: compactedName()}
	out.temp = filepath.Join(c.tmpDir, out.name+".tmp")
	f, err := c.cfg.FS.OpenFile(out.temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return out, fmt.Errorf("create temp file: %w", err)
	}
	cw := &layout.CountingWriter{W: f}
	err = c.copyRows(bufio.NewWriterSize(cw, 1<<20), dir, g, &out)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	out.bytes = cw.N
	if err != nil {
		// Now, not at the next start: at ENOSPC each failed merge would
		// keep its space until then.
		_ = c.cfg.FS.Remove(out.temp)
	}
	return out, err
}

func (c *Compactor) copyRows(bw *bufio.Writer, dir string, g *schemaGroup, out *mergedFile) error {
	table := filepath.Base(filepath.Dir(filepath.Dir(dir)))
	paths := make([]string, len(g.names))
	for i, n := range g.names {
		paths[i] = filepath.Join(dir, n)
	}
	if tableschema.IsOTLPTable(table) {
		return c.copyRowByRow(bw, table, g, paths, out)
	}
	arrowSchema, parquetSchema, err := compactSchemas(table, paths[0])
	if err != nil {
		c.cfg.Logger.Warn("compacting row by row", "partition", dir, "reason", err)
		return c.copyRowByRow(bw, table, g, paths, out)
	}
	w, err := parquetfile.NewWriter(bw, parquetSchema, arrowSchema, parquetfile.Options{
		Compression:   c.cfg.Compression,
		RowGroupRows:  c.cfg.RowGroupRows,
		BloomColumns:  tableschema.BloomColumns(table),
		ExpectedRows:  g.rows,
		AllStatistics: true,
	})
	if err != nil {
		return err
	}
	m := &merger{c: c, limits: c.cfg.Limits, mem: c.cfg.Mem, schema: arrowSchema, out: w, keys: sortKeys(table, arrowSchema)}
	defer m.close()
	if out.rows, err = m.mergeFiles(paths); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close merged file: %w", err)
	}
	return bw.Flush()
}

// compactSchemas are the schemas a measurement's files are rewritten
// with: the Arrow schema pqarrow reads them as, and the Parquet schema the
// flush derives from it (its encodings, which a file's own schema does not
// carry).
func compactSchemas(table, path string) (*arrow.Schema, *parquet.Schema, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	as, err := fr.Schema()
	if err != nil {
		return nil, nil, fmt.Errorf("read schema of %s: %w", path, err)
	}
	as = schema.StoredSchema(as) // readBatches converts an earlier build's rows
	dictInts, err := tableschema.LowCardinalityInts(fr)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	ps, err := tableschema.Compacted(table, timeFirst(as), dictInts)
	if err != nil {
		return nil, nil, err
	}
	if err := parquetfile.Check(ps, as); err != nil {
		return nil, nil, err
	}
	return as, ps, nil
}

// timeFirst orders a measurement's fields as the write API does, time
// first; a Parquet file holds them by name.
func timeFirst(s *arrow.Schema) *arrow.Schema {
	idx := s.FieldIndices(tableschema.TimeColumn)
	if len(idx) != 1 || idx[0] == 0 {
		return s
	}
	fields := slices.Clone(s.Fields())
	t := fields[idx[0]]
	fields = slices.Delete(fields, idx[0], idx[0]+1)
	return arrow.NewSchema(slices.Insert(fields, 0, t), nil)
}

// copyRowByRow merges with parquet-go, row by row: the OTLP tables, and
// files whose shape the table's schema no longer describes. The OTLP
// tables stay on it: through the Arrow merge their nested rows (attribute
// maps, events, links) held 420-570 MiB while a row group filled, against
// 250-320 MiB here, and the harness's files came out 38-40 % larger
// (docs/PERFORMANCE.md).
func (c *Compactor) copyRowByRow(bw *bufio.Writer, table string, g *schemaGroup, paths []string, out *mergedFile) error {
	codec, err := parquetfile.Codec(c.cfg.Compression)
	if err != nil {
		return err
	}
	rowGroup := c.cfg.RowGroupRows
	if rowGroup <= 0 {
		rowGroup = parquetfile.DefaultRowGroupRows
	}
	encodings := c.layout(table, g, paths, rowGroup)
	opts := []parquet.WriterOption{schema.ParquetLayout(g.schema, codec, encodings), parquet.DataPageStatistics(true), parquet.MaxRowsPerRowGroup(rowGroup),
		parquet.DataPageVersion(parquetfile.DataPageVersion), parquet.PageBufferSize(parquetfile.DataPageBytes)}
	var filters []parquet.BloomFilterColumn // one option: each replaces the last
	for _, col := range tableschema.BloomColumns(table) {
		if _, ok := g.schema.Lookup(col); ok {
			filters = append(filters, parquet.SplitBlockFilter(10, col))
		}
	}
	if len(filters) > 0 {
		opts = append(opts, parquet.BloomFilters(filters...))
	}
	var w interface {
		parquet.RowWriter
		Close() error
	}
	if sortBy := sortColumns(table, g.schema); len(sortBy) > 0 && c.cfg.Sort {
		// An external merge sort: runs of sortRunRows rows are sorted in
		// memory and spilled to temp files, then merged into the output.
		opts = append(opts, parquet.SortingWriterConfig(
			parquet.SortingColumns(sortBy...),
			parquet.SortingBuffers(parquet.NewFileBufferPool(c.tmpDir, "sort-*.tmp"))))
		w = parquet.NewSortingWriter[any](bw, sortRunRows, opts...)
	} else {
		w = parquet.NewWriter(bw, opts...)
	}
	err = copyFiles(w, paths, out)
	if err == nil {
		if err = w.Close(); err != nil {
			err = fmt.Errorf("close merged file: %w", err)
		}
	}
	if err != nil {
		// The sorting writer removes its file of sorted runs only once a
		// merge is done: a failed one would keep it, open and on disk,
		// until the next start.
		if sw, ok := w.(*parquet.SortingWriter[any]); ok {
			sw.Reset(io.Discard)
		}
		return err
	}
	return bw.Flush()
}

// copyFiles copies the rows of the files at paths to w, counting them in
// out.
func copyFiles(w parquet.RowWriter, paths []string, out *mergedFile) error {
	for _, p := range paths {
		rows, err := copyFile(w, p)
		if err != nil {
			return err
		}
		out.rows += rows
	}
	return nil
}

// layout is the encoding of each leaf column of a merged file: what the
// flush's writer makes of the contract's encodings (contractEncodings) on
// a row group's worth of the hour's rows, taken in file order (with Sort
// on, not the sorted rows the merged file's first row group holds: the
// writer decides by how often values repeat and how wide they are, which
// the order of an hour's rows barely moves).
// Never the encodings of a file read: the first one may be an earlier
// build's (PLAIN ids), and its layout would be the whole hour's. Where
// the writer cannot take the rows, the contract's encodings stand.
func (c *Compactor) layout(table string, g *schemaGroup, paths []string, rows int64) []encoding.Encoding {
	asked := contractEncodings(table, g.schema)
	var sample []arrow.RecordBatch
	defer func() {
		for _, r := range sample {
			r.Release()
		}
	}()
	var n int64
	for _, p := range paths {
		err := ReadBatches(p, c.cfg.Mem, func(rec arrow.RecordBatch) error {
			rec.Retain()
			sample = append(sample, rec)
			if n += rec.NumRows(); n >= rows {
				return errSampled
			}
			return nil
		})
		if errors.Is(err, errSampled) {
			break
		}
		if err != nil {
			c.cfg.Logger.Warn("compacting with the contract's encodings", "table", table, "reason", err)
			return asked
		}
	}
	decided, err := parquetfile.Layout(schema.ParquetLayout(g.schema, nil, asked), sample)
	if err != nil {
		c.cfg.Logger.Warn("compacting with the contract's encodings", "table", table, "reason", err)
		return asked
	}
	for i, enc := range decided {
		if enc != nil {
			asked[i] = enc
		}
	}
	return asked
}

// errSampled stops reading once the sample is complete.
var errSampled = errors.New("sampled")

// contractEncodings are the encodings the table's contract gives the leaf
// columns of a file's shape (s.Columns() order): an OTLP table's by path,
// a measurement's by kind (tableschema.MeasurementEncoding). A column the
// contract lacks, or types otherwise, takes none.
func contractEncodings(table string, s *parquet.Schema) []encoding.Encoding {
	t, otlp := schema.Lookup(table)
	cols := s.Columns()
	out := make([]encoding.Encoding, len(cols))
	for i, path := range cols {
		leaf, _ := s.Lookup(path...)
		kind := leaf.Node.Type().Kind()
		switch {
		case otlp:
			if want, ok := t.Parquet.Lookup(path...); ok && want.Node.Type().Kind() == kind {
				out[i] = want.Node.Encoding()
			}
		case len(path) == 1:
			out[i] = tableschema.MeasurementEncoding(path[0], kind)
		}
	}
	return out
}

// sortRunRows bounds the rows compaction sorts in memory at once.
const sortRunRows = 128 * 1024

// sortColumns are sortKeys as parquet-go sorting columns.
func sortColumns(table string, schema *parquet.Schema) []parquet.SortingColumn {
	var out []parquet.SortingColumn
	for _, k := range tableschema.SortKeyNames(table) {
		if _, ok := schema.Lookup(k); !ok {
			break // a prefix of the keys still orders rows usefully
		}
		out = append(out, parquet.Ascending(k))
	}
	return out
}

// sortKeys are tableschema.SortKeyNames present in an Arrow schema.
func sortKeys(table string, schema *arrow.Schema) []string {
	var out []string
	for _, k := range tableschema.SortKeyNames(table) {
		if !schema.HasField(k) {
			break // a prefix of the keys still orders rows usefully
		}
		out = append(out, k)
	}
	return out
}

func copyFile(w parquet.RowWriter, path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	pf, err := parquet.OpenFile(f, info.Size())
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	var total int64
	for _, rg := range pf.RowGroups() {
		rows := rg.Rows()
		n, err := parquet.CopyRows(w, rows)
		rows.Close()
		if err != nil {
			return total, fmt.Errorf("copy rows of %s: %w", path, err)
		}
		total += n
	}
	return total, nil
}

func compactedName() string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s-compacted-%s%s", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(r[:]), layout.ParquetExt)
}

// swap publishes the merged files: under the flush lock, so no flush adds a
// file to the partition meanwhile, it stages the partition's new contents
// and exchanges the staging folder with the partition folder.
func (c *Compactor) swap(dir string, merged map[string]bool, outputs []mergedFile) error {
	g := c.cfg.Guard
	g.Tree().Lock()
	defer g.Tree().Unlock()
	if err := g.Unfinished(); err != nil {
		return stopRun{err}
	}
	names, err := layout.ParquetFiles(c.cfg.FS, dir)
	if err != nil {
		return err
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	staging := filepath.Join(c.sysDir, compactDirName, hex.EncodeToString(r[:]))
	if err := c.cfg.FS.MkdirAll(staging, 0o755); err != nil {
		return fmt.Errorf("create staging dir: %w", err)
	}
	// Files the merge did not take (one of a schema, or flushed since)
	// stay, as hard links: the exchange must not hide them.
	for _, n := range names {
		if !merged[n] {
			if err := c.cfg.FS.Link(filepath.Join(dir, n), filepath.Join(staging, n)); err != nil {
				return fmt.Errorf("link %s into staging: %w", n, err)
			}
		}
	}
	in := compactIntent{Partition: dir, Staging: staging}
	for _, o := range outputs {
		if err := c.cfg.FS.Rename(o.temp, filepath.Join(staging, o.name)); err != nil {
			return fmt.Errorf("stage merged file: %w", err)
		}
		in.Outputs = append(in.Outputs, o.name)
	}
	if err := c.cfg.FS.SyncDir(staging); err != nil {
		return fmt.Errorf("sync staging dir: %w", err)
	}
	if err := c.hook("staged"); err != nil {
		return err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := layout.WriteFileAtomic(c.cfg.FS, filepath.Join(c.sysDir, compactIntentName), data); err != nil {
		return fmt.Errorf("write compaction intent: %w", err)
	}
	if err := c.hook("intent"); err != nil {
		return err
	}
	if err := c.cfg.FS.Exchange(staging, dir); err != nil {
		return fmt.Errorf("exchange partition with staging dir: %w", err)
	}
	for _, d := range []string{filepath.Dir(dir), filepath.Dir(staging)} {
		if err := c.cfg.FS.SyncDir(d); err != nil {
			return fmt.Errorf("sync after exchange: %w", err)
		}
	}
	if err := c.hook("exchanged"); err != nil {
		return err
	}
	return c.finishCompaction(&in)
}

// finishCompaction removes the staging folder (after the exchange: the old
// files) and the intent.
func (c *Compactor) finishCompaction(in *compactIntent) error {
	if err := c.cfg.FS.RemoveAll(in.Staging); err != nil {
		return fmt.Errorf("remove replaced files: %w", err)
	}
	if err := c.cfg.FS.SyncDir(filepath.Dir(in.Staging)); err != nil {
		return fmt.Errorf("sync compact dir: %w", err)
	}
	if err := c.hook("removed"); err != nil {
		return err
	}
	if err := c.cfg.FS.Remove(filepath.Join(c.sysDir, compactIntentName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove compaction intent: %w", err)
	}
	return c.cfg.FS.SyncDir(c.sysDir)
}

// Recover settles a compaction a crash interrupted. If the
// partition holds the merged files the exchange happened and the staging
// folder holds the old files; if not, the staging folder holds links and
// the unpublished merge. Either way the staging folder goes. Staging
// folders without an intent never reached the exchange.
func (c *Compactor) Recover() error {
	path := filepath.Join(c.sysDir, compactIntentName)
	data, err := c.cfg.FS.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read compaction intent: %w", err)
	default:
		var in compactIntent
		if err := json.Unmarshal(data, &in); err != nil {
			return fmt.Errorf("decode compaction intent: %w", err)
		}
		// The staging folder is one of this directory's, whatever path the
		// intent was written under (the directory may have been restored
		// or mounted elsewhere since).
		in.Staging = filepath.Join(c.sysDir, compactDirName, filepath.Base(in.Staging))
		c.cfg.Logger.Info("settling an interrupted compaction", "partition", in.Partition)
		if err := c.finishCompaction(&in); err != nil {
			return err
		}
	}
	dir := filepath.Join(c.sysDir, compactDirName)
	if err := c.cfg.FS.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear staging dirs: %w", err)
	}
	return nil
}

func (c *Compactor) hook(step string) error {
	if c.cfg.Hook == nil {
		return nil
	}
	if err := c.cfg.Hook(step); err != nil {
		return stopRun{err} // a crash
	}
	return nil
}

// stopRun is an error that ends a run: a flush half published, which every
// later partition would meet too, or a test's crash.
type stopRun struct{ err error }

func (e stopRun) Error() string { return e.err.Error() }
func (e stopRun) Unwrap() error { return e.err }
