package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
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

// SinkWritten is one Write of a sink, for metrics.
type SinkWritten struct {
	Sink, Database, Table string
	Rows                  int64
	Duration              time.Duration
	Err                   error
	// DeadLetter is the file that keeps rows the sink refused (Err wraps
	// ErrRejected) when no other storage has them; empty otherwise.
	DeadLetter string
}

// Layout of sink state under the system directory.
const (
	sinksDirName   = "sinks"
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
	fresh bool          // no cursor on disk yet: placed by startFresh
	wake  chan struct{}
}

func (s *Store) cursorPath(name string) string {
	return filepath.Join(s.sysDir, sinksDirName, name+cursorExt)
}

// readCursor returns the last segment a consumer has whole; ok is false
// if it never recorded one.
func (s *Store) readCursor(name string) (seq uint64, ok bool, err error) {
	data, err := s.fs.ReadFile(s.cursorPath(name))
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

func (s *Store) writeCursor(name string, seq uint64) error {
	if err := writeFileAtomic(s.fs, s.cursorPath(name), []byte(strconv.FormatUint(seq, 10)+"\n")); err != nil {
		return fmt.Errorf("write %s cursor: %w", name, err)
	}
	return nil
}

// loadSinkState reads the sidecar id and every consumer's cursor.
// Parquet's cursor is read even without sinks: a directory a sink used
// may hold segments that are in Parquet already (a sidecar restarted
// without its sink, `arcstore compact`), and they must not replay. The
// cursor of a consumer this start does not have (a sink whose flag was
// dropped, Parquet under -parquet=false) holds its segments too: they are
// acknowledged rows that consumer has not stored, and only the operator
// can say they are no longer wanted, by deleting the cursor file.
func (s *Store) loadSinkState() error {
	load := s.loadParquetCursor
	if s.opts.NoParquet {
		load = s.dropParquetCursor
	}
	if err := load(); err != nil {
		return err
	}
	if err := s.loadHeld(); err != nil {
		return err
	}
	if len(s.sinks) == 0 {
		return nil
	}
	id, err := s.loadSidecarID()
	if err != nil {
		return err
	}
	s.sidecarID = id
	for _, r := range s.sinks {
		seq, ok, err := s.readCursor(r.sink.Name())
		if err != nil {
			return err
		}
		r.fresh = !ok
		r.done.Store(seq)
	}
	return nil
}

// loadParquetCursor reads Parquet's cursor. Written on first use, so that
// a restart knows which segments Parquet has. In a directory that had only
// sinks, Parquet starts after the segments there: they are the sinks' rows,
// already stored where the operator chose.
func (s *Store) loadParquetCursor() error {
	seq, ok, err := s.readCursor(parquetCursor)
	if err != nil || ok {
		s.parquetDone.Store(seq)
		return err
	}
	hadSinks, err := s.hasSinkCursors()
	if err != nil {
		return err
	}
	if hadSinks {
		s.parquetFresh = true // placed by recover once it knows the last segment
		return nil
	}
	return s.writeCursor(parquetCursor, 0)
}

// dropParquetCursor forgets Parquet under -parquet=false: the sinks are
// then the storage, every acknowledged row reaches them, and keeping WAL
// segments for a Parquet that is off would only fill the disk.
func (s *Store) dropParquetCursor() error {
	seq, ok, err := s.readCursor(parquetCursor)
	if err != nil || !ok {
		return err
	}
	s.log.Warn("parquet is off: wal segments after its cursor are no longer kept for it; they go to the sinks only", "parquet_cursor", seq)
	if err := s.fs.Remove(s.cursorPath(parquetCursor)); err != nil {
		return fmt.Errorf("remove parquet cursor: %w", err)
	}
	return s.fs.SyncDir(filepath.Dir(s.cursorPath(parquetCursor)))
}

// cursorNames lists the consumers that have a cursor on disk.
func (s *Store) cursorNames() ([]string, error) {
	entries, err := s.fs.ReadDir(filepath.Join(s.sysDir, sinksDirName))
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

func (s *Store) hasSinkCursors() (bool, error) {
	names, err := s.cursorNames()
	return slices.ContainsFunc(names, func(n string) bool { return n != parquetCursor }), err
}

// loadHeld reads the cursors of consumers this start does not have.
func (s *Store) loadHeld() error {
	names, err := s.cursorNames()
	if err != nil {
		return err
	}
	configured := map[string]bool{parquetCursor: true}
	for _, r := range s.sinks {
		configured[r.sink.Name()] = true
	}
	for _, name := range names {
		if configured[name] {
			continue
		}
		seq, _, err := s.readCursor(name)
		if err != nil {
			return err
		}
		if s.held == nil {
			s.held = map[string]uint64{}
		}
		s.held[name] = seq
	}
	return nil
}

// warnHeld says which segments wait for a consumer this start lacks.
func (s *Store) warnHeld() {
	for name, seq := range s.held {
		if seq < s.closedThrough.Load() {
			s.log.Warn("keeping wal segments for a consumer this start does not have; start with it to store them, or delete its cursor file to let them go",
				"consumer", name, "segments", s.closedThrough.Load()-seq, "cursor", s.cursorPath(name))
		}
	}
}

// heldNote names the absent consumers that keep segments, for errors.
func (s *Store) heldNote() string {
	if len(s.held) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; kept for consumers this start does not have:")
	for name := range s.held {
		fmt.Fprintf(&b, " %s (delete %s to let them go)", name, s.cursorPath(name))
	}
	return b.String()
}

// startFresh places the cursor of a sink new to this directory before the
// oldest segment still here: older rows left the WAL before the sink
// existed (they are in Parquet), so there is nothing to send for them.
// Written at once, so that the segments stay for it even if it never
// gets to store one before the next start.
func (s *Store) startFresh(seqs []uint64, last uint64) error {
	for _, r := range s.sinks {
		if !r.fresh {
			continue
		}
		start := last
		if len(seqs) > 0 {
			start = seqs[0] - 1
		}
		if err := s.writeCursor(r.sink.Name(), start); err != nil {
			return err
		}
		r.done.Store(start)
		r.fresh = false
	}
	return nil
}

// loadSidecarID returns the data directory's id, made on first use: it
// keeps the sink tokens of sidecars sharing one destination apart.
func (s *Store) loadSidecarID() (string, error) {
	path := filepath.Join(s.sysDir, sidecarIDName)
	data, err := s.fs.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(data))) > 0 {
		return strings.TrimSpace(string(data)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read sidecar id: %w", err)
	}
	id := randomHex(8)
	if err := writeFileAtomic(s.fs, path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("write sidecar id: %w", err)
	}
	return id, nil
}

// walDone records that Parquet holds every row of the segments through
// seq, then drops the segments every consumer is past. The cursor is
// written even without sinks, so that a sink added later, or a restart,
// knows which segments Parquet has.
func (s *Store) walDone(seq uint64) error {
	if !s.opts.NoParquet && seq > s.parquetDone.Load() {
		if err := s.writeCursor(parquetCursor, seq); err != nil {
			return err
		}
		s.parquetDone.Store(seq)
	}
	return s.trimWAL(s.trimPoint())
}

// trimPoint is the last segment every consumer has, including those this
// start does not run.
func (s *Store) trimPoint() uint64 {
	p := uint64(math.MaxUint64)
	if !s.opts.NoParquet {
		p = s.parquetDone.Load()
	}
	for _, r := range s.sinks {
		p = min(p, r.done.Load())
	}
	for _, seq := range s.held {
		p = min(p, seq)
	}
	return min(p, s.closedThrough.Load())
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
	if err := s.saveBatchIDs(); err != nil {
		return err
	}
	if err := s.wal.RemoveThrough(through); err != nil {
		return err
	}
	s.trimmed = through
	return nil
}

// SinkLag returns how many closed WAL segments a sink has not stored yet.
func (s *Store) SinkLag(name string) int64 {
	for _, r := range s.sinks {
		if r.sink.Name() == name {
			return int64(s.closedThrough.Load()) - int64(min(r.done.Load(), s.closedThrough.Load()))
		}
	}
	return 0
}

// SinkNames lists the configured sinks.
func (s *Store) SinkNames() []string {
	names := make([]string, len(s.sinks))
	for i, r := range s.sinks {
		names[i] = r.sink.Name()
	}
	return names
}

// drainSinks gives the sinks a bounded time to store every closed segment,
// then tells idle sink loops to stop.
func (s *Store) drainSinks() {
	defer close(s.sinkDrained)
	if len(s.sinks) == 0 {
		return
	}
	s.wakeSinks()
	deadline := time.Now().Add(s.opts.SinkDrainTimeout)
	for time.Now().Before(deadline) {
		behind := false
		for _, r := range s.sinks {
			behind = behind || r.done.Load() < s.closedThrough.Load()
		}
		if !behind {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range s.sinks {
		if lag := s.SinkLag(r.sink.Name()); lag > 0 {
			s.log.Warn("stopping with wal segments a sink has not stored; they are sent on the next start", "sink", r.sink.Name(), "segments", lag)
		}
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (s *Store) wakeSinks() {
	for _, r := range s.sinks {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// sinkLoop writes closed segments to one sink, in order, until the store
// closes (after a bounded drain).
func (s *Store) sinkLoop(ctx context.Context, r *sinkRunner) {
	defer s.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		next := r.done.Load() + 1
		if next > s.closedThrough.Load() {
			select {
			case <-r.wake:
				continue
			case <-s.sinkDrained:
				return
			case <-s.quit:
				return
			case <-ctx.Done():
				return
			}
		}
		err := s.sinkSegment(ctx, r, next)
		if err == nil {
			err = s.writeCursor(r.sink.Name(), next)
		}
		if err == nil {
			r.done.Store(next)
			backoff = 100 * time.Millisecond
			// Each trim rewrites the batch ID file: a sink catching up
			// trims every few segments, not after each.
			if next >= s.closedThrough.Load() || next%sinkTrimEvery == 0 {
				if terr := s.trimWAL(s.trimPoint()); terr != nil {
					s.log.Error("cannot remove wal segments", "error", terr)
				}
			}
			continue
		}
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("sink write failed; the rows stay in the wal and are retried", "sink", r.sink.Name(), "wal_segment", next, "retry_in", backoff, "error", err)
		select {
		case <-time.After(backoff):
		case <-s.quit:
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

// sinkSegment writes every table of one closed segment to the sink.
func (s *Store) sinkSegment(ctx context.Context, r *sinkRunner, seq uint64) error {
	groups, err := s.groupSegment(seq)
	if errors.Is(err, os.ErrNotExist) {
		// Trimmed while this sink was not configured: its rows are in
		// Parquet, and this sink never had them.
		s.log.Warn("wal segment is gone; the sink skips it", "sink", r.sink.Name(), "wal_segment", seq)
		return nil
	}
	if err != nil {
		return err
	}
	for _, g := range groups {
		if err := s.sinkGroup(ctx, r, seq, g); err != nil {
			return err
		}
	}
	return nil
}

// groupSegment splits a segment's records by table and schema variant,
// keeping WAL order within each: the same segment always gives the same
// groups, so a rewrite after a crash carries the same tokens and rows.
func (s *Store) groupSegment(seq uint64) ([]*sinkGroup, error) {
	var groups []*sinkGroup
	index := map[string]*sinkGroup{}
	err := s.readSegment(seq, func(e walEntry) error {
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

// sinkGroup writes one table's rows of a segment, chunk by chunk.
func (s *Store) sinkGroup(ctx context.Context, r *sinkRunner, seq uint64, g *sinkGroup) error {
	for chunk, start := 0, 0; start < len(g.ipcs); chunk++ {
		end, size := start, 0
		for end < len(g.ipcs) && (end == start || size+len(g.ipcs[end]) <= sinkChunkBytes) {
			size += len(g.ipcs[end])
			end++
		}
		if err := s.sinkChunk(ctx, r, seq, g, chunk, g.ipcs[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (s *Store) sinkChunk(ctx context.Context, r *sinkRunner, seq uint64, g *sinkGroup, chunk int, ipcs [][]byte) error {
	w := SinkWrite{Database: g.database}
	defer func() {
		for _, rec := range w.Records {
			rec.Release()
		}
	}()
	var walSchema *arrow.Schema // as the WAL holds it, for the token
	for _, ipc := range ipcs {
		raw, err := arcflight.DecodeRecord(ipc, s.mem)
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
	w.Token = fmt.Sprintf("arcstore-%s-%d-%s-%s-%x-%d", s.sidecarID, seq, g.database, g.table, variant, chunk)
	wctx, cancel := context.WithTimeout(ctx, sinkTimeout)
	start := time.Now()
	err = r.sink.Write(wctx, w)
	cancel()
	written := SinkWritten{Sink: r.sink.Name(), Database: g.database, Table: g.table, Rows: w.Rows, Duration: time.Since(start), Err: err}
	if !errors.Is(err, ErrRejected) {
		s.opts.Observer.SinkWrote(written)
		return err
	}
	if !s.opts.NoParquet {
		s.opts.Observer.SinkWrote(written)
		s.log.Error("sink refuses rows; they are skipped for this sink (Parquet has them)",
			"sink", r.sink.Name(), "database", g.database, "table", g.table, "rows", w.Rows, "wal_segment", seq, "error", err)
		return nil
	}
	// The sinks are the only storage: the rows must outlive their segment.
	path := s.deadLetterPath(r.sink.Name(), seq, g, t.variant, chunk)
	if derr := s.deadLetter(path, w); derr != nil {
		s.opts.Observer.SinkWrote(written)
		return fmt.Errorf("sink refuses rows and keeping them failed: %w", derr)
	}
	written.DeadLetter = path
	s.opts.Observer.SinkWrote(written)
	s.log.Error("sink refuses rows; Parquet is off, so they are kept in a dead-letter file",
		"sink", r.sink.Name(), "database", g.database, "table", g.table, "rows", w.Rows, "wal_segment", seq, "file", path, "error", err)
	return nil
}
