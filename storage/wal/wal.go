// Package wal is the sidecar's write-ahead log: numbered segment files of
// checksummed records, written in group commits that are acknowledged only
// after an fdatasync, rotated on request, replayed on start and removed
// (or recycled) once every consumer has them. It knows nothing of what a
// record holds; the storage package encodes and versions the payloads.
//
// A segment (format version 2) is a 16-byte header (SegmentMagic and a
// random nonce drawn for each life of the file), then a sequence of
// records, each framed as
//
//	uint32 payload length | uint32 CRC-32C of (segment seq, nonce, payload) | payload
//
// Version 1 segments (no header, checksums of the payload alone) are still
// read. Segments are named by a sequence number that only grows, and a
// segment is complete once the next one exists: rotation happens only
// between commits, and first seals a segment whose file holds more than
// its records with an end marker (a frame of length 2^32-1, bound to the
// segment), durably. Only the tail of the last segment can therefore hold
// bytes that are not a committed record: a torn write, or records of the
// file's previous life when it is a recycled one, which fail their
// checksum because it binds each record to its segment's sequence number
// and to the nonce drawn for that life of the file; neither can put a
// valid record after a bad one. Replay cuts that tail. A bad record
// anywhere else (in an older segment, or with a valid record or the end
// marker after it) is corruption, reported as a *CorruptionError naming
// segment and offset; a repair drops that record alone.
//
// Removed segments are kept, up to MaxRecycled of them, and renamed into
// the next segments instead of new files: a commit then overwrites blocks
// the file system has already allocated, in pages already cached, and its
// fdatasync writes data only (no size, no allocation to make durable).
// Sealing instead of truncating keeps the blocks for the file's next life.
package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const (
	// SegmentExt ends the name of every segment file.
	SegmentExt = ".wal"
	// HeaderSize is the size of a record's frame header.
	HeaderSize = 8
	// MaxRecordSize bounds what a reader allocates for one record, so a
	// corrupted length cannot ask for gigabytes.
	MaxRecordSize = 1 << 30
	// DefaultMaxWrite is the most bytes one write call of a commit takes.
	// A commit is one writev of every record's header and payload parts,
	// so only a group larger than this takes several calls.
	DefaultMaxWrite = 64 << 20
	// maxIovecs is IOV_MAX on Linux: the most buffers one writev takes.
	maxIovecs = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt marks a record whose frame, checksum or payload is wrong.
// Payload decoders wrap it so replay reports where the record is.
var ErrCorrupt = errors.New("corrupt wal record")

// ErrPoisoned is returned by every write after a failed commit could not be
// undone: the open segment may end in a torn record, and a record written
// behind it would be cut off by the next replay although acknowledged.
// Only reopening the WAL (a restart) clears it.
var ErrPoisoned = errors.New("the wal refuses writes until the sidecar restarts: a failed write could not be undone")

// CorruptionError reports a record that cannot be read anywhere but the
// tail of the last segment.
type CorruptionError struct {
	Segment string // path of the segment file
	Seq     uint64
	Offset  int64 // of the record's frame header
	Size    int64 // of the segment file
	Err     error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("wal segment %s is corrupt at offset %d of %d: %v", e.Segment, e.Offset, e.Size, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

// File is the part of *os.File the WAL uses. Tests wrap it to inject
// short writes and fsync failures. A File that also implements
// VectorWriter gets a commit's records in one call; *os.File does through
// the WAL's own wrapper (writev).
type File interface {
	io.Writer
	io.Reader
	Sync() error
	Close() error
	Truncate(size int64) error
	Seek(offset int64, whence int) (int64, error)
	Name() string
}

// VectorWriter writes bufs, in order, as one write at the file's offset
// would write their concatenation, and returns how many bytes it wrote: it
// may write fewer without an error, and the WAL writes the rest again.
type VectorWriter interface {
	WriteVector(bufs [][]byte) (int, error)
}

// osFile gives *os.File the vectored write (writev) the WAL commits with.
type osFile struct{ *os.File }

// Sync is fdatasync: it makes the written bytes durable, and the file's
// size when it changed, but not its times. A commit into a recycled file
// that does not grow it then writes data blocks only.
func (f osFile) Sync() error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	if cerr := rc.Control(func(fd uintptr) {
		for {
			if err = unix.Fdatasync(int(fd)); err != unix.EINTR {
				return
			}
		}
	}); cerr != nil {
		return cerr
	}
	if err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}

func (f osFile) WriteVector(bufs [][]byte) (n int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	if cerr := rc.Write(func(fd uintptr) bool {
		for {
			n, err = unix.Writev(int(fd), bufs)
			if err != unix.EINTR {
				return true
			}
		}
	}); cerr != nil {
		return 0, cerr
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

// FS is the part of the file system the WAL uses.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	ReadDir(name string) ([]os.DirEntry, error)
	ReadFile(name string) ([]byte, error)
	// SyncDir makes the directory's entries durable.
	SyncDir(name string) error
	// RenameNoReplace renames oldpath to newpath, failing if newpath
	// exists (renameat2 RENAME_NOREPLACE). Segment recycling uses it; a
	// file system without it gets new files instead.
	RenameNoReplace(oldpath, newpath string) error
	// Rename replaces newpath with oldpath atomically; a repair replaces
	// a segment with it.
	Rename(oldpath, newpath string) error
}

// Options configure a WAL.
type Options struct {
	FS     FS
	Dir    string
	Logger *slog.Logger
	// MaxWrite is the most bytes one write call takes; 0 is
	// DefaultMaxWrite. Tests make it small so that a record spans calls.
	MaxWrite int
	// Repair drops a damaged record instead of stopping replay (the
	// record alone, or the rest of its segment when nothing valid follows
	// it), logging what is dropped.
	Repair bool
	// Dropped, if set, is told each record a repair drops, and returns
	// how many rows it held (negative: not known), for the log.
	Dropped func(Dropped) (rows int64)
	// MaxRecycled is how many removed segments are kept for reuse as new
	// ones; 0 is DefaultMaxRecycled, negative keeps none.
	MaxRecycled int
	// Counted is what Replay returned: the bytes of records of the
	// segments Open finds. A segment missing from it counts its file's
	// size.
	Counted map[uint64]int64
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// SegmentName is the file name of segment seq.
func SegmentName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, SegmentExt) }

// SegmentSeq parses a segment file name.
func SegmentSeq(name string) (uint64, bool) {
	base, ok := strings.CutSuffix(name, SegmentExt)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(base, 10, 64)
	return seq, err == nil
}

// Segments lists the sequence numbers of the segments in dir, in order.
func Segments(fsys FS, dir string) ([]uint64, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list wal: %w", err)
	}
	var seqs []uint64
	for _, e := range entries {
		if seq, ok := SegmentSeq(e.Name()); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// WAL appends records to the open segment. Write, Commit and Rotate must
// come from one goroutine; Bytes and RemoveThrough may be called from any.
type WAL struct {
	opts    Options
	first   uint64                  // the first segment this WAL wrote: the oldest it may recycle
	seq     uint64                  // the open segment
	header  [SegmentHeaderSize]byte // of the open segment's life
	seed    uint32                  // headerSeed(seq, header)
	marker  [HeaderSize]byte        // endMarker(seed)
	f       File
	size    int64 // of the open segment, written records included
	durable int64 // of the open segment, as of the last commit
	fileEnd int64 // of the open segment's file: past durable in a recycled one, or once sealed
	err     error // set once the WAL is poisoned

	// Records written since the last commit are not copied: pending holds
	// their frame headers (slices of headers) and payload parts, in order,
	// until Commit hands them to one writev. A full headers slab is
	// replaced, not grown, so the headers already pending stay put.
	pending [][]byte
	headers []byte
	iov     [][]byte // scratch of writeAll

	bytes    atomic.Int64  // committed bytes of every segment on disk
	open     atomic.Uint64 // seq, for RemoveThrough on other goroutines
	poisoned atomic.Bool
	removeMu sync.Mutex
	sizes    map[uint64]int64 // counted bytes of closed segments; under removeMu
	recycled recycled
}

// Open starts segment seq, which must not exist yet, behind the segments
// already in the directory (replay them first).
func Open(opts Options, seq uint64) (*WAL, error) {
	if opts.MaxWrite <= 0 {
		opts.MaxWrite = DefaultMaxWrite
	}
	w := &WAL{opts: opts, first: seq, recycled: recycled{max: opts.MaxRecycled}}
	if w.recycled.max == 0 {
		w.recycled.max = DefaultMaxRecycled
	}
	entries, err := opts.FS.ReadDir(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("list wal: %w", err)
	}
	for _, e := range entries {
		if isRecycled(e.Name()) || strings.HasSuffix(e.Name(), repairSuffix) {
			// Kept by the last run, or left by a repair that did not
			// finish: not a segment, and never replayed.
			if err := opts.FS.Remove(filepath.Join(opts.Dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("remove spare wal file: %w", err)
			}
			continue
		}
		s, ok := SegmentSeq(e.Name())
		if !ok {
			continue
		}
		size, ok := opts.Counted[s]
		if !ok {
			info, err := e.Info()
			if err != nil {
				continue
			}
			size = info.Size()
		}
		w.counted(s, size)
		w.bytes.Add(size)
	}
	if err := w.openSegment(seq); err != nil {
		return nil, err
	}
	return w, nil
}

// Dir is the directory of the segments.
func (w *WAL) Dir() string { return w.opts.Dir }

// Seq is the sequence number of the open segment.
func (w *WAL) Seq() uint64 { return w.seq }

// Bytes is the size of the records of every segment, as of the last
// commit or removal: segment headers, end markers and what recycled files
// hold behind them are not counted (segments found at Open count what
// Replay found in them, or their files' sizes). A removal subtracts a
// segment before its file goes, so the count never lags behind the
// directory. A segment takes at most twice its records on disk (seal).
func (w *WAL) Bytes() int64 { return w.bytes.Load() }

// Err returns the error that poisoned the WAL, or nil.
func (w *WAL) Err() error {
	if !w.poisoned.Load() {
		return nil
	}
	return ErrPoisoned
}

func (w *WAL) openSegment(seq uint64) error {
	header, err := newHeader()
	if err != nil {
		return err
	}
	path := filepath.Join(w.opts.Dir, SegmentName(seq))
	f, fileEnd, err := w.reuse(path)
	if err != nil {
		return err
	}
	if f == nil {
		if f, err = w.opts.FS.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return fmt.Errorf("create wal segment: %w", err)
		}
	}
	if err := w.opts.FS.SyncDir(w.opts.Dir); err != nil {
		// Left behind, the file would block every later attempt at this
		// sequence number (O_EXCL), and end the segments before it: the
		// removal must be as durable as the rename or create may be.
		f.Close()
		rerr := w.opts.FS.Remove(path)
		if rerr == nil {
			rerr = w.opts.FS.SyncDir(w.opts.Dir)
		}
		if rerr != nil {
			return &unsureLayout{fmt.Errorf("sync wal dir: %w; remove the new segment again: %w", err, rerr)}
		}
		return fmt.Errorf("sync wal dir: %w", err)
	}
	if of, ok := f.(*os.File); ok {
		f = osFile{of}
	}
	w.seq, w.header, w.f, w.durable, w.fileEnd = seq, header, f, 0, fileEnd
	w.seed = headerSeed(seq, header[:])
	w.marker = endMarker(w.seed)
	w.open.Store(seq)
	w.restart()
	return nil
}

// unsureLayout is a failed segment creation whose undoing may not be
// durable: a crash could bring the new segment back behind the open one.
type unsureLayout struct{ err error }

func (e *unsureLayout) Error() string { return e.err.Error() }
func (e *unsureLayout) Unwrap() error { return e.err }

// restart drops the records not committed and starts the open segment
// again from its durable size: a segment with nothing durable starts with
// its header.
func (w *WAL) restart() {
	clear(w.pending)
	w.pending, w.headers = w.pending[:0], w.headers[:0]
	w.size = w.durable
	if w.durable == 0 {
		w.pending = append(w.pending, w.header[:])
		w.size = SegmentHeaderSize
	}
}

// Write adds one record whose payload is parts, in order, and returns its
// size on disk. It becomes durable with the next Commit; a record is
// replayed whole or not at all, however many write calls it takes. The
// parts are not copied: they must not change until Commit returns.
func (w *WAL) Write(parts ...[]byte) int64 {
	n := 0
	crc := w.seed
	for _, p := range parts {
		n += len(p)
		crc = crc32.Update(crc, castagnoli, p)
	}
	if w.err != nil {
		// Nothing more goes behind a record that may be torn.
		return int64(HeaderSize + n)
	}
	if len(w.headers)+HeaderSize > cap(w.headers) {
		w.headers = make([]byte, 0, 64*HeaderSize)
	}
	at := len(w.headers)
	w.headers = binary.LittleEndian.AppendUint32(w.headers, uint32(n))
	w.headers = binary.LittleEndian.AppendUint32(w.headers, crc)
	w.pending = append(w.pending, w.headers[at:at+HeaderSize:at+HeaderSize])
	for _, p := range parts {
		if len(p) > 0 {
			w.pending = append(w.pending, p)
		}
	}
	w.size += int64(HeaderSize + n)
	return int64(HeaderSize + n)
}

// Commit makes every record written since the last commit durable. On
// failure the segment is cut back to its last durable size, so that a later
// commit never makes a torn record or an unacknowledged one part of the
// log; if that fails too, the WAL is poisoned.
func (w *WAL) Commit() error { return w.commit(nil) }

// commit writes the pending records, then marker if not nil, and syncs.
// The marker is written but not counted: the next commit overwrites it.
func (w *WAL) commit(marker []byte) error {
	if w.err != nil {
		return w.err
	}
	if marker != nil {
		w.pending = append(w.pending, marker)
	}
	err := w.writeAll(w.pending)
	// The parts are the callers' again.
	clear(w.pending)
	w.pending = w.pending[:0]
	w.headers = w.headers[:0]
	if err == nil {
		err = w.f.Sync()
	}
	if err == nil {
		w.bytes.Add(recordBytes(w.size) - recordBytes(w.durable))
		w.durable = w.size
		w.fileEnd = max(w.fileEnd, w.size+int64(len(marker)))
		return nil
	}
	if terr := w.f.Truncate(w.durable); terr != nil {
		return w.poison(fmt.Errorf("wal commit: %w; cut back after failure: %w", err, terr))
	}
	// The cut must be durable before anything is written after it: a
	// segment closed by the next rotation must not come back from a crash
	// with the torn record still in it (only the last may end in one).
	if serr := w.f.Sync(); serr != nil {
		return w.poison(fmt.Errorf("wal commit: %w; sync after cutting back: %w", err, serr))
	}
	if _, serr := w.f.Seek(w.durable, io.SeekStart); serr != nil {
		return w.poison(fmt.Errorf("wal commit: %w; seek after failure: %w", err, serr))
	}
	w.fileEnd = w.durable
	w.restart()
	return fmt.Errorf("wal commit: %w", err)
}

// writeAll writes bufs at the end of the open segment: one writev per
// maxIovecs buffers or MaxWrite bytes, again for whatever a call left.
func (w *WAL) writeAll(bufs [][]byte) error {
	vw, vector := w.f.(VectorWriter)
	for len(bufs) > 0 {
		// The call's share: whole buffers up to the limits, the last one
		// cut at MaxWrite.
		iov, room := w.iov[:0], w.opts.MaxWrite
		for _, b := range bufs {
			if len(iov) == maxIovecs || room == 0 {
				break
			}
			if len(b) > room {
				b = b[:room]
			}
			iov = append(iov, b)
			room -= len(b)
		}
		var n int
		var err error
		if vector {
			n, err = vw.WriteVector(iov)
		} else {
			n, err = writeEach(w.f, iov)
		}
		clear(iov)
		w.iov = iov[:0]
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		// Drop what was written; a buffer written in part stays, cut.
		for n > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
	}
	return nil
}

// writeEach is writeAll's call for a file without vectored writes.
func writeEach(f File, iov [][]byte) (int, error) {
	total := 0
	for _, b := range iov {
		n, err := f.Write(b)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func (w *WAL) poison(cause error) error {
	w.err = fmt.Errorf("%w (%w)", ErrPoisoned, cause)
	w.poisoned.Store(true)
	w.opts.logger().Error("the wal refuses every write until the sidecar is restarted: a failed write could not be cut back", "segment", w.f.Name(), "error", cause)
	return w.err
}

// Rotate starts the next segment and returns the sequence number of the
// one it closed. A poisoned WAL does not rotate: the segment that may end
// in a torn record must stay the last one, the only place replay cuts.
func (w *WAL) Rotate() (uint64, error) {
	if w.err != nil {
		return 0, w.err
	}
	// Only the last segment may end in bytes that are not records.
	sealed, err := w.seal()
	if err != nil {
		return 0, err
	}
	prev, closed := w.f, w.seq
	// Counted before the next segment opens: from then on RemoveThrough
	// may take this one.
	w.counted(closed, recordBytes(w.durable))
	if err := w.openSegment(w.seq + 1); err != nil {
		var unsure *unsureLayout
		if errors.As(err, &unsure) {
			// Nothing may be written over the end marker while the next
			// segment may come back: it would end this one early.
			return 0, w.poison(err)
		}
		if sealed {
			// Still the open segment: the next commit writes over the
			// end marker.
			if _, serr := w.f.Seek(w.durable, io.SeekStart); serr != nil {
				return 0, w.poison(fmt.Errorf("%w; seek back over the end marker: %w", err, serr))
			}
		}
		return 0, err
	}
	if err := prev.Close(); err != nil {
		w.opts.logger().Warn("close wal segment", "error", err)
	}
	return closed, nil
}

// seal ends a recycled segment whose file holds more than its records with
// an end marker, durably, so that what the file held before is never read
// as part of it; where the file holds more old bytes than records, it cuts
// them instead, so that a segment never takes more than twice its records
// on disk. A segment in a new file ends where the file does. It reports
// whether it wrote a marker; records not committed are dropped.
func (w *WAL) seal() (bool, error) {
	w.restart()
	if w.fileEnd <= w.size {
		return false, nil
	}
	if w.fileEnd-w.size > w.size {
		if err := w.f.Truncate(w.durable); err != nil {
			return false, fmt.Errorf("cut wal segment: %w", err)
		}
		if err := w.f.Sync(); err != nil {
			return false, fmt.Errorf("sync cut wal segment: %w", err)
		}
		w.fileEnd = w.durable
		return false, nil
	}
	if err := w.commit(w.marker[:]); err != nil {
		return false, fmt.Errorf("seal wal segment: %w", err)
	}
	return true, nil
}

// Close closes the open segment, sealed so that a restart finds where it
// ends.
func (w *WAL) Close() error {
	if w.f == nil {
		return nil
	}
	var err error
	if w.err == nil {
		_, err = w.seal()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	return err
}

// Abandon closes the open segment as a process that dies leaves it: not
// cut, whatever a recycled file still holds behind the last commit stays.
// Tests of recovery use it.
func (w *WAL) Abandon() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// recordBytes is how much of a segment of size bytes is records.
func recordBytes(size int64) int64 { return max(size-SegmentHeaderSize, 0) }

// counted records what Bytes counted for closed segment seq, which its
// removal subtracts: its records, not its file's size (a recycled file
// holds more behind its end marker).
func (w *WAL) counted(seq uint64, size int64) {
	w.removeMu.Lock()
	defer w.removeMu.Unlock()
	if w.sizes == nil {
		w.sizes = map[uint64]int64{}
	}
	w.sizes[seq] = size
}

// RemoveThrough deletes the closed segments up to and including seq, or
// keeps them as recycled files for the next segments. The open segment is
// never among them.
func (w *WAL) RemoveThrough(seq uint64) error {
	w.removeMu.Lock()
	defer w.removeMu.Unlock()
	entries, err := w.opts.FS.ReadDir(w.opts.Dir)
	if err != nil {
		return fmt.Errorf("list wal: %w", err)
	}
	removed := false
	for _, e := range entries {
		s, ok := SegmentSeq(e.Name())
		if !ok || s > seq || s >= w.open.Load() {
			continue
		}
		size, ok := w.sizes[s]
		if !ok {
			if info, err := e.Info(); err == nil {
				size = info.Size()
			}
		}
		// Counted out first: whoever sees the file gone must see the
		// room it leaves (a write refused after the WAL emptied is a bug).
		w.bytes.Add(-size)
		if !w.recycle(s) {
			if err := w.opts.FS.Remove(filepath.Join(w.opts.Dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				w.bytes.Add(size)
				return fmt.Errorf("remove wal segment: %w", err)
			}
		}
		delete(w.sizes, s)
		removed = true
	}
	if !removed {
		return nil
	}
	if err := w.opts.FS.SyncDir(w.opts.Dir); err != nil {
		return fmt.Errorf("sync wal dir: %w", err)
	}
	return nil
}
