package storage

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// Compaction merges the small files that flushes leave in a partition into
// one file per schema. Readers glob the partition folder, and POSIX has no
// way to replace several files at once, so the compactor replaces the
// folder instead: it builds the new contents in a staging folder (the
// merged file plus hard links to every file it did not merge) and swaps
// the two folders with one renameat2(RENAME_EXCHANGE). At every instant
// the partition path holds either the old files or the new ones, never
// both and never neither; a recorded intent tells recovery which side of
// the swap a crash fell on.

// Layout of compaction state under the system folder.
const (
	compactDirName    = layout.CompactDirName
	compactIntentName = "compact-intent.json"
)

// compactIntent is written before the swap.
type compactIntent struct {
	Partition string   `json:"partition"`
	Staging   string   `json:"staging"`
	Outputs   []string `json:"outputs"`
}

// CompactStats says what a compaction did.
type CompactStats struct {
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

// Compact merges the files of every partition whose hour ended at least
// minAge ago, and rewrites the files of earlier builds (nanosecond
// timestamps, schema.StoredParquet) in any partition, so that every engine
// reads the whole tree. Flushes wait while a partition is swapped, not
// while it is merged.
func (s *Store) Compact(ctx context.Context, minAge time.Duration) (CompactStats, error) {
	maint := guard{s}.Maint()
	maint.Lock()
	defer maint.Unlock()
	start := time.Now()
	st := CompactStats{Cutoff: start.Add(-minAge)}
	parts, err := s.partitions()
	current := map[string]bool{}
	for _, p := range parts {
		if err != nil {
			break
		}
		if err = ctx.Err(); err != nil {
			break
		}
		closed := !p.End.After(st.Cutoff)
		err = s.compactPartition(p.Dir, closed, current, &st)
	}
	s.current = current
	st.Duration, st.Err = time.Since(start), err
	s.opts.Observer.Compacted(st)
	if st.Partitions > 0 || err != nil {
		s.log.Info("compacted", "partitions", st.Partitions, "files_in", st.FilesIn, "files_out", st.FilesOut,
			"rows", st.Rows, "bytes_in", st.BytesIn, "bytes_out", st.BytesOut, "duration", st.Duration, "error", err)
	}
	return st, err
}

// partitions lists every partition folder of every table.
func (s *Store) partitions() ([]layout.PartitionDir, error) {
	var out []layout.PartitionDir
	dbs, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("list data dir: %w", err)
	}
	for _, db := range dbs {
		if !db.IsDir() || CheckName("database", db.Name()) != nil {
			continue
		}
		tables, err := s.fs.ReadDir(filepath.Join(s.dir, db.Name()))
		if err != nil {
			return nil, fmt.Errorf("list database: %w", err)
		}
		for _, t := range tables {
			parts, err := layout.TablePartitions(s.fs, filepath.Join(s.dir, db.Name(), t.Name()))
			if err != nil {
				return nil, err
			}
			out = append(out, parts...)
		}
	}
	return out, nil
}

// compactPartition merges each schema's files of one closed partition,
// and in any partition the files of earlier builds, whose timestamps are
// not in the contract's unit, with the files of their shape. current
// collects the files left alone that are in the unit.
func (s *Store) compactPartition(dir string, closed bool, current map[string]bool, st *CompactStats) error {
	names, err := layout.ParquetFiles(s.fs, dir)
	if err != nil || len(names) == 0 {
		return err
	}
	if !closed || len(names) == 1 {
		// Nothing to merge unless a file is an earlier build's: only the
		// files not seen before need their footer read.
		known := true
		for _, n := range names {
			if p := filepath.Join(dir, n); s.current[p] {
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
			_ = s.fs.Remove(o.temp)
		}
	}()
	for _, g := range groups {
		if !g.legacy && (!closed || len(g.names) < 2) {
			for _, n := range g.names {
				current[filepath.Join(dir, n)] = true
			}
			continue
		}
		out, err := s.merge(dir, g)
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
	if err := s.hook("merged"); err != nil {
		return err
	}
	if err := s.swap(dir, merged, outputs); err != nil {
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
		fileSchema, size, rows, err := readSchema(filepath.Join(dir, n))
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

func readSchema(path string) (schema *parquet.Schema, size, rows int64, err error) {
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
func (s *Store) merge(dir string, g *schemaGroup) (mergedFile, error) {
	out := mergedFile{name: compactedName()}
	out.temp = filepath.Join(s.tmpDir, out.name+".tmp")
	f, err := s.fs.OpenFile(out.temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return out, fmt.Errorf("create temp file: %w", err)
	}
	cw := &countingWriter{w: f}
	err = s.copyRows(bufio.NewWriterSize(cw, 1<<20), dir, g, &out)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	out.bytes = cw.n
	if err != nil {
		// Now, not at the next start: at ENOSPC each failed merge would
		// keep its space until then.
		_ = s.fs.Remove(out.temp)
	}
	return out, err
}

func (s *Store) copyRows(bw *bufio.Writer, dir string, g *schemaGroup, out *mergedFile) error {
	table := filepath.Base(filepath.Dir(filepath.Dir(dir)))
	paths := make([]string, len(g.names))
	for i, n := range g.names {
		paths[i] = filepath.Join(dir, n)
	}
	if IsOTLPTable(table) {
		return s.copyRowByRow(bw, table, g, paths, out)
	}
	arrowSchema, parquetSchema, err := compactSchemas(table, paths[0])
	if err != nil {
		s.log.Warn("compacting row by row", "partition", dir, "reason", err)
		return s.copyRowByRow(bw, table, g, paths, out)
	}
	w, err := parquetfile.NewWriter(bw, parquetSchema, arrowSchema, parquetfile.Options{
		Compression:   s.opts.Compression,
		RowGroupRows:  s.opts.RowGroupRows,
		BloomColumns:  tableschema.BloomColumns(table),
		ExpectedRows:  g.rows,
		AllStatistics: true,
	})
	if err != nil {
		return err
	}
	m := &merger{s: s, limits: s.mergeLimits, mem: s.mem, schema: arrowSchema, out: w, keys: sortKeys(table, arrowSchema)}
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
	idx := s.FieldIndices(measurementTimeCol)
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
func (s *Store) copyRowByRow(bw *bufio.Writer, table string, g *schemaGroup, paths []string, out *mergedFile) error {
	codec, err := parquetfile.Codec(s.opts.Compression)
	if err != nil {
		return err
	}
	rowGroup := s.opts.RowGroupRows
	if rowGroup <= 0 {
		rowGroup = parquetfile.DefaultRowGroupRows
	}
	opts := []parquet.WriterOption{g.schema, parquet.Compression(codec), parquet.DataPageStatistics(true), parquet.MaxRowsPerRowGroup(rowGroup),
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
	if sortBy := sortColumns(table, g.schema); len(sortBy) > 0 && s.opts.CompactSort {
		// An external merge sort: runs of sortRunRows rows are sorted in
		// memory and spilled to temp files, then merged into the output.
		opts = append(opts, parquet.SortingWriterConfig(
			parquet.SortingColumns(sortBy...),
			parquet.SortingBuffers(parquet.NewFileBufferPool(s.tmpDir, "sort-*.tmp"))))
		w = parquet.NewSortingWriter[any](bw, sortRunRows, opts...)
	} else {
		w = parquet.NewWriter(bw, opts...)
	}
	for _, p := range paths {
		rows, err := copyFile(w, p)
		if err != nil {
			return err
		}
		out.rows += rows
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close merged file: %w", err)
	}
	return bw.Flush()
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
	return fmt.Sprintf("%s-compacted-%s%s", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(r[:]), parquetExt)
}

// swap publishes the merged files: under the flush lock, so no flush adds a
// file to the partition meanwhile, it stages the partition's new contents
// and exchanges the staging folder with the partition folder.
func (s *Store) swap(dir string, merged map[string]bool, outputs []mergedFile) error {
	g := guard{s}
	g.Tree().Lock()
	defer g.Tree().Unlock()
	if err := g.Unfinished(); err != nil {
		return err
	}
	names, err := layout.ParquetFiles(s.fs, dir)
	if err != nil {
		return err
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	staging := filepath.Join(s.sysDir, compactDirName, hex.EncodeToString(r[:]))
	if err := s.fs.MkdirAll(staging, 0o755); err != nil {
		return fmt.Errorf("create staging dir: %w", err)
	}
	// Files the merge did not take (one of a schema, or flushed since)
	// stay, as hard links: the exchange must not hide them.
	for _, n := range names {
		if !merged[n] {
			if err := s.fs.Link(filepath.Join(dir, n), filepath.Join(staging, n)); err != nil {
				return fmt.Errorf("link %s into staging: %w", n, err)
			}
		}
	}
	in := compactIntent{Partition: dir, Staging: staging}
	for _, o := range outputs {
		if err := s.fs.Rename(o.temp, filepath.Join(staging, o.name)); err != nil {
			return fmt.Errorf("stage merged file: %w", err)
		}
		in.Outputs = append(in.Outputs, o.name)
	}
	if err := s.fs.SyncDir(staging); err != nil {
		return fmt.Errorf("sync staging dir: %w", err)
	}
	if err := s.hook("staged"); err != nil {
		return err
	}
	data, err := json.Marshal(in)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(s.fs, filepath.Join(s.sysDir, compactIntentName), data); err != nil {
		return fmt.Errorf("write compaction intent: %w", err)
	}
	if err := s.hook("intent"); err != nil {
		return err
	}
	if err := s.fs.Exchange(staging, dir); err != nil {
		return fmt.Errorf("exchange partition with staging dir: %w", err)
	}
	for _, d := range []string{filepath.Dir(dir), filepath.Dir(staging)} {
		if err := s.fs.SyncDir(d); err != nil {
			return fmt.Errorf("sync after exchange: %w", err)
		}
	}
	if err := s.hook("exchanged"); err != nil {
		return err
	}
	return s.finishCompaction(&in)
}

// finishCompaction removes the staging folder (after the exchange: the old
// files) and the intent.
func (s *Store) finishCompaction(in *compactIntent) error {
	if err := s.fs.RemoveAll(in.Staging); err != nil {
		return fmt.Errorf("remove replaced files: %w", err)
	}
	if err := s.fs.SyncDir(filepath.Dir(in.Staging)); err != nil {
		return fmt.Errorf("sync compact dir: %w", err)
	}
	if err := s.hook("removed"); err != nil {
		return err
	}
	if err := s.fs.Remove(filepath.Join(s.sysDir, compactIntentName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove compaction intent: %w", err)
	}
	return s.fs.SyncDir(s.sysDir)
}

// recoverCompaction settles a compaction a crash interrupted. If the
// partition holds the merged files the exchange happened and the staging
// folder holds the old files; if not, the staging folder holds links and
// the unpublished merge. Either way the staging folder goes. Staging
// folders without an intent never reached the exchange.
func (s *Store) recoverCompaction() error {
	path := filepath.Join(s.sysDir, compactIntentName)
	data, err := s.fs.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read compaction intent: %w", err)
	default:
		var in compactIntent
		if err := json.Unmarshal(data, &in); err != nil {
			return fmt.Errorf("decode compaction intent: %w", err)
		}
		s.log.Info("settling an interrupted compaction", "partition", in.Partition)
		if err := s.finishCompaction(&in); err != nil {
			return err
		}
	}
	dir := filepath.Join(s.sysDir, compactDirName)
	if err := s.fs.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear staging dirs: %w", err)
	}
	// Retention's trash is the other maintenance leftover a crash leaves.
	return layout.EmptyTrash(s.fs, filepath.Join(s.sysDir, trashDirName))
}

func (s *Store) hook(step string) error {
	if s.compactHook == nil {
		return nil
	}
	return s.compactHook(step)
}
