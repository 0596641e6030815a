package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/storage/compact"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// Options configure a Store. Zero values take the defaults below.
type Options struct {
	DataDir string
	// Compression of Parquet files: zstd (default), snappy or none.
	Compression string
	// FlushInterval bounds how long an acknowledged row waits before it is
	// in a Parquet file.
	FlushInterval time.Duration
	// FlushBytes starts a flush early once this much is buffered.
	FlushBytes int64
	// MaxBufferBytes is the ceiling of buffered data (the generation being
	// filled plus the one being flushed); past it Append waits up to
	// BufferWait for a flush to make room, then answers ErrBackpressure
	// instead of growing.
	MaxBufferBytes int64
	// BufferWait is how long a write that finds the buffer full waits for
	// a flush to make room before it is refused; 0 is DefaultBufferWait,
	// a negative value refuses at once.
	BufferWait   time.Duration
	RowGroupRows int64
	// FlushWorkers is how many goroutines a flush may encode a file's
	// columns on (parquetfile's Options.EncodeWorkers) when writers waited
	// for buffer room since the previous flush began or wait now;
	// otherwise, and with 0 or 1, one after the other.
	FlushWorkers int
	// DedupWindow is how long batch IDs are remembered to drop retried
	// copies of batches already stored, counted in the sidecar's running
	// time (down time does not age them).
	DedupWindow time.Duration
	// Clock is what the dedup window counts running time on; nil is
	// time.Now (tests move it).
	Clock     func() time.Time
	Logger    *slog.Logger
	FS        FS
	Allocator memory.Allocator
	// Observer sees commits and flushes (metrics); nil sees nothing.
	Observer Observer
	// CompactInterval runs retention and then compaction of partitions
	// whose hour ended CompactMinAge ago; 0 runs neither (Compact and
	// ApplyRetention can still be called).
	CompactInterval time.Duration
	CompactMinAge   time.Duration
	// CompactSort orders a compacted OTLP file's rows by the table's sort
	// columns. Off by default: on the load harness's data it made
	// compaction five times slower and files 50 % larger, for no faster
	// query (docs/PERFORMANCE.md); data with many services may differ.
	// Measurements (the Arc write API's tables) are always ordered by
	// time: their merge sorts for 1.3-1.45x the CPU of an unsorted one,
	// and their files shrink 11-13 %.
	CompactSort bool
	Retention   Retention
	// Sinks get every acknowledged row besides the Parquet files (or, with
	// NoParquet, instead of them).
	Sinks []Sink
	// NoParquet writes no Parquet files; the sinks are the storage.
	NoParquet bool
	// MaxWALBytes bounds the WAL's records (wal.WAL.Bytes; the directory
	// takes up to twice that, plus the reused files). A sink that is down
	// or slow holds segments back; past the bound Append answers
	// ErrBackpressure.
	MaxWALBytes int64
	// SinkDrainTimeout is how long Close waits for the sinks to store the
	// last segments; what they miss stays in the WAL for the next start.
	SinkDrainTimeout time.Duration
	// MinFreeDisk is the free space on the data directory's file system
	// below which a write waits up to BufferWait for a flush to free some,
	// then is refused with ErrDiskLow: flushes, which are never refused,
	// need it to drain the WAL into Parquet. 0 is DefaultMinFreeDisk,
	// negative keeps no floor.
	MinFreeDisk int64
	// DiskFree reads the free space; nil is StatfsFree (tests fill the
	// disk with it).
	DiskFree DiskFree
	// WALRepair lets start-up drop a damaged WAL record (logging what it
	// drops, counted by WALRepaired) instead of stopping with a
	// *wal.CorruptionError.
	WALRepair bool
}

// Defaults.
const (
	DefaultFlushInterval  = 10 * time.Second
	DefaultFlushBytes     = 32 << 20
	DefaultMaxBufferBytes = 128 << 20
	// DefaultBufferWait covers a few flushes of a full generation (0.25-0.5
	// s each at a million rows a second on 2 cores) and stays far below
	// clients' timeouts (the exporter's is 30 s), so a write past the
	// ceiling is refused only when the flush does not free room at all.
	DefaultBufferWait  = 2 * time.Second
	DefaultMaxWALBytes = 4 << 30
	defaultSinkDrain   = 10 * time.Second
	// maxBatchHeader bounds what a batch adds to its record besides its
	// IPC stream (names of at most 64 bytes, ID, lengths).
	maxBatchHeader = 256
)

// Store is the durable storage engine of the sidecar.
type Store struct {
	opts   Options
	fs     FS
	log    *slog.Logger
	mem    memory.Allocator
	dir    string
	sysDir string
	tmpDir string
	wal    *walState
	dedup  *dedup

	quit chan struct{}
	wg   sync.WaitGroup

	commit  *committer
	flushMu sync.Mutex
	flusher *flusher

	compactMu sync.Mutex // guard's Maint
	guard     guard
	compactor *compact.Compactor
	retention *retention
	lock      dirLock

	sinks      *sinkSet
	trimMu     sync.Mutex
	trimmed    uint64 // segments through this one are gone; under trimMu
	recovering bool
}

// Open recovers the data directory (finishing an interrupted flush and
// replaying the WAL) and starts the store.
func Open(opts Options) (*Store, error) {
	opts = withDefaults(opts)
	if _, err := parquetfile.Codec(opts.Compression); err != nil {
		return nil, err
	}
	if opts.NoParquet && len(opts.Sinks) == 0 {
		return nil, errors.New("no storage: Parquet is off and no sink is configured")
	}
	s := &Store{
		opts:   opts,
		fs:     opts.FS,
		log:    opts.Logger,
		mem:    opts.Allocator,
		dir:    opts.DataDir,
		sysDir: filepath.Join(opts.DataDir, systemDirName),
		quit:   make(chan struct{}),
		dedup:  newDedup(opts.DedupWindow, opts.Clock),
	}
	s.tmpDir = filepath.Join(s.sysDir, tmpDirName)
	s.guard = guard{maint: &s.compactMu, tree: &s.flushMu, unfinished: func() error { return s.flusher.unfinished() }}
	s.compactor = compact.New(compactConfig(s))
	s.wal = &walState{dir: filepath.Join(s.sysDir, walDirName), fs: s.fs, log: s.log, repair: opts.WALRepair,
		lost: func(seq uint64) bool { return !opts.NoParquet && seq > s.flusher.done() || seq > s.sinks.low() }}
	s.sinks = newSinkSet(sinkConfigOf(opts), s.sysDir, s.wal.dir, s.quit, func() error { return s.trimWAL(s.trimPoint()) })
	s.commit = newCommitter(committerConfigOf(opts), s.wal, s.dedup, s.sinks, s.quit)
	s.flusher = newFlusher(flusherConfigOf(opts), s.sysDir, s.commit.rotates, s.quit)
	s.retention = newRetention(s)
	s.flusher.published = func(uint64) error { return s.trimWAL(s.trimPoint()) }
	s.flusher.released = s.commit.released
	s.flusher.waits = s.commit.waits.Load
	s.flusher.waiting = s.commit.waiting.Load
	s.commit.flusher = s.flusher
	lock, err := lockDir(s.fs, s.sysDir)
	if err != nil {
		s.commit.abandon()
		return nil, err
	}
	s.lock = lock
	if _, err := s.FreeDisk(); err != nil && opts.MinFreeDisk >= 0 {
		s.log.Warn("cannot read the free space of the data directory's file system: no write is refused for want of it (-min-free-disk)", "error", err)
	}
	if err := s.recover(); err != nil {
		s.commit.abandon()
		s.lock.release()
		return nil, err
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.commit.commitLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.flusher.loop(s.Flush)
	}()
	if opts.CompactInterval > 0 {
		s.wg.Add(1)
		go s.maintainLoop()
	}
	s.sinks.start()
	return s, nil
}

// compactConfig is the compactor of s's directory and options; its runs
// are reported to the Observer on the goroutine that ran them.
func compactConfig(s *Store) compact.Config {
	return compact.Config{
		FS:           s.fs,
		DataDir:      s.dir,
		Logger:       s.log,
		Mem:          s.mem,
		Compression:  s.opts.Compression,
		RowGroupRows: s.opts.RowGroupRows,
		Sort:         s.opts.CompactSort,
		Guard:        s.guard,
		Report:       s.opts.Observer.Compacted,
	}
}

// newRetention is the retention of s's directory.
// committerConfigOf, flusherConfigOf and sinkConfigOf hand each room
// only the Options it reads, so no room depends on Options.
func committerConfigOf(o Options) committerConfig {
	return committerConfig{
		Logger:         o.Logger,
		Allocator:      o.Allocator,
		Observer:       o.Observer,
		NoParquet:      o.NoParquet,
		FlushBytes:     o.FlushBytes,
		MaxBufferBytes: o.MaxBufferBytes,
		MaxWALBytes:    o.MaxWALBytes,
		BufferWait:     o.BufferWait,
		DataDir:        o.DataDir,
		MinFreeDisk:    o.MinFreeDisk,
		DiskFree:       o.DiskFree,
	}
}

func flusherConfigOf(o Options) flusherConfig {
	return flusherConfig{
		FS:            o.FS,
		Logger:        o.Logger,
		Compression:   o.Compression,
		RowGroupRows:  o.RowGroupRows,
		Workers:       o.FlushWorkers,
		NoParquet:     o.NoParquet,
		FlushInterval: o.FlushInterval,
		DataDir:       o.DataDir,
	}
}

func sinkConfigOf(o Options) sinkConfig {
	return sinkConfig{
		FS:               o.FS,
		Logger:           o.Logger,
		Allocator:        o.Allocator,
		Observer:         o.Observer,
		NoParquet:        o.NoParquet,
		SinkDrainTimeout: o.SinkDrainTimeout,
		Sinks:            o.Sinks,
	}
}

func newRetention(s *Store) *retention {
	return &retention{fs: s.fs, dir: s.dir, sysDir: s.sysDir, log: s.log, guard: s.guard,
		forget: s.flusher.forgetDir, retired: s.opts.Observer.Retired}
}

func withDefaults(o Options) Options {
	if o.DataDir == "" {
		o.DataDir = "data"
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = DefaultFlushBytes
	}
	if o.MaxBufferBytes <= 0 {
		o.MaxBufferBytes = DefaultMaxBufferBytes
	}
	if o.BufferWait == 0 {
		o.BufferWait = DefaultBufferWait
	}
	if o.MinFreeDisk == 0 {
		o.MinFreeDisk = DefaultMinFreeDisk
	}
	if o.DiskFree == nil {
		o.DiskFree = StatfsFree
	}
	if o.DedupWindow <= 0 {
		o.DedupWindow = DefaultDedupWindow
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = OSFS{}
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.MaxWALBytes <= 0 {
		o.MaxWALBytes = DefaultMaxWALBytes
	}
	if o.SinkDrainTimeout <= 0 {
		o.SinkDrainTimeout = defaultSinkDrain
	}
	return o
}

func (s *Store) recover() error {
	for _, d := range []string{s.wal.dir, s.tmpDir, filepath.Join(s.sysDir, sinksDirName)} {
		if err := layout.MkdirDurable(s.fs, d); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	// Parquet's cursor is read even without sinks: a directory a sink used
	// may hold segments that are in Parquet already (a sidecar restarted
	// without its sink, `arcstore compact`), and they must not replay.
	loadParquet := s.flusher.loadParquetCursor
	if s.opts.NoParquet {
		loadParquet = s.flusher.dropParquetCursor
	}
	if err := loadParquet(); err != nil {
		return err
	}
	if err := s.sinks.load(); err != nil {
		return err
	}
	if err := s.dedup.load(s.fs, s.sysDir); err != nil {
		// Losing the IDs can only let a retried batch in twice; refusing to
		// start would lose everything. Say so loudly and go on.
		s.log.Error("cannot read the batch ids of recent writes; retries of batches stored before this start may be duplicated", "error", err)
	}
	s.recovering = true
	if err := s.flusher.recover(); err != nil {
		return err
	}
	if err := s.compactor.Recover(); err != nil {
		return err
	}
	// Retention's trash is the other maintenance leftover a crash leaves.
	if err := s.retention.recover(); err != nil {
		return err
	}
	if err := s.flusher.clearTmp(); err != nil {
		return err
	}
	seqs, err := wal.Segments(s.fs, s.wal.dir)
	if err != nil {
		return err
	}
	// Segments that only sinks still need are in Parquet already: they are
	// not replayed, but their batch IDs are remembered.
	last := max(s.flusher.done(), s.sinks.high())
	if len(seqs) > 0 {
		last = max(last, seqs[len(seqs)-1])
	}
	if err := s.flusher.placeFresh(last); err != nil {
		return err
	}
	replayed := 0
	counted, err := wal.Replay(s.wal.options(), seqs, func(seq uint64, _ int64, payload []byte) error {
		entries, err := decodePayload(payload)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if !s.opts.NoParquet && seq <= s.flusher.done() {
				s.commit.rememberID(e)
				continue
			}
			replayed++
			if err := s.commit.replayEntry(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if replayed > 0 {
		s.log.Info("replayed the write-ahead log", "segments", len(seqs), "batches", replayed, "rows", s.commit.gen.rows)
		s.flusher.request()
	}
	s.commit.gen.lastSeq = last
	s.trimmed = last
	if len(seqs) > 0 {
		s.trimmed = seqs[0] - 1
	}
	if err := s.sinks.placeFresh(seqs, last); err != nil {
		return err
	}
	opts := s.wal.options()
	opts.Counted = counted
	w, err := wal.Open(opts, last+1)
	if err != nil {
		return err
	}
	s.wal.WAL = w
	s.recovering = false
	if err := s.trimWAL(s.trimPoint()); err != nil {
		// The segments stay, so nothing is lost; the next trim retries.
		s.log.Error("cannot remove wal segments every consumer has", "error", err)
	}
	return nil
}

// trimPoint is the last segment every consumer has, including those this
// start does not run.
func (s *Store) trimPoint() uint64 {
	p := s.sinks.low()
	if !s.opts.NoParquet {
		p = min(p, s.flusher.done())
	}
	return min(p, s.sinks.closed())
}

// trimWAL drops the segments through seq. The batch IDs they carry are
// saved first, so that a retry of one of their batches is still known.
func (s *Store) trimWAL(through uint64) error {
	s.trimMu.Lock()
	defer s.trimMu.Unlock()
	// While recovering, the IDs of the segments are not all read yet;
	// recovery trims once at its end.
	if s.recovering || through <= s.trimmed {
		return nil
	}
	if err := s.dedup.save(s.fs, s.sysDir); err != nil {
		return err
	}
	if err := s.wal.RemoveThrough(through); err != nil {
		return err
	}
	s.trimmed = through
	return nil
}

// Append makes a validated record batch durable: when it returns nil the
// batch is in the fsynced WAL and will be in Parquet exactly once, whatever
// crashes later. ipc is the batch's Arrow IPC stream, rec its decoded form;
// Append keeps its own reference to rec.
//
// id identifies the batch's content (NewBatchID); a batch whose id was
// stored within the dedup window is acknowledged without a second copy.
// NoDedup turns that off, for protocols where equal content is a new write.
func (s *Store) Append(ctx context.Context, id BatchID, database string, t *Table, ipc []byte, rec arrow.RecordBatch) error {
	return s.AppendAll(ctx, []Batch{{ID: id, Database: database, Table: t, IPC: ipc, Rec: rec}})
}

// AppendAll makes several batches durable together: they share one WAL
// commit, so either all are stored or none is (a request that spans
// tables is never half kept). A request that finds the buffer full waits
// for a flush to make room (Options.BufferWait).
func (s *Store) AppendAll(ctx context.Context, batches []Batch) error {
	var size int64
	for _, b := range batches {
		size += int64(len(b.IPC))
	}
	if size > wal.MaxRecordSize-int64(len(batches))*maxBatchHeader {
		// Replay would take a longer record for a corrupt length.
		return fmt.Errorf("request of %d bytes is larger than one wal record (%d)", size, wal.MaxRecordSize)
	}
	if size > s.opts.MaxBufferBytes {
		// No flush can make room for it (CheckFits tells callers it never
		// fits).
		return ErrBackpressure
	}
	var giveUp <-chan time.Time
	for {
		// Taken before the check: a flush that frees room after it wakes
		// this request even if it ends before the wait begins.
		room := s.commit.room.next()
		full, err := s.commit.appendAll(ctx, batches, size)
		if full == nil {
			return err
		}
		if s.opts.BufferWait < 0 {
			return full
		}
		if giveUp == nil {
			t := time.NewTimer(s.opts.BufferWait)
			defer t.Stop()
			giveUp = t.C
		}
		if err := s.commit.waitForRoom(ctx, room, giveUp, full); err != nil {
			return err
		}
	}
}

// maintainLoop applies retention and compacts closed partitions on a
// schedule. Errors are logged: the data stays as it was.
func (s *Store) maintainLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.opts.CompactInterval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.quit
		cancel()
	}()
	for {
		select {
		case <-t.C:
		case <-s.quit:
			return
		}
		if _, err := s.ApplyRetention(time.Now(), s.opts.Retention); err != nil {
			s.log.Error("retention failed", "error", err)
		}
		if err := s.DiskRoom(); err != nil {
			// A merge holds a partition twice until it ends: the room
			// left is the flushes'.
			s.log.Warn("compaction skipped while the disk is nearly full", "error", err)
			continue
		}
		if _, err := s.Compact(ctx, s.opts.CompactMinAge); err != nil && ctx.Err() == nil {
			s.log.Error("compaction failed; the partition keeps its files", "error", err)
		}
	}
}

// ApplyRetention deletes every partition whose hour ended longer ago than
// its table's retention, and returns how many it deleted. It runs under the
// compaction and flush locks, so it never races a compaction's swap or a
// flush's publish.
func (s *Store) ApplyRetention(now time.Time, r Retention) (int, error) {
	return s.retention.apply(now, r)
}

// Compact merges the files of every partition whose hour ended at least
// minAge ago, and rewrites the files of earlier builds (nanosecond
// timestamps, schema.StoredParquet) in any partition, so that every engine
// reads the whole tree. Flushes wait while a partition is swapped, not
// while it is merged.
func (s *Store) Compact(ctx context.Context, minAge time.Duration) (CompactStats, error) {
	return s.compactor.Run(ctx, minAge)
}

// Flush writes every buffered row to Parquet.
func (s *Store) Flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	start := time.Now()
	var files []FlushedFile
	err := s.flusher.flush(&files)
	if err != nil || len(files) > 0 {
		s.opts.Observer.Flushed(Flush{Duration: time.Since(start), Files: files, Err: err})
	}
	return err
}

// Close stops accepting batches, flushes every buffered row to Parquet and
// releases the store.
func (s *Store) Close() error {
	s.commit.closing.Store(true)
	s.commit.room.broadcast() // writers waiting for room learn that none will come
	s.commit.closeMu.Lock()   // waits for in-flight Appends
	s.commit.closeMu.Unlock()
	err := s.Flush()
	s.sinks.drain()
	close(s.quit)
	s.sinks.stop()
	s.wg.Wait()
	s.sinks.closeSinks()
	s.flusher.release()
	if cerr := s.wal.Close(); err == nil {
		err = cerr
	}
	s.lock.release()
	return err
}

// LegacyBatchIDs reports whether the store still remembers batch IDs that
// an earlier version made (LegacyBatchID): until they leave the dedup
// window, a receiver sets Batch.LegacyID so that a retry of a batch stored
// before an upgrade is still known.
func (s *Store) LegacyBatchIDs() bool { return s.dedup.hasLegacy() }

// Buffered returns the bytes of acknowledged batches not yet in Parquet.
func (s *Store) Buffered() int64 { return s.commit.buffered.Load() }

// BufferWaited returns how long writes have waited in all for buffer room
// or, under the disk floor, for free space.
func (s *Store) BufferWaited() time.Duration { return time.Duration(s.commit.waited.Load()) }

// Ready reports whether the store accepts batches.
func (s *Store) Ready() bool { return !s.commit.closing.Load() }

// WALRepaired returns how many damaged WAL records the repair at start-up
// (Options.WALRepair) dropped before every consumer had them, and the
// rows of those whose payload could still be read, by table.
func (s *Store) WALRepaired() (records int, rows []DroppedRows) {
	for k, n := range s.wal.repaired.rows {
		rows = append(rows, DroppedRows{Database: k[0], Table: k[1], Rows: n})
	}
	return s.wal.repaired.records, rows
}

// MaxWALBytes is the configured ceiling of the WAL on disk.
func (s *Store) MaxWALBytes() int64 { return s.opts.MaxWALBytes }

// MaxBufferBytes is the configured ceiling of buffered bytes.
func (s *Store) MaxBufferBytes() int64 { return s.opts.MaxBufferBytes }

// WALStats returns the number of WAL segments and the bytes of their
// records (recycled segment files hold more on disk: see wal.WAL.Bytes).
func (s *Store) WALStats() (segments int, bytes int64, err error) { return s.wal.stats() }

// FreeDisk returns the free bytes on the data directory's file system.
func (s *Store) FreeDisk() (int64, error) { return s.opts.DiskFree(s.dir) }

// MinFreeDisk is the configured floor of free space; negative: none.
func (s *Store) MinFreeDisk() int64 { return s.opts.MinFreeDisk }

// DiskRoom returns why writes are refused for want of disk space (an
// ErrDiskLow), or nil. /ready reports it.
func (s *Store) DiskRoom() error { return s.commit.disk.check(0) }

// Writable checks that the store takes writes: its WAL is not poisoned by
// a failed write it could not undo, and the data directory takes a new
// file.
func (s *Store) Writable() error {
	if err := s.wal.Err(); err != nil {
		return err
	}
	p := filepath.Join(s.tmpDir, probeName())
	f, err := s.fs.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return s.fs.Remove(p)
}

// SinkLag returns how many closed WAL segments a sink has not stored yet.
func (s *Store) SinkLag(name string) int64 { return s.sinks.lag(name) }

// SinkNames lists the configured sinks.
func (s *Store) SinkNames() []string { return s.sinks.names() }
