package compact

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// Compaction rewrites a measurement's files (the flat tables of the Arc
// write API) through the flush's encoder (parquetfile) from Arrow record
// batches, ordered by time, as Arc orders its compacted files. It is an
// external merge sort with bounded memory: the rows are read in batches
// (pqarrow), gathered into runs of at most runBytes of Arrow memory and
// each run sorted in memory; a partition that fits one run is written
// straight from it, a larger one spills its sorted runs to temp Arrow IPC
// files and merges them k ways. On an hour of 7.4 M Arc-protocol spans it
// took 1.26x the CPU of parquet-go's unsorted row-by-row merge (logs:
// 1.3-1.45x) and 345 MiB against 220 MiB, where parquet-go's own sort (its
// SortingWriter) took 2.5x and 1.1 GiB; the file came out 12.7 % smaller
// (logs: 10.7 %; docs/PERFORMANCE.md).
//
// A run file is read back only after its bytes are checked against the
// CRC-32C the merge took while writing it: arrow-go's IPC reader trusts a
// file's metadata, and one flipped byte made it panic (string offsets
// past their data, read while the runs merge) or ask for terabytes (a
// buffer's uncompressed length, the footer schema's field count), a
// fatal error that no recover catches. Either took the sidecar down with
// every compaction of the partition.

// MergeLimits size the merge. Memory is about 2 x RunBytes while a run
// is sorted, and MaxFanIn x SpillBatchRows rows plus MergeChunkRows while
// runs merge.
type MergeLimits struct {
	RunBytes       int64
	SpillBatchRows int64
	MergeChunkRows int
	MaxFanIn       int
}

// DefaultMergeLimits: runs of 32 MiB (about 180 K rows of Arc-protocol
// spans) kept compaction of an hour of 7.4 M spans near 330 MiB of RSS;
// runs of 16 MiB bought no less.
var DefaultMergeLimits = MergeLimits{RunBytes: 32 << 20, SpillBatchRows: 1024, MergeChunkRows: 64 * 1024, MaxFanIn: 128}

// readBatchRows is how many rows pqarrow decodes at a time.
const readBatchRows = 16 * 1024

// spillPattern names the sorted runs in the system tmp folder, which every
// start empties.
const spillPattern = "merge-*.arrows"

// merger writes the rows of one schema group, sorted, into a Parquet writer.
type merger struct {
	c      *Compactor
	limits MergeLimits
	mem    memory.Allocator
	schema *arrow.Schema
	keys   []string // sort columns present in schema; none: file order
	out    *parquetfile.Writer
	spills []sortedRun
}

// sortedRun is a run file and what the merge wrote to it.
type sortedRun struct {
	path string
	size int64
	sum  uint32 // CRC-32C
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errRunDamaged: a run file's bytes are not those the merge wrote.
var errRunDamaged = errors.New("not the bytes written")

func (m *merger) close() {
	for _, r := range m.spills {
		_ = m.c.cfg.FS.Remove(r.path)
	}
}

// mergeFiles reads paths in order and writes their rows, sorted by m.keys.
func (m *merger) mergeFiles(paths []string) (int64, error) {
	var run []arrow.RecordBatch
	var runSize int64
	release := func() {
		for _, r := range run {
			r.Release()
		}
		run, runSize = run[:0], 0
	}
	defer release()
	var rows int64
	for _, p := range paths {
		err := ReadBatches(p, m.mem, func(rec arrow.RecordBatch) error {
			rows += rec.NumRows()
			if len(m.keys) == 0 {
				return m.out.Write(rec, nil)
			}
			rec.Retain()
			run = append(run, rec)
			if runSize += recordBytes(rec); runSize < m.limits.RunBytes {
				return nil
			}
			err := m.spill(run)
			release()
			return err
		})
		if err != nil {
			return rows, err
		}
	}
	if len(m.keys) == 0 || rows == 0 {
		return rows, nil
	}
	if len(m.spills) == 0 {
		sorted, err := m.sortRun(run)
		if err != nil {
			return rows, err
		}
		defer sorted.Release()
		return rows, m.writeTable(sorted)
	}
	if len(run) > 0 {
		if err := m.spill(run); err != nil {
			return rows, err
		}
	}
	if err := m.c.hook("spilled"); err != nil {
		return rows, err
	}
	return rows, m.mergeSpills()
}

// ReadBatches calls fn with each record batch of a Parquet file, its
// timestamps in the contract's unit (an earlier build's nanoseconds are
// converted); fn retains what it keeps.
func ReadBatches(path string, mem memory.Allocator, fn func(arrow.RecordBatch) error) error {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: readBatchRows}, mem)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer rr.Release()
	for rr.Next() {
		rec := schema.StoredTimes(rr.RecordBatch())
		err := fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// recordBytes is the Arrow memory a record batch holds.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += int64(arrayBytes(c.Data()))
	}
	return n
}

func arrayBytes(d arrow.ArrayData) int {
	n := 0
	for _, b := range d.Buffers() {
		if b != nil {
			n += b.Len()
		}
	}
	for _, c := range d.Children() {
		n += arrayBytes(c)
	}
	return n
}

// sortRun returns the rows of run as one table ordered by the sort keys;
// rows with equal keys keep their order.
func (m *merger) sortRun(run []arrow.RecordBatch) (arrow.Table, error) {
	var rows []sortRow
	for _, r := range run {
		rows = appendSortRows(rows, r, m.keys, int64(len(rows)))
	}
	slices.SortFunc(rows, func(a, b sortRow) int {
		for i := range a.key {
			if c := cmp.Compare(a.key[i], b.key[i]); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.idx, b.idx)
	})
	idx := make([]int64, len(rows))
	for i, r := range rows {
		idx[i] = r.idx
	}
	return m.take(run, idx)
}

// maxSortKeys is the most sort columns a table has (metrics: name,
// service, time).
const maxSortKeys = 3

// sortRow is one row's sort key as integers (strings by rank, nulls
// first) and its position.
type sortRow struct {
	key [maxSortKeys]int64
	idx int64
}

// appendSortRows appends rec's rows, numbered from base.
func appendSortRows(rows []sortRow, rec arrow.RecordBatch, keys []string, base int64) []sortRow {
	start := len(rows)
	for i := range rec.NumRows() {
		rows = append(rows, sortRow{idx: base + i})
	}
	k := keysOf(rec, keys)
	for c, col := range k.cols[:min(len(k.cols), maxSortKeys)] {
		var ranks map[string]int64
		if col.str != nil {
			ranks = stringRanks(col.str)
		}
		for i := range rows[start:] {
			r := &rows[start+i]
			switch {
			case col.arr.IsNull(i):
				r.key[c] = math.MinInt64
			case col.str != nil:
				r.key[c] = ranks[col.str.Value(i)]
			default:
				r.key[c] = col.num[i]
			}
		}
	}
	return rows
}

// stringRanks numbers the distinct values of a column in their order, so
// that rows sort by integers. Sort columns of strings are names
// (services, metrics, event types): few distinct values.
func stringRanks(a *array.String) map[string]int64 {
	ranks := map[string]int64{}
	for i := range a.Len() {
		if a.IsValid(i) {
			ranks[a.Value(i)] = 0
		}
	}
	values := slices.Sorted(maps.Keys(ranks))
	for i, v := range values {
		ranks[v] = int64(i)
	}
	return ranks
}

// take gathers rows idx (indices into the records one after the other)
// into one table.
func (m *merger) take(recs []arrow.RecordBatch, idx []int64) (arrow.Table, error) {
	cols := make([]arrow.Array, m.schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(recs))
	for i := range cols {
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := gather(parts, idx, m.mem)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	rec := array.NewRecordBatch(m.schema, cols, int64(len(idx)))
	defer rec.Release()
	return array.NewTableFromRecords(m.schema, []arrow.RecordBatch{rec}), nil
}

// writeTable hands a table's rows to the output writer.
func (m *merger) writeTable(tbl arrow.Table) error {
	tr := array.NewTableReader(tbl, int64(m.limits.MergeChunkRows))
	defer tr.Release()
	for tr.Next() {
		if err := m.out.Write(tr.RecordBatch(), nil); err != nil {
			return err
		}
	}
	return tr.Err()
}

// spill sorts run and writes it to a temp IPC file in batches of
// spillBatchRows, the unit the merge reads.
func (m *merger) spill(run []arrow.RecordBatch) error {
	sorted, err := m.sortRun(run)
	if err != nil {
		return err
	}
	defer sorted.Release()
	r, err := m.writeRun(func(w io.Writer) error { return writeIPC(w, sorted, m.limits.SpillBatchRows) })
	if r.path != "" {
		m.spills = append(m.spills, r)
	}
	if err != nil {
		return fmt.Errorf("write sorted run: %w", err)
	}
	return nil
}

// writeRun creates a run file, writes it with write and returns it with
// its size and checksum; its path is empty if it could not be created.
func (m *merger) writeRun(write func(io.Writer) error) (sortedRun, error) {
	f, err := os.CreateTemp(m.c.tmpDir, spillPattern)
	if err != nil {
		return sortedRun{}, fmt.Errorf("create sorted run: %w", err)
	}
	w := &runWriter{w: f}
	err = write(w)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return sortedRun{path: f.Name(), size: w.size, sum: w.sum}, err
}

// runWriter counts and checksums what it writes.
type runWriter struct {
	w    io.Writer
	size int64
	sum  uint32
}

func (w *runWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.sum = crc32.Update(w.sum, castagnoli, p[:n])
	w.size += int64(n)
	return n, err
}

// checkRun reads f, the file of r, whole: its size and checksum must be
// those written.
func checkRun(f *os.File, r sortedRun) error {
	h := crc32.New(castagnoli)
	n, err := io.Copy(h, f)
	if err != nil {
		return err
	}
	if n != r.size || h.Sum32() != r.sum {
		return fmt.Errorf("%w (%d bytes, CRC-32C %08x; wrote %d bytes, %08x)", errRunDamaged, n, h.Sum32(), r.size, r.sum)
	}
	return nil
}

func writeIPC(w io.Writer, tbl arrow.Table, batchRows int64) error {
	iw, err := ipc.NewFileWriter(w, ipc.WithSchema(tbl.Schema()), ipc.WithLZ4())
	if err != nil {
		return err
	}
	tr := array.NewTableReader(tbl, batchRows)
	defer tr.Release()
	for tr.Next() {
		if err := iw.Write(tr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := tr.Err(); err != nil {
		return err
	}
	return iw.Close()
}

// mergeSpills merges the sorted runs, first maxFanIn at a time into longer
// runs while there are more than maxFanIn, then into the output.
func (m *merger) mergeSpills() error {
	for len(m.spills) > m.limits.MaxFanIn {
		in := m.spills[:m.limits.MaxFanIn]
		merged, err := m.writeRun(func(w io.Writer) error {
			iw, err := ipc.NewFileWriter(w, ipc.WithSchema(m.schema), ipc.WithLZ4())
			if err != nil {
				return err
			}
			if err := m.mergeRuns(in, func(rec arrow.RecordBatch) error { return iw.Write(rec) }); err != nil {
				return err
			}
			return iw.Close()
		})
		if merged.path == "" {
			return err
		}
		for _, r := range in {
			_ = m.c.cfg.FS.Remove(r.path)
		}
		// First, where its runs were: rows with equal times keep file order.
		m.spills = append([]sortedRun{merged}, m.spills[m.limits.MaxFanIn:]...)
		if err != nil {
			return fmt.Errorf("merge sorted runs: %w", err)
		}
	}
	return m.mergeRuns(m.spills, func(rec arrow.RecordBatch) error { return m.out.Write(rec, nil) })
}

// mergeRuns merges sorted run files k ways and hands the rows, in order,
// to emit in record batches of up to mergeChunkRows.
func (m *merger) mergeRuns(runs []sortedRun, emit func(arrow.RecordBatch) error) error {
	var h cursorHeap
	defer func() {
		for _, c := range h.all {
			c.close()
		}
	}()
	for i, r := range runs {
		c, err := openCursor(r, i, m.mem, m.keys)
		if err != nil {
			return err
		}
		h.all = append(h.all, c)
		if c.rec != nil {
			h.live = append(h.live, c)
		}
	}
	heap.Init(&h)
	var ch mergeChunk
	defer ch.reset(h.all)
	for h.Len() > 0 {
		c := h.live[0]
		ch.take(c)
		if err := c.advance(); err != nil {
			return err
		}
		if c.rec == nil {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if len(ch.rows) == m.limits.MergeChunkRows {
			if err := m.emitChunk(&ch, h.all, emit); err != nil {
				return err
			}
		}
	}
	if len(ch.rows) > 0 {
		return m.emitChunk(&ch, h.all, emit)
	}
	return nil
}

// emitChunk gathers a chunk's rows, in merge order, into one table and
// hands it on.
func (m *merger) emitChunk(ch *mergeChunk, cursors []*cursor, emit func(arrow.RecordBatch) error) error {
	defer ch.reset(cursors)
	recs := make([]arrow.RecordBatch, len(ch.segs))
	base := make([]int64, len(ch.segs))
	var n int64
	for i, s := range ch.segs {
		recs[i] = s.rec.NewSlice(int64(s.first), int64(s.first+s.n))
		base[i] = n
		n += int64(s.n)
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	idx := make([]int64, len(ch.rows))
	for i, r := range ch.rows {
		idx[i] = base[r.seg] + int64(r.row)
	}
	taken, err := m.take(recs, idx)
	if err != nil {
		return err
	}
	defer taken.Release()
	tr := array.NewTableReader(taken, int64(m.limits.MergeChunkRows))
	defer tr.Release()
	for tr.Next() {
		if err := emit(tr.RecordBatch()); err != nil {
			return err
		}
	}
	return tr.Err()
}

// mergeChunk is the next rows of the merge: each segment is consecutive rows of
// one cursor's batch, and rows lists (segment, row in segment) in order.
type mergeChunk struct {
	segs []segment
	rows []chunkRow
}

type segment struct {
	rec      arrow.RecordBatch
	first, n int
}

type chunkRow struct{ seg, row int32 }

func (ch *mergeChunk) take(c *cursor) {
	if c.seg < 0 {
		c.rec.Retain()
		ch.segs = append(ch.segs, segment{rec: c.rec, first: c.row})
		c.seg = len(ch.segs) - 1
	}
	s := &ch.segs[c.seg]
	ch.rows = append(ch.rows, chunkRow{int32(c.seg), int32(s.n)})
	s.n++
}

func (ch *mergeChunk) reset(cursors []*cursor) {
	for _, s := range ch.segs {
		s.rec.Release()
	}
	ch.segs, ch.rows = ch.segs[:0], ch.rows[:0]
	for _, c := range cursors {
		c.seg = -1
	}
}

// cursor walks one sorted run file batch by batch.
type cursor struct {
	f    *os.File
	r    *ipc.FileReader
	id   int // tie-break: earlier runs first, so equal keys keep file order
	next int
	rec  arrow.RecordBatch
	keys rowKeys
	row  int
	seg  int // rec's segment in the current chunk, or -1
}

func openCursor(run sortedRun, id int, mem memory.Allocator, keys []string) (*cursor, error) {
	f, err := os.Open(run.path)
	if err != nil {
		return nil, fmt.Errorf("open sorted run: %w", err)
	}
	if err := checkRun(f, run); err != nil {
		f.Close()
		return nil, fmt.Errorf("check sorted run %s: %w", run.path, err)
	}
	r, err := ipc.NewFileReader(f, ipc.WithAllocator(mem))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open sorted run: %w", err)
	}
	c := &cursor{f: f, r: r, id: id, seg: -1}
	c.keys.names = keys
	if err := c.load(); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// load moves to the next non-empty batch; rec is nil at the end.
func (c *cursor) load() error {
	if c.rec != nil {
		c.rec.Release()
		c.rec = nil
	}
	for c.next < c.r.NumRecords() {
		rec, err := c.r.RecordBatchAt(c.next)
		if err != nil {
			return fmt.Errorf("read sorted run: %w", err)
		}
		c.next++
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		c.rec, c.row, c.seg = rec, 0, -1
		c.keys = keysOf(rec, c.keys.names)
		return nil
	}
	return nil
}

func (c *cursor) advance() error {
	c.row++
	if c.row < int(c.rec.NumRows()) {
		return nil
	}
	return c.load()
}

func (c *cursor) close() {
	if c.rec != nil {
		c.rec.Release()
		c.rec = nil
	}
	c.r.Close()
	c.f.Close()
}

type cursorHeap struct {
	all  []*cursor
	live []*cursor
}

func (h *cursorHeap) Len() int { return len(h.live) }
func (h *cursorHeap) Less(i, j int) bool {
	a, b := h.live[i], h.live[j]
	if c := compareRows(&a.keys, a.row, &b.keys, b.row); c != 0 {
		return c < 0
	}
	return a.id < b.id
}
func (h *cursorHeap) Swap(i, j int) { h.live[i], h.live[j] = h.live[j], h.live[i] }
func (h *cursorHeap) Push(x any)    { h.live = append(h.live, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.live[len(h.live)-1]
	h.live = h.live[:len(h.live)-1]
	return c
}

// rowKeys are the sort columns of one record batch, read without boxing.
type rowKeys struct {
	names []string
	cols  []keyColumn
}

// keyColumn is one sort column: strings or 64-bit integers (timestamps).
type keyColumn struct {
	str *array.String
	num []int64
	arr arrow.Array
}

func keysOf(rec arrow.RecordBatch, names []string) rowKeys {
	k := rowKeys{names: names}
	for _, name := range names {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			continue
		}
		arr := rec.Column(idx[0])
		col := keyColumn{arr: arr}
		switch a := arr.(type) {
		case *array.String:
			col.str = a
		case *array.Timestamp:
			col.num = arrow.Int64Traits.CastFromBytes(arrow.TimestampTraits.CastToBytes(a.TimestampValues()))
		case *array.Int64:
			col.num = a.Int64Values()
		default:
			continue // not a type rows are ordered by
		}
		k.cols = append(k.cols, col)
	}
	return k
}

// compareRows orders row i of a against row j of b, nulls first.
func compareRows(a *rowKeys, i int, b *rowKeys, j int) int {
	for c := range a.cols {
		x, y := &a.cols[c], &b.cols[c]
		xn, yn := x.arr.IsNull(i), y.arr.IsNull(j)
		if xn || yn {
			if xn != yn {
				if xn {
					return -1
				}
				return 1
			}
			continue
		}
		var r int
		if x.str != nil {
			r = cmp.Compare(x.str.Value(i), y.str.Value(j))
		} else {
			r = cmp.Compare(x.num[i], y.num[j])
		}
		if r != 0 {
			return r
		}
	}
	return 0
}
