package storage

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/storage/layout"
)

// flusher turns closed generations into Parquet files. It owns the
// failed flush retried before the next one (pending), flush-intent.json,
// its temp files in tmp/, Parquet's cursor (parquetDone) and the
// partition folders it made durable (madeDirs). It says how far the WAL
// holds Parquet's rows through done, synchronously inside publish before
// the intent goes; it never removes a WAL segment itself, and never
// writes a temp file again once its intent is durable.
type flusher struct {
	fs           FS
	log          *slog.Logger
	compression  string
	rowGroupRows int64
	workers      int // goroutines a flush that writers wait on encodes a file's columns on (workersNow)
	noParquet    bool
	interval     time.Duration
	dir          string
	sysDir       string
	tmpDir       string
	cursors      cursorDir
	// rotates asks the committer for the generation to flush; quit
	// stops the asking.
	rotates chan<- chan *generation
	quit    <-chan struct{}
	trigger chan struct{}
	// published is told the last WAL segment whose rows are in Parquet,
	// once its files are durable and before the intent is removed: the
	// Store trims the WAL there (an error is logged: the segments stay).
	published func(lastSeq uint64) error
	// released gives back the buffer a flushed generation held.
	released func(bytes int64)
	// waits counts the writers' waits for buffer room so far; lastWaits
	// is what the previous flush saw; waiting is how many wait now
	// (workersNow).
	waits     func() int64
	lastWaits int64
	waiting   func() int32

	pending      *pendingFlush // a failed flush, retried before the next one
	madeDirs     map[string]bool
	parquetDone  atomic.Uint64 // last WAL segment whose rows are in Parquet
	parquetFresh bool          // Parquet is new to a directory that had only sinks
}

// flusherConfig is the part of Options the flusher reads; the Store
// builds it (flusherConfigOf).
type flusherConfig struct {
	FS            FS
	Logger        *slog.Logger
	Compression   string
	RowGroupRows  int64
	Workers       int
	NoParquet     bool
	FlushInterval time.Duration
	DataDir       string
}

func newFlusher(cfg flusherConfig, sysDir string, rotates chan<- chan *generation, quit <-chan struct{}) *flusher {
	return &flusher{
		fs:           cfg.FS,
		log:          cfg.Logger,
		compression:  cfg.Compression,
		rowGroupRows: cfg.RowGroupRows,
		workers:      cfg.Workers,
		noParquet:    cfg.NoParquet,
		interval:     cfg.FlushInterval,
		dir:          cfg.DataDir,
		sysDir:       sysDir,
		tmpDir:       filepath.Join(sysDir, tmpDirName),
		cursors:      cursorDir{fs: cfg.FS, dir: filepath.Join(sysDir, sinksDirName)},
		rotates:      rotates,
		quit:         quit,
		trigger:      make(chan struct{}, 1),
		madeDirs:     map[string]bool{},
	}
}

// request asks for a flush soon; it never waits.
func (fl *flusher) request() {
	select {
	case fl.trigger <- struct{}{}:
	default:
	}
}

// done is the last WAL segment whose rows are in Parquet.
func (fl *flusher) done() uint64 { return fl.parquetDone.Load() }

// markDone records that Parquet holds every row of the segments through
// seq, then lets the Store drop the segments every consumer is past. The
// cursor is written even without sinks, so that a sink added later, or a
// restart, knows which segments Parquet has. Only the cursor can fail the
// flush: segments that cannot be dropped now stay for the next trim, and
// failing the flush for them would keep its intent and stop every flush
// after it.
func (fl *flusher) markDone(seq uint64) error {
	if !fl.noParquet && seq > fl.parquetDone.Load() {
		if err := fl.cursors.write(parquetCursor, seq); err != nil {
			return err
		}
		fl.parquetDone.Store(seq)
	}
	if err := fl.published(seq); err != nil {
		fl.log.Error("cannot remove wal segments every consumer has; they stay until a later flush removes them", "error", err)
	}
	return nil
}

// placeFresh starts Parquet after last in a directory that had only
// sinks (loadParquetCursor found no cursor of its own there).
func (fl *flusher) placeFresh(last uint64) error {
	if !fl.parquetFresh {
		return nil
	}
	if err := fl.cursors.write(parquetCursor, last); err != nil {
		return err
	}
	fl.parquetDone.Store(last)
	return nil
}

// forgetDir drops a partition folder that was deleted (retention, a
// drop) from the ones known to exist; tree lock held.
func (fl *flusher) forgetDir(dir string) { delete(fl.madeDirs, dir) }

// release frees the generation of a flush that never finished.
func (fl *flusher) release() {
	if fl.pending != nil {
		fl.pending.gen.release()
	}
}

// abandon drops what the flusher holds the way a crash would.
func (fl *flusher) abandon() { fl.release() }

// prepare writes every partition of gen to a durable temp file and records
// the intent to publish them.
func (fl *flusher) prepare(gen *generation) (*flushIntent, []FlushedFile, error) {
	in := &flushIntent{LastSeq: gen.lastSeq}
	var files []FlushedFile
	keys := make([]partKey, 0, len(gen.parts))
	for k := range gen.parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].dir("") < keys[j].dir("") })
	workers := fl.workersNow()
	for _, k := range keys {
		p := gen.parts[k]
		step, size, err := fl.writePartition(p, gen.lastSeq, workers)
		if err != nil {
			fl.removeTemps(in)
			return nil, nil, fmt.Errorf("flush partition %s: %w", k.dir(""), err)
		}
		in.Files = append(in.Files, step)
		files = append(files, FlushedFile{Database: k.database, Table: k.table, Rows: int64(p.rows), Bytes: size})
	}
	if len(in.Files) > 0 {
		// The temp files' names are durable before the intent that names
		// them: a power loss in the publish must not leave a file renamed
		// and another's temp file gone, which recovery cannot finish (it
		// replays the WAL, and the published file's rows come twice).
		if err := fl.fs.SyncDir(fl.tmpDir); err != nil {
			fl.removeTemps(in)
			return nil, nil, fmt.Errorf("sync tmp dir: %w", err)
		}
		if err := fl.writeIntent(in); err != nil {
			// The intent may be on disk without its directory entry being
			// durable: it must not outlive the temp files it names.
			fl.removeIntent()
			fl.removeTemps(in)
			return nil, nil, err
		}
	}
	return in, files, nil
}

// finish publishes the files of a prepared flush, drops the WAL segments it
// covers and releases the generation's memory.
func (fl *flusher) finish(gen *generation, in *flushIntent) error {
	if err := fl.publish(in); err != nil {
		return err
	}
	fl.released(gen.bytes)
	if gen.rows > 0 {
		fl.log.Info("flushed", "rows", gen.rows, "files", len(in.Files), "wal_segment", in.LastSeq)
	}
	gen.release()
	return nil
}

func (fl *flusher) removeTemps(in *flushIntent) {
	for _, st := range in.Files {
		_ = fl.fs.Remove(st.Temp)
	}
}

// workersNow is how many goroutines this flush encodes a file's columns
// on: fl.workers if writers waited for buffer room since the previous
// flush began or wait now (the flushes are what they wait for, and a core
// that encodes beside this one shortens the wait), otherwise one. Writers
// blocked since before the previous flush began no new wait: a failed
// flush's retry, and the generation flushed right after it, must see
// them too. A flush that keeps up gains nothing from a second core and
// would take it from the requests, for more CPU per row and more memory
// held.
func (fl *flusher) workersNow() int {
	if fl.workers <= 1 || fl.waits == nil {
		return 1
	}
	n := fl.waits()
	behind := n != fl.lastWaits || fl.waiting != nil && fl.waiting() > 0
	fl.lastWaits = n
	if !behind {
		return 1
	}
	return fl.workers
}

// writePartition writes one partition's rows to a durable temp file and
// returns the step that publishes it and the file's size.
func (fl *flusher) writePartition(p *partition, lastSeq uint64, workers int) (publishStep, int64, error) {
	name := fileName(lastSeq)
	step := publishStep{
		Temp:  filepath.Join(fl.tmpDir, name+".tmp"),
		Final: filepath.Join(p.key.dir(fl.dir), name),
	}
	if err := fl.mkdirDurable(filepath.Dir(step.Final)); err != nil {
		return step, 0, err
	}
	f, err := fl.fs.OpenFile(step.Temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return step, 0, fmt.Errorf("create temp file: %w", err)
	}
	cw := &layout.CountingWriter{W: f}
	err = fl.encode(cw, p, workers)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fl.fs.Remove(step.Temp)
		return step, 0, err
	}
	return step, cw.N, nil
}

func (fl *flusher) encode(f io.Writer, p *partition, workers int) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := parquetfile.NewWriter(bw, p.table.Parquet, p.table.Arrow, parquetfile.Options{
		Compression:   fl.compression,
		RowGroupRows:  fl.rowGroupRows,
		BloomColumns:  p.table.BloomColumns,
		ExpectedRows:  int64(p.rows),
		LiteralPages:  true,
		EncodeWorkers: workers,
	})
	if err != nil {
		return err
	}
	for _, c := range p.chunks {
		if err := w.Write(c.rec, c.rows); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write parquet file: %w", err)
	}
	return nil
}

// fileName is unique without coordination: the WAL position orders files of
// one sidecar, the random part keeps sidecars sharing a directory apart.
func fileName(lastSeq uint64) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s-%08d-%s%s", time.Now().UTC().Format("20060102T150405Z"), lastSeq, hex.EncodeToString(r[:]), parquetExt)
}

// mkdirDurable creates dir and makes its entry durable in each parent it
// created, so a published file is not lost with its directory.
func (fl *flusher) mkdirDurable(dir string) error {
	if fl.madeDirs[dir] {
		return nil
	}
	if err := layout.MkdirDurable(fl.fs, dir); err != nil {
		return fmt.Errorf("create partition dir: %w", err)
	}
	fl.madeDirs[dir] = true
	return nil
}

// loadParquetCursor reads Parquet's cursor. Written on first use, so that
// a restart knows which segments Parquet has. In a directory that had only
// sinks, Parquet starts after the segments there: they are the sinks' rows,
// already stored where the operator chose.
func (fl *flusher) loadParquetCursor() error {
	seq, ok, err := fl.cursors.read(parquetCursor)
	if err != nil || ok {
		fl.parquetDone.Store(seq)
		return err
	}
	hadSinks, err := fl.cursors.hasSinks()
	if err != nil {
		return err
	}
	if hadSinks {
		fl.parquetFresh = true // placed by recover once it knows the last segment
		return nil
	}
	return fl.cursors.write(parquetCursor, 0)
}

// dropParquetCursor forgets Parquet under -parquet=false: the sinks are
// then the storage, every acknowledged row reaches them, and keeping WAL
// segments for a Parquet that is off would only fill the disk.
func (fl *flusher) dropParquetCursor() error {
	seq, ok, err := fl.cursors.read(parquetCursor)
	if err != nil || !ok {
		return err
	}
	fl.log.Warn("parquet is off: wal segments after its cursor are no longer kept for it; they go to the sinks only", "parquet_cursor", seq)
	if err := fl.fs.Remove(fl.cursors.path(parquetCursor)); err != nil {
		return fmt.Errorf("remove parquet cursor: %w", err)
	}
	return fl.fs.SyncDir(filepath.Dir(fl.cursors.path(parquetCursor)))
}

func (fl *flusher) flush(files *[]FlushedFile) error {
	if p := fl.pending; p != nil {
		if err := fl.flushPending(p, files); err != nil {
			return err
		}
		fl.pending = nil
	}
	reply := make(chan *generation, 1)
	select {
	case fl.rotates <- reply:
	case <-fl.quit:
		return ErrClosed
	}
	gen := <-reply
	if gen == nil {
		return errors.New("wal rotation failed")
	}
	p := &pendingFlush{gen: gen}
	if err := fl.flushPending(p, files); err != nil {
		fl.pending = p
		return err
	}
	return nil
}

// pendingFlush is a generation on its way to Parquet. Once its intent is
// durable, retries only publish: writing the files again could duplicate
// rows that a partial publish already made visible.
type pendingFlush struct {
	gen    *generation
	intent *flushIntent
	files  []FlushedFile
}

func (fl *flusher) flushPending(p *pendingFlush, files *[]FlushedFile) error {
	if p.intent == nil {
		in, written, err := fl.prepare(p.gen)
		if err != nil {
			return err
		}
		p.intent, p.files = in, written
	}
	if err := fl.finish(p.gen, p.intent); err != nil {
		return err
	}
	*files = append(*files, p.files...)
	return nil
}

// clearTmp removes temp files of flushes that never wrote their intent.
func (fl *flusher) clearTmp() error {
	entries, err := fl.fs.ReadDir(fl.tmpDir)
	if err != nil {
		return fmt.Errorf("list tmp dir: %w", err)
	}
	for _, e := range entries {
		if err := fl.fs.Remove(filepath.Join(fl.tmpDir, e.Name())); err != nil {
			return fmt.Errorf("remove stale temp file: %w", err)
		}
	}
	return nil
}

// loop flushes every interval and when asked to (request), through
// flush: the Store's, which holds the tree lock and tells the Observer.
func (fl *flusher) loop(flush func() error) {
	t := time.NewTicker(fl.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-fl.trigger:
		case <-fl.quit:
			return
		}
		if err := flush(); err != nil {
			fl.log.Error("flush failed; its rows stay in the wal and are retried", "error", err)
		}
	}
}

func (fl *flusher) intentPath() string { return filepath.Join(fl.sysDir, intentName) }

func (fl *flusher) writeIntent(in *flushIntent) error {
	data, err := in.encode(fl.dir)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(fl.fs, fl.intentPath(), data); err != nil {
		return fmt.Errorf("write flush intent: %w", err)
	}
	return nil
}

// unfinished is errPublishUnfinished while that is so; flushMu held.
func (fl *flusher) unfinished() error {
	if fl.pending != nil && fl.pending.intent != nil {
		return errPublishUnfinished
	}
	return nil
}

// removeIntent drops the intent of a flush that did not happen.
func (fl *flusher) removeIntent() {
	if err := fl.fs.Remove(fl.intentPath()); err == nil {
		_ = fl.fs.SyncDir(fl.sysDir)
	}
}

// publish renames every temp file of the intent into place, fsyncs the
// directories it touched, then drops the WAL segments and the intent. It is
// idempotent: a step whose temp file is gone was done before a crash.
func (fl *flusher) publish(in *flushIntent) error {
	dirs := map[string]bool{}
	for _, st := range in.Files {
		err := fl.fs.Rename(st.Temp, st.Final)
		if errors.Is(err, os.ErrNotExist) && fl.exists(st.Temp) {
			// The partition folder was deleted from outside since the
			// flush made it: make it again rather than fail every retry
			// (and every start) on it.
			dir := filepath.Dir(st.Final)
			delete(fl.madeDirs, dir)
			if err = fl.mkdirDurable(dir); err == nil {
				err = fl.fs.Rename(st.Temp, st.Final)
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("publish %s: %w", st.Final, err)
		}
		dirs[filepath.Dir(st.Final)] = true
	}
	for d := range dirs {
		// A folder that is gone holds nothing of this flush any more (its
		// step was done before a crash, then the folder deleted): there is
		// nothing to make durable in it.
		if err := fl.fs.SyncDir(d); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sync partition dir: %w", err)
		}
	}
	if err := fl.markDone(in.LastSeq); err != nil {
		return err
	}
	if err := fl.fs.Remove(fl.intentPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove flush intent: %w", err)
	}
	return fl.fs.SyncDir(fl.sysDir)
}

// recover finishes a flush that a crash interrupted.
func (fl *flusher) recover() error {
	data, err := fl.fs.ReadFile(fl.intentPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read flush intent: %w", err)
	}
	in, err := decodeFlushIntent(data, fl.dir)
	if err != nil {
		return err
	}
	if lost := fl.unpublishable(in); len(lost) > 0 {
		// A step with neither its temp nor its final file cannot be
		// finished. Dropping the WAL segments would lose its rows;
		// replaying them can only repeat rows of steps that were done.
		fl.log.Error("an interrupted flush names files that are gone; its wal segments are replayed instead (rows of its other files may appear twice)",
			"missing", lost, "last_wal_segment", in.LastSeq)
		fl.removeIntent()
		return nil
	}
	fl.log.Info("finishing an interrupted flush", "files", len(in.Files), "last_wal_segment", in.LastSeq)
	return fl.publish(in)
}

// unpublishable returns the final names of steps that have neither file.
func (fl *flusher) unpublishable(in *flushIntent) []string {
	var lost []string
	for _, st := range in.Files {
		if !fl.exists(st.Temp) && !fl.exists(st.Final) {
			lost = append(lost, st.Final)
		}
	}
	return lost
}

func (fl *flusher) exists(path string) bool {
	f, err := fl.fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}
