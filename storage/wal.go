package storage

import (
	"bufio"
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
)

// A WAL segment is a sequence of records, each framed as
//
//	uint32 payload length | uint32 CRC-32C of payload | payload
//
// and a record's payload is
//
//	uint8 version | uint16 len | database | uint16 len | table | 32-byte batch ID | Arrow IPC stream
//
// Segments are named by a sequence number that only grows. A segment is
// complete once the next one exists: rotation happens only after an fsync.
const (
	segmentExt       = ".wal"
	recordHeaderSize = 8
	payloadVersion   = 2
	// maxRecordSize bounds what replay will allocate for one record, so a
	// corrupted length cannot ask for gigabytes.
	maxRecordSize = 1 << 30
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt reports a record whose frame or checksum is wrong.
var errCorrupt = errors.New("corrupt wal record")

type wal struct {
	fs     FS
	dir    string
	log    *slog.Logger
	seq    uint64 // sequence number of the open segment
	f      File
	w      *bufio.Writer
	size   int64
	header [recordHeaderSize]byte
}

func segmentName(seq uint64) string { return fmt.Sprintf("%020d%s", seq, segmentExt) }

// segments lists the sequence numbers of the segments in dir, in order.
func segments(fsys FS, dir string) ([]uint64, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list wal: %w", err)
	}
	var seqs []uint64
	for _, e := range entries {
		if seq, ok := segmentSeq(e.Name()); ok {
			seqs = append(seqs, seq)
		}
	}
	slices.Sort(seqs)
	return seqs, nil
}

// segmentSeq parses a segment file name.
func segmentSeq(name string) (uint64, bool) {
	base, ok := strings.CutSuffix(name, segmentExt)
	if !ok {
		return 0, false
	}
	seq, err := strconv.ParseUint(base, 10, 64)
	return seq, err == nil
}

// openSegment starts segment seq, which must not exist yet.
func (w *wal) openSegment(seq uint64) error {
	path := filepath.Join(w.dir, segmentName(seq))
	f, err := w.fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("create wal segment: %w", err)
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		// Left behind, the file would block every later attempt at this
		// sequence number (O_EXCL).
		f.Close()
		_ = w.fs.Remove(path)
		return fmt.Errorf("sync wal dir: %w", err)
	}
	w.seq, w.f, w.size = seq, f, 0
	if w.w == nil {
		w.w = bufio.NewWriterSize(f, 1<<20)
	} else {
		w.w.Reset(f)
	}
	return nil
}

// encodeHeader returns the record header for payload parts written in order.
func appendPayloadHeader(dst []byte, database, table string, id BatchID) []byte {
	dst = append(dst, payloadVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(database)))
	dst = append(dst, database...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(table)))
	dst = append(dst, table...)
	return append(dst, id[:]...)
}

// frameHeader fills the record header of the payload parts head and body.
func frameHeader(dst *[recordHeaderSize]byte, head, body []byte) {
	crc := crc32.Update(crc32.Checksum(head, castagnoli), castagnoli, body)
	binary.LittleEndian.PutUint32(dst[0:4], uint32(len(head)+len(body)))
	binary.LittleEndian.PutUint32(dst[4:8], crc)
}

// encodeFrame returns a whole record: header, head, body.
func encodeFrame(head, body []byte) []byte {
	var h [recordHeaderSize]byte
	frameHeader(&h, head, body)
	return append(append(h[:], head...), body...)
}

// write buffers one record made of the payload parts head and body.
func (w *wal) write(head, body []byte) error {
	n := len(head) + len(body)
	frameHeader(&w.header, head, body)
	w.w.Write(w.header[:])
	w.w.Write(head)
	_, err := w.w.Write(body)
	w.size += int64(recordHeaderSize + n)
	return err
}

// commit makes every record written since the last commit durable. On
// failure the segment is cut back to its last durable size so that a later
// commit never makes a half-acknowledged group visible.
func (w *wal) commit(durableSize int64) error {
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if err == nil {
		return nil
	}
	w.w.Reset(w.f)
	if terr := w.f.Truncate(durableSize); terr != nil {
		return fmt.Errorf("wal commit: %w; truncate after failure: %w", err, terr)
	}
	if _, serr := w.f.Seek(durableSize, io.SeekStart); serr != nil {
		return fmt.Errorf("wal commit: %w; seek after failure: %w", err, serr)
	}
	w.size = durableSize
	return fmt.Errorf("wal commit: %w", err)
}

func (w *wal) close() error {
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// removeThrough deletes the closed segments up to and including seq and
// returns the bytes it freed. The open segment is never among them: callers
// pass at most the last closed segment.
func (w *wal) removeThrough(seq uint64) (int64, error) {
	entries, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return 0, fmt.Errorf("list wal: %w", err)
	}
	var freed int64
	removed := false
	for _, e := range entries {
		s, ok := segmentSeq(e.Name())
		if !ok || s > seq {
			continue
		}
		if info, err := e.Info(); err == nil {
			freed += info.Size()
		}
		if err := w.fs.Remove(filepath.Join(w.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return freed, fmt.Errorf("remove wal segment: %w", err)
		}
		removed = true
	}
	if !removed {
		return 0, nil
	}
	return freed, w.fs.SyncDir(w.dir)
}

// walEntry is one replayed record.
type walEntry struct {
	seq      uint64
	database string
	table    string
	id       BatchID
	ipc      []byte
}

// replaySegment reads the records of one segment. A record that is cut short
// or fails its checksum ends the segment: everything before it was
// acknowledged, nothing from it on was (its group's fsync never returned),
// so the segment is truncated there and the offset logged.
func replaySegment(fsys FS, dir string, seq uint64, log *slog.Logger, fn func(walEntry) error) error {
	path := filepath.Join(dir, segmentName(seq))
	data, err := fsys.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read wal segment: %w", err)
	}
	off := 0
	for off < len(data) {
		e, n, err := decodeRecord(data[off:])
		if err != nil {
			log.Warn("wal segment has a torn or corrupt record; truncating it there",
				"segment", path, "offset", off, "size", len(data), "error", err)
			return truncateFile(fsys, path, int64(off))
		}
		e.seq = seq
		if err := fn(e); err != nil {
			return fmt.Errorf("replay %s at offset %d: %w", path, off, err)
		}
		off += n
	}
	return nil
}

func decodeRecord(b []byte) (walEntry, int, error) {
	if len(b) < recordHeaderSize {
		return walEntry{}, 0, fmt.Errorf("%w: %d header bytes", errCorrupt, len(b))
	}
	n := int(binary.LittleEndian.Uint32(b[0:4]))
	if n > maxRecordSize || len(b)-recordHeaderSize < n {
		return walEntry{}, 0, fmt.Errorf("%w: length %d exceeds the %d bytes left", errCorrupt, n, len(b)-recordHeaderSize)
	}
	payload := b[recordHeaderSize : recordHeaderSize+n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[4:8]) {
		return walEntry{}, 0, fmt.Errorf("%w: checksum mismatch", errCorrupt)
	}
	e, err := decodePayload(payload)
	return e, recordHeaderSize + n, err
}

func decodePayload(p []byte) (walEntry, error) {
	var e walEntry
	if len(p) < 1 || p[0] != payloadVersion {
		return e, fmt.Errorf("%w: unknown payload version", errCorrupt)
	}
	p = p[1:]
	var ok bool
	if e.database, p, ok = cutString(p); !ok {
		return e, fmt.Errorf("%w: database name", errCorrupt)
	}
	if e.table, p, ok = cutString(p); !ok {
		return e, fmt.Errorf("%w: table name", errCorrupt)
	}
	if len(p) < len(e.id) {
		return e, fmt.Errorf("%w: batch id", errCorrupt)
	}
	copy(e.id[:], p)
	e.ipc = p[len(e.id):]
	return e, nil
}

func cutString(p []byte) (string, []byte, bool) {
	if len(p) < 2 {
		return "", nil, false
	}
	n := int(binary.LittleEndian.Uint16(p))
	if len(p)-2 < n {
		return "", nil, false
	}
	return string(p[2 : 2+n]), p[2+n:], true
}

func truncateFile(fsys FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("open wal segment to truncate: %w", err)
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return fmt.Errorf("truncate wal segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync truncated wal segment: %w", err)
	}
	return f.Close()
}

func dirOf(path string) string { return filepath.Dir(path) }
