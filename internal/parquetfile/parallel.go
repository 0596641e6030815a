package parquetfile

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A row group's columns may be encoded on several goroutines
// (Options.EncodeWorkers). Column chunks are independent until they are
// written to the file: each worker builds the dictionaries of whole
// columns, then encodes and compresses whole columns into arrow-go's
// buffered row group writer, which keeps a column's pages in memory, and
// the columns are written to the file in their order, each as soon as it
// and every column before it is done. The file is byte for byte the one
// written column by column (TestParallelColumnsWriteTheSameFiles).
//
// It pays only where a flush is what writers wait for. On a 2-core
// machine shared with other work (load average 4-11), where no core was
// idle, encoding every flush this way cost more than it gave: on the Arc
// logs load at 8 writers the writers no longer waited for buffer room,
// but in three A B B A windows the sidecar stored 0.88-0.96x the rows at
// 1.04-1.13x the CPU per row, and at 4 OTLP trace clients, where no flush
// is behind, it took 1.07x the CPU and about 50 MiB more. With a core
// idle it did what it is for: the same rate, request p99 0.24x, the
// writers' buffer waits 41 -> 2-4 s; alone (BenchmarkEncodeParallel, load
// average 3.6) a row group of 131 072 Arc log rows took 0.63x the time at
// 0.91x the CPU. So the sidecar's flush asks for it (-flush-workers, 2 by
// default) only when writers waited for buffer room since the previous
// flush began or wait now (storage's flusher.workersNow), which cut the
// Arc logs request p99 to 0.37x at the same rate, and otherwise encodes
// on one goroutine; compaction never asks (docs/PERFORMANCE.md).

// maxEncodeWorkers bounds the goroutines encoding one row group: each
// holds a zstd encoder and a column's pages at a time.
const maxEncodeWorkers = 4

// encodeWorkers is how many goroutines build the row group's
// dictionaries and encode its columns: Options.EncodeWorkers, at most one
// per CPU the process may use, maxEncodeWorkers and the columns; 1
// (serial) for small row groups or when pqarrow's internals are out of
// reach (known once the first row group started the file: that one's
// dictionaries may still be built in parallel, then its columns are
// written serially).
func (w *Writer) encodeWorkers() int {
	if w.leafBase == nil || w.fw != nil && !w.columnsInReach() {
		return 1
	}
	if forcedWorkers > 0 {
		return min(forcedWorkers, len(w.fields))
	}
	if w.workers <= 1 || w.rows < parallelMinRows {
		return 1
	}
	return min(w.workers, runtime.GOMAXPROCS(0), runtime.NumCPU(), maxEncodeWorkers, len(w.fields))
}

// columnsInReach reports whether workers can write into the started
// file: its row group writer, leaf counter and write context (workerSink).
func (w *Writer) columnsInReach() bool {
	return w.rgw != nil && fileWriterContext(w.fw) != nil
}

// parallelMinRows is the smallest row group encoded in parallel: in
// smaller ones a page writer per column (the serial writer reuses one)
// and handing columns between goroutines cost more CPU than the row
// group's encoding takes wall time (BenchmarkEncode's new-parallel
// against new at 1000 rows: 1.13-1.30x the CPU on the OTLP tables).
const parallelMinRows = 4096

// columnFault, when set, fails the encoding of the columns it returns an
// error for (tests inject faults with it).
var columnFault func(column string) error

// forcedWorkers, when above 0, is the encodeWorkers of every writer, of
// any size and whatever its options (tests set it, whatever the
// machine's CPUs).
var forcedWorkers int

// eachColumn calls f for every column from 0 to n-1, on workers
// goroutines that each take the next column not yet taken.
func eachColumn(n, workers int, f func(c int)) {
	if workers <= 1 {
		for c := range n {
			f(c)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := int(next.Add(1)) - 1; c < n; c = int(next.Add(1)) - 1 {
				f(c)
			}
		}()
	}
	wg.Wait()
}

// planLeaves sets leafBase, the first leaf column of each top-level
// column, or leaves it nil if the leaves counted are not the file's
// (parallel encoding then stays off).
func (w *Writer) planLeaves(columns int) {
	base := make([]int, len(w.fields)+1)
	for c, f := range w.schema.Fields() {
		base[c+1] = base[c] + len(leafTypes(f.Type, nil))
	}
	if base[len(w.fields)] == columns {
		w.leafBase = base
	}
}

// writeColumnsParallel writes the pending rows as one buffered row group
// whose columns workers goroutines encode, taking the next column not yet
// taken. A column's last page is compressed by its worker too; what is
// left for the ordered write (closeInOrder) is the dictionary page, the
// column's metadata and copying its bytes to the file. On an error every
// worker stops after its current column and the error of the first
// column that failed is returned; the file is then unusable.
func (w *Writer) writeColumnsParallel(workers int) error {
	if err := w.fw.NewBufferedRowGroupChecked(); err != nil {
		return fmt.Errorf("start row group: %w", err)
	}
	rgw, ok := (*w.rgw).(file.BufferedRowGroupWriter)
	if !ok {
		return fmt.Errorf("start row group: not a buffered row group writer")
	}
	w.parallelGroups++
	o := &columnOrder{done: make([]bool, len(w.fields)), errs: make([]error, len(w.fields))}
	var wg sync.WaitGroup
	for range workers {
		s, err := w.workerSink(rgw)
		if err != nil {
			o.fail(0, err)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, ok := o.take()
				if !ok {
					return
				}
				err := w.writeColumn(c, s.at(rgw, w.leafBase[c]))
				if err == nil {
					err = w.flushLastPages(rgw, c)
				}
				if err == nil {
					err = o.finish(c, func(c int) error { return w.closeColumn(rgw, c) })
				}
				if err != nil {
					o.fail(c, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return o.err()
}

// columnOrder hands out a row group's columns to the workers and closes
// them in order: a worker that finishes column c marks it done and, if no
// other worker is closing, closes every done column from the next one to
// close on, one at a time, so the file's bytes follow the column order.
type columnOrder struct {
	mu      sync.Mutex
	next    int // the next column to hand out
	closed  int // columns closed, in order
	closing bool
	failed  bool
	done    []bool
	errs    []error // by column
}

// take returns the next column to encode, false when there is none or a
// column failed.
func (o *columnOrder) take() (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.failed || o.next == len(o.done) {
		return 0, false
	}
	o.next++
	return o.next - 1, true
}

// finish marks column c encoded and closes the columns that are ready with
// close, outside the lock, unless another worker is at it. A close that
// fails fails the row group.
func (o *columnOrder) finish(c int, close func(int) error) error {
	o.mu.Lock()
	o.done[c] = true
	if o.closing {
		o.mu.Unlock()
		return nil
	}
	o.closing = true
	for !o.failed && o.closed < len(o.done) && o.done[o.closed] {
		k := o.closed
		o.mu.Unlock()
		err := close(k)
		o.mu.Lock()
		if err != nil {
			// Failed here, before this worker reports it: a worker done
			// meanwhile must not write column k again, or those after it.
			o.failed, o.errs[k] = true, err
			o.closing = false
			o.mu.Unlock()
			return err
		}
		o.closed++
	}
	o.closing = false
	o.mu.Unlock()
	return nil
}

func (o *columnOrder) fail(c int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failed = true
	o.errs[c] = err
}

// err is the error of the first column that failed, nil if none did.
func (o *columnOrder) err() error {
	for _, err := range o.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// workerSink is one worker's way into the row group: a copy of the
// pqarrow FileWriter with a leaf counter and a write context of its own
// (WriteColumnChunked writes the leaves from the counter on, through the
// buffered row group writer, which every copy shares).
type workerSink struct {
	fw     *pqarrow.FileWriter
	colIdx *int
	ctx    context.Context
	sink   columnSink
}

func (w *Writer) workerSink(rgw file.BufferedRowGroupWriter) (*workerSink, error) {
	fw := new(pqarrow.FileWriter)
	*fw = *w.fw
	_, colIdx, ok := fileWriterInternals(fw)
	ctx := fileWriterContext(fw)
	if !ok || ctx == nil {
		return nil, fmt.Errorf("start row group: pqarrow's FileWriter internals out of reach")
	}
	props := pqarrow.NewArrowWriterProperties()
	*ctx = pqarrow.NewArrowWriteContext(context.Background(), &props)
	return &workerSink{fw: fw, colIdx: colIdx, ctx: *ctx}, nil
}

// at returns the sink of the top-level column whose first leaf is base.
func (s *workerSink) at(rgw file.BufferedRowGroupWriter, base int) *columnSink {
	*s.colIdx = base
	next := base
	s.sink.fw, s.sink.colIdx, s.sink.ctx = s.fw, s.colIdx, s.ctx
	s.sink.column = func() (file.ColumnChunkWriter, error) {
		next++
		return rgw.Column(next - 1)
	}
	return &s.sink
}

// flushLastPages compresses the last data page of each leaf of column c,
// as closing it would, unless its values ended on a page's end.
func (w *Writer) flushLastPages(rgw file.BufferedRowGroupWriter, c int) error {
	for leaf := w.leafBase[c]; leaf < w.leafBase[c+1]; leaf++ {
		cw, err := rgw.Column(leaf)
		if err != nil {
			return err
		}
		if f, ok := cw.(interface{ FlushCurrentPage() error }); ok && bufferedValues(cw) {
			if err := f.FlushCurrentPage(); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeColumn closes the leaves of column c: its dictionary page, its
// metadata and its bytes go to the file.
func (w *Writer) closeColumn(rgw file.BufferedRowGroupWriter, c int) error {
	for leaf := w.leafBase[c]; leaf < w.leafBase[c+1]; leaf++ {
		cw, err := rgw.Column(leaf)
		if err == nil {
			err = cw.Close()
		}
		if err != nil {
			return fmt.Errorf("write column %q: %w", w.schema.Field(c).Name, err)
		}
	}
	return nil
}

// bufferedValues reports whether a column writer holds values not yet in a
// page (arrow-go's numBufferedValues, which it does not export: flushing a
// page of none would add an empty page). Out of reach, it says false and
// the page is left for Close.
func bufferedValues(cw file.ColumnChunkWriter) bool {
	v := reflect.ValueOf(cw)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("numBufferedValues")
	return f.IsValid() && f.Kind() == reflect.Int64 && f.Int() > 0
}

// fileWriterContext reaches the write context of a pqarrow.FileWriter,
// nil if it no longer has one (a variable: tests take it out of reach).
var fileWriterContext = func(fw *pqarrow.FileWriter) *context.Context {
	f := reflect.ValueOf(fw).Elem().FieldByName("ctx")
	if !f.IsValid() || f.Type() != reflect.TypeFor[context.Context]() {
		return nil
	}
	return (*context.Context)(unsafe.Pointer(f.UnsafeAddr()))
}
