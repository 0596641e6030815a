package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// A Sink is a destination of acknowledged rows besides the Parquet files,
// such as ClickHouse. Each sink reads the closed WAL segments in order on
// its own goroutine and keeps a durable cursor of the last segment it has
// stored; a segment leaves the WAL only once Parquet and every sink are
// past it. A sink that is down therefore holds the WAL back (up to
// MaxWALBytes, then writes are refused with ErrBackpressure) and never
// loses a row.
type Sink interface {
	// Name tells sinks apart in the data directory, logs and metrics.
	Name() string
	// Write stores the rows of one table from one WAL segment. It must be
	// idempotent per w.Token: after a crash or an error the same rows come
	// again with the same token. An error wrapping ErrRejected is final for
	// these rows (the destination refuses their shape); any other error is
	// retried with backoff.
	Write(ctx context.Context, w SinkWrite) error
	Close() error
}

// SinkWrite is rows of one table from one WAL segment, in WAL order: all
// of them, or one chunk of at most a few MiB when the segment holds more.
type SinkWrite struct {
	// Token is the same for the same rows whoever writes them again:
	// sidecar id, segment, database, table, schema variant and chunk.
	Token    string
	Database string
	Table    *Table
	Records  []arrow.RecordBatch
	Rows     int64
}

// ErrRejected marks a sink error that no retry can fix.
var ErrRejected = errors.New("sink refuses these rows")

// Layout of sink state under the system directory.
const (
	sinksDirName   = layout.SinksDirName
	cursorExt      = ".done"
	parquetCursor  = "parquet"
	sidecarIDName  = "sidecar-id"
	sinkMaxBackoff = 30 * time.Second
	sinkTimeout    = 2 * time.Minute
	sinkTrimEvery  = 16
)

// sinkRunner feeds one sink.
type sinkRunner struct {
	sink  Sink
	done  atomic.Uint64 // last WAL segment the sink has whole
	fresh bool          // no cursor on disk yet: placed by placeFresh
	wake  chan struct{}
}

// sinkSet feeds the sinks from the closed WAL segments and keeps every
// consumer's hold on them: the runners' cursors and the cursors of
// consumers this start does not run. It is built even without sinks, so
// that those held cursors still keep their segments. It never deletes a
// segment: it says when a cursor advanced (trim), and the Store trims
// down to low and Parquet's cursor.
type sinkSet struct {
	fs           FS
	log          *slog.Logger
	mem          memory.Allocator
	obs          Observer
	noParquet    bool
	drainTimeout time.Duration
	sysDir       string
	walDir       string
	cursors      cursorDir
	// trim removes the segments every consumer is past; called on the
	// runner's goroutine after its cursor advanced.
	trim func() error
	quit <-chan struct{}

	runners       []*sinkRunner
	held          map[string]uint64 // cursors of consumers this start does not run
	sidecarID     string
	closedThrough atomic.Uint64 // last WAL segment that takes no more writes
	drained       chan struct{} // closed when Close stops waiting for sinks
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// sinkConfig is the part of Options the sinkSet reads; the Store builds
// it (sinkConfigOf).
type sinkConfig struct {
	FS               FS
	Logger           *slog.Logger
	Allocator        memory.Allocator
	Observer         Observer
	NoParquet        bool
	SinkDrainTimeout time.Duration
	Sinks            []Sink
}

// newSinkSet builds the set; load reads its state, start runs it.
func newSinkSet(cfg sinkConfig, sysDir, walDir string, quit <-chan struct{}, trim func() error) *sinkSet {
	k := &sinkSet{
		fs:           cfg.FS,
		log:          cfg.Logger,
		mem:          cfg.Allocator,
		obs:          cfg.Observer,
		noParquet:    cfg.NoParquet,
		drainTimeout: cfg.SinkDrainTimeout,
		sysDir:       sysDir,
		walDir:       walDir,
		cursors:      cursorDir{fs: cfg.FS, dir: filepath.Join(sysDir, sinksDirName)},
		trim:         trim,
		quit:         quit,
		drained:      make(chan struct{}),
		cancel:       func() {},
	}
	for _, sk := range cfg.Sinks {
		k.runners = append(k.runners, &sinkRunner{sink: sk, wake: make(chan struct{}, 1)})
	}
	return k
}

// cursorDir is where every consumer keeps its cursor: sinks/<name>.done,
// the last segment it has whole ("N\n").
type cursorDir struct {
	fs  FS
	dir string
}

func (c cursorDir) path(name string) string {
	return filepath.Join(c.dir, name+cursorExt)
}

// read returns the last segment a consumer has whole; ok is false if it
// never recorded one.
func (c cursorDir) read(name string) (seq uint64, ok bool, err error) {
	data, err := c.fs.ReadFile(c.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %s cursor: %w", name, err)
	}
	seq, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parse %s cursor: %w", name, err)
	}
	return seq, true, nil
}

func (c cursorDir) write(name string, seq uint64) error {
	if err := writeFileAtomic(c.fs, c.path(name), []byte(strconv.FormatUint(seq, 10)+"\n")); err != nil {
		return fmt.Errorf("write %s cursor: %w", name, err)
	}
	return nil
}

// names lists the consumers that have a cursor on disk.
func (c cursorDir) names() ([]string, error) {
	entries, err := c.fs.ReadDir(c.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list sink cursors: %w", err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), cursorExt); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

func (c cursorDir) hasSinks() (bool, error) {
	names, err := c.names()
	return slices.ContainsFunc(names, func(n string) bool { return n != parquetCursor }), err
}

// load reads the held cursors, the sidecar id and every runner's cursor.
// The cursor of a consumer this start does not have (a sink whose flag
// was dropped, Parquet under -parquet=false) holds its segments: they are
// acknowledged rows that consumer has not stored, and only the operator
// can say they are no longer wanted, by deleting the cursor file.
func (k *sinkSet) load() error {
	if err := k.loadHeld(); err != nil {
		return err
	}
	if len(k.runners) == 0 {
		return nil
	}
	id, err := k.loadSidecarID()
	if err != nil {
		return err
	}
	k.sidecarID = id
	for _, r := range k.runners {
		seq, ok, err := k.cursors.read(r.sink.Name())
		if err != nil {
			return err
		}
		r.fresh = !ok
		r.done.Store(seq)
	}
	return nil
}

// loadHeld reads the cursors of consumers this start does not have.
func (k *sinkSet) loadHeld() error {
	names, err := k.cursors.names()
	if err != nil {
		return err
	}
	configured := map[string]bool{parquetCursor: true}
	for _, r := range k.runners {
		configured[r.sink.Name()] = true
	}
	for _, name := range names {
		if configured[name] {
			continue
		}
		seq, _, err := k.cursors.read(name)
		if err != nil {
			return err
		}
		if k.held == nil {
			k.held = map[string]uint64{}
		}
		k.held[name] = seq
	}
	return nil
}

// high is the last segment any sink cursor names, held ones included.
func (k *sinkSet) high() uint64 {
	var last uint64
	for _, r := range k.runners {
		last = max(last, r.done.Load())
	}
	for _, seq := range k.held {
		last = max(last, seq)
	}
	return last
}

// low is the hold: the last segment every sink has, including those this
// start does not run (math.MaxUint64 when there are none).
func (k *sinkSet) low() uint64 {
	p := uint64(math.MaxUint64)
	for _, r := range k.runners {
		p = min(p, r.done.Load())
	}
	for _, seq := range k.held {
		p = min(p, seq)
	}
	return p
}

// closed is the last WAL segment that takes no more writes.
func (k *sinkSet) closed() uint64 { return k.closedThrough.Load() }

// placeFresh records where the WAL stands after recovery (seqs are the
// segments present, last the last closed one), then places the cursor of a
// sink new to this directory before the oldest segment still here: older
// rows left the WAL before the sink existed (they are in Parquet), so
// there is nothing to send for them. Written at once, so that the
// segments stay for it even if it never gets to store one before the
// next start.
func (k *sinkSet) placeFresh(seqs []uint64, last uint64) error {
	k.closedThrough.Store(last)
	for _, r := range k.runners {
		if !r.fresh {
			continue
		}
		start := last
		if len(seqs) > 0 {
			start = seqs[0] - 1
		}
		if err := k.cursors.write(r.sink.Name(), start); err != nil {
			return err
		}
		r.done.Store(start)
		r.fresh = false
	}
	k.warnHeld()
	return nil
}

// warnHeld says which segments wait for a consumer this start lacks.
func (k *sinkSet) warnHeld() {
	for name, seq := range k.held {
		if seq < k.closedThrough.Load() {
			k.log.Warn("keeping wal segments for a consumer this start does not have; start with it to store them, or delete its cursor file to let them go",
				"consumer", name, "segments", k.closedThrough.Load()-seq, "cursor", k.cursors.path(name))
		}
	}
}

// heldNote names the absent consumers that keep segments, for errors.
func (k *sinkSet) heldNote() string {
	if len(k.held) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; kept for consumers this start does not have:")
	for name := range k.held {
		fmt.Fprintf(&b, " %s (delete %s to let them go)", name, k.cursors.path(name))
	}
	return b.String()
}

// loadSidecarID returns the data directory's id, made on first use: it
// keeps the sink tokens of sidecars sharing one destination apart.
func (k *sinkSet) loadSidecarID() (string, error) {
	path := filepath.Join(k.sysDir, sidecarIDName)
	data, err := k.fs.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(data))) > 0 {
		return strings.TrimSpace(string(data)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read sidecar id: %w", err)
	}
	id := randomHex(8)
	if err := writeFileAtomic(k.fs, path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("write sidecar id: %w", err)
	}
	return id, nil
}

// lag returns how many closed WAL segments a sink has not stored yet.
func (k *sinkSet) lag(name string) int64 {
	for _, r := range k.runners {
		if r.sink.Name() == name {
			return int64(k.closedThrough.Load()) - int64(min(r.done.Load(), k.closedThrough.Load()))
		}
	}
	return 0
}

// names lists the configured sinks.
func (k *sinkSet) names() []string {
	names := make([]string, len(k.runners))
	for i, r := range k.runners {
		names[i] = r.sink.Name()
	}
	return names
}

// start runs one loop per sink until stop.
func (k *sinkSet) start() {
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	for _, r := range k.runners {
		k.wg.Add(1)
		go k.loop(ctx, r)
	}
}

// drain gives the sinks a bounded time to store every closed segment,
// then tells idle sink loops to stop.
func (k *sinkSet) drain() {
	defer close(k.drained)
	if len(k.runners) == 0 {
		return
	}
	k.wake()
	deadline := time.Now().Add(k.drainTimeout)
	for time.Now().Before(deadline) {
		behind := false
		for _, r := range k.runners {
			behind = behind || r.done.Load() < k.closedThrough.Load()
		}
		if !behind {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range k.runners {
		if lag := k.lag(r.sink.Name()); lag > 0 {
			k.log.Warn("stopping with wal segments a sink has not stored; they are sent on the next start", "sink", r.sink.Name(), "segments", lag)
		}
	}
}

// stop cancels the sinks' writes and waits for their loops.
func (k *sinkSet) stop() {
	k.cancel()
	k.wg.Wait()
}

// abandon stops the loops the way a crash would: no drain.
func (k *sinkSet) abandon() { k.stop() }

// closeSinks closes every sink once no loop runs.
func (k *sinkSet) closeSinks() {
	for _, r := range k.runners {
		if cerr := r.sink.Close(); cerr != nil {
			k.log.Warn("close sink", "sink", r.sink.Name(), "error", cerr)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// segmentClosed is told by the committer that the segments through seq
// take no more writes, and wakes the sinks.
func (k *sinkSet) segmentClosed(seq uint64) {
	k.closedThrough.Store(seq)
	k.wake()
}

func (k *sinkSet) wake() {
	for _, r := range k.runners {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// loop writes closed segments to one sink, in order, until the store
// closes (after a bounded drain).
func (k *sinkSet) loop(ctx context.Context, r *sinkRunner) {
	defer k.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		next := r.done.Load() + 1
		if next > k.closedThrough.Load() {
			select {
			case <-r.wake:
				continue
			case <-k.drained:
				return
			case <-k.quit:
				return
			case <-ctx.Done():
				return
			}
		}
		err := k.segment(ctx, r, next)
		if err == nil {
			err = k.cursors.write(r.sink.Name(), next)
		}
		if err == nil {
			r.done.Store(next)
			backoff = 100 * time.Millisecond
			// Each trim rewrites the batch ID file: a sink catching up
			// trims every few segments, not after each.
			if next >= k.closedThrough.Load() || next%sinkTrimEvery == 0 {
				if terr := k.trim(); terr != nil {
					k.log.Error("cannot remove wal segments", "error", terr)
				}
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		k.log.Warn("sink write failed; the rows stay in the wal and are retried", "sink", r.sink.Name(), "wal_segment", next, "retry_in", backoff, "error", err)
		select {
		case <-time.After(backoff):
		case <-k.quit:
			return
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, sinkMaxBackoff)
	}
}

// sinkGroup is the rows of one table and schema in one segment.
type sinkGroup struct {
	database string
	table    string
	ipcs     [][]byte
}

// segment writes every table of one closed segment to the sink.
func (k *sinkSet) segment(ctx context.Context, r *sinkRunner, seq uint64) error {
	groups, err := k.groupSegment(seq)
	if errors.Is(err, os.ErrNotExist) {
		// Trimmed while this sink was not configured: its rows are in
		// Parquet, and this sink never had them.
		k.log.Warn("wal segment is gone; the sink skips it", "sink", r.sink.Name(), "wal_segment", seq)
		return nil
	}
	if err != nil {
		return err
	}
	// Groups of one table and variant (an OTLP table's streams of this
	// build and of an earlier one, whose schema frames differ) number
	// their chunks on from each other: the same token for two groups
	// would have the destination keep only the first.
	chunks := map[string]int{}
	for _, g := range groups {
		if err := k.writeGroup(ctx, r, seq, g, chunks); err != nil {
			return err
		}
	}
	return nil
}

// groupSegment splits a segment's records by table and schema variant,
// keeping WAL order within each: the same segment always gives the same
// groups, so a rewrite after a crash carries the same tokens and rows.
func (k *sinkSet) groupSegment(seq uint64) ([]*sinkGroup, error) {
	var groups []*sinkGroup
	index := map[string]*sinkGroup{}
	err := k.readSegment(seq, func(e walEntry) error {
		key := e.database + "\x00" + e.table + "\x00" + string(schemaKey(e.ipc))
		g := index[key]
		if g == nil {
			g = &sinkGroup{database: e.database, table: e.table}
			index[key] = g
			groups = append(groups, g)
		}
		g.ipcs = append(g.ipcs, e.ipc)
		return nil
	})
	return groups, err
}

// schemaKey is the schema message at the head of an IPC stream: batches of
// one measurement with different columns go to different inserts.
func schemaKey(ipc []byte) []byte {
	n := arcflight.SchemaFrameLen(ipc)
	return ipc[:n]
}

// sinkChunkBytes bounds the IPC bytes of one sink write, so the sink's
// memory (decoded records, native columns, the encoded block) does not
// grow with the segment. The cut falls between batches in WAL order, so a
// rewrite cuts the same chunks.
var sinkChunkBytes = 8 << 20 // a variable for tests

// writeGroup writes one table's rows of a segment, chunk by chunk; chunks
// counts the chunks written per table and variant.
func (k *sinkSet) writeGroup(ctx context.Context, r *sinkRunner, seq uint64, g *sinkGroup, chunks map[string]int) error {
	for start := 0; start < len(g.ipcs); {
		end, size := start, 0
		for end < len(g.ipcs) && (end == start || size+len(g.ipcs[end]) <= sinkChunkBytes) {
			size += len(g.ipcs[end])
			end++
		}
		if err := k.writeChunk(ctx, r, seq, g, chunks, g.ipcs[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (k *sinkSet) writeChunk(ctx context.Context, r *sinkRunner, seq uint64, g *sinkGroup, chunks map[string]int, ipcs [][]byte) error {
	w := SinkWrite{Database: g.database}
	defer func() {
		for _, rec := range w.Records {
			rec.Release()
		}
	}()
	var walSchema *arrow.Schema // as the WAL holds it, for the token
	for _, ipc := range ipcs {
		raw, err := arcflight.DecodeRecord(ipc, k.mem)
		if err != nil {
			return fmt.Errorf("decode wal record: %w", err)
		}
		if walSchema == nil {
			walSchema = raw.Schema()
		}
		rec := schema.StoredTimes(raw) // nanoseconds in earlier builds' records
		raw.Release()
		w.Records = append(w.Records, rec)
		w.Rows += rec.NumRows()
	}
	t, err := tableFor(g.table, w.Records[0].Schema())
	if err != nil {
		return err
	}
	w.Table = t
	// The variant of the schema the segment was written with: a segment an
	// earlier build began to send keeps its token across the upgrade.
	variant := t.variant
	if !IsOTLPTable(g.table) {
		variant = variantOf(walSchema)
	}
	base := fmt.Sprintf("arcstore-%s-%d-%s-%s-%x", k.sidecarID, seq, g.database, g.table, variant)
	chunk := chunks[base]
	chunks[base]++
	w.Token = fmt.Sprintf("%s-%d", base, chunk)
	wctx, cancel := context.WithTimeout(ctx, sinkTimeout)
	start := time.Now()
	err = r.sink.Write(wctx, w)
	cancel()
	written := SinkWritten{Sink: r.sink.Name(), Database: g.database, Table: g.table, Rows: w.Rows, Duration: time.Since(start), Err: err}
	if !errors.Is(err, ErrRejected) {
		k.obs.SinkWrote(written)
		return err
	}
	if !k.noParquet {
		k.obs.SinkWrote(written)
		k.log.Error("sink refuses rows; they are skipped for this sink (Parquet has them)",
			"sink", r.sink.Name(), "database", g.database, "table", g.table, "rows", w.Rows, "wal_segment", seq, "error", err)
		return nil
	}
	// The sinks are the only storage: the rows must outlive their segment.
	path := deadLetterPath(k.sysDir, r.sink.Name(), seq, g.database, g.table, t.variant, chunk)
	if derr := deadLetter(k.fs, k.mem, path, w.Records); derr != nil {
		k.obs.SinkWrote(written)
		return fmt.Errorf("sink refuses rows and keeping them failed: %w", derr)
	}
	written.DeadLetter = path
	k.obs.SinkWrote(written)
	k.log.Error("sink refuses rows; Parquet is off, so they are kept in a dead-letter file",
		"sink", r.sink.Name(), "database", g.database, "table", g.table, "rows", w.Rows, "wal_segment", seq, "file", path, "error", err)
	return nil
}

// readSegment calls fn with every batch of a closed segment.
func (k *sinkSet) readSegment(seq uint64, fn func(walEntry) error) error {
	return wal.ReadSegment(k.fs, k.walDir, seq, func(_ int64, payload []byte) error {
		entries, err := decodePayload(payload)
		if err != nil {
			return err
		}
		for _, e := range entries {
			e.seq = seq
			if err := fn(e); err != nil {
				return err
			}
		}
		return nil
	})
}
