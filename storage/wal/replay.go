package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ReadSegment calls fn with the offset and payload of each record of a
// closed segment. Any bad record is a *CorruptionError; so is an error of
// fn that wraps ErrCorrupt (a payload its decoder cannot read).
func ReadSegment(fsys FS, dir string, seq uint64, fn func(off int64, payload []byte) error) error {
	path := filepath.Join(dir, SegmentName(seq))
	data, err := fsys.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read wal segment: %w", err)
	}
	_, _, err = readRecords(path, seq, data, fn)
	return err
}

// ReadSegmentData is ReadSegment on data already read: segment seq's
// bytes, or a prefix of them.
func ReadSegmentData(seq uint64, data []byte, fn func(off int64, payload []byte) error) error {
	_, _, err := readRecords(SegmentName(seq), seq, data, fn)
	return err
}

// readRecords returns where the records start and how far it read; on a
// bad frame, the error is a *CorruptionError whose Err is not a payload
// error.
func readRecords(path string, seq uint64, data []byte, fn func(off int64, payload []byte) error) (start, stop int64, err error) {
	r, err := scanSegment(path, seq, data, fn, false, false)
	return r.start, r.stop, err
}

// scanned is what one pass over a segment's data found.
type scanned struct {
	start, stop int64 // where the records start; where they end
	// torn: what the data holds from stop on is a tail never committed
	// (or a recycled file's older bytes), to cut.
	torn    bool
	damaged []damage // records a repair drops, in order
}

// damage is a stretch of a segment holding one damaged record (or, with
// nothing valid after it, the rest of the records).
type damage struct {
	off, end int
	err      error
}

// scanSegment calls fn with each record of a segment's data. A bad frame
// followed by nothing valid ends the records: in the last segment (last)
// it is a torn tail, elsewhere corruption. A bad frame followed by a valid
// one, or a payload fn refuses, is a damaged record: corruption, which
// repair skips, going on with the frame after it. Corruption not skipped
// is a *CorruptionError.
func scanSegment(path string, seq uint64, data []byte, fn func(off int64, payload []byte) error, last, repair bool) (r scanned, err error) {
	corrupt := func(off int, err error) error {
		return &CorruptionError{Segment: path, Seq: seq, Offset: int64(off), Size: int64(len(data)), Err: err}
	}
	off, seed, end, err := segmentFormat(data, seq)
	if err != nil {
		if repair && !last {
			r.damaged = append(r.damaged, damage{off: 0, end: len(data), err: err})
			return r, nil
		}
		r.torn = last
		return r, corrupt(0, err)
	}
	r.start = int64(off)
	for off < len(data) {
		if end != nil && bytes.HasPrefix(data[off:], end) {
			// Sealed: what follows is what the file held before.
			break
		}
		payload, n, err := readRecord(data[off:], seed)
		if err == nil {
			err = fn(int64(off), payload)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				r.stop = int64(off)
				return r, fmt.Errorf("wal segment %s at offset %d: %w", path, off, err)
			}
			if err == nil {
				off += n
				continue
			}
			if !repair {
				r.stop = int64(off)
				return r, corrupt(off, &payloadError{err})
			}
			r.damaged = append(r.damaged, damage{off: off, end: off + n, err: &payloadError{err}})
			off += n
			continue
		}
		next := nextFrame(data, off, seed, end)
		if next >= 0 && repair {
			r.damaged = append(r.damaged, damage{off: off, end: next, err: err})
			off = next
			continue
		}
		r.stop = int64(off)
		switch {
		case next >= 0:
			return r, corrupt(off, fmt.Errorf("%w; a valid record follows at offset %d: it was written whole and damaged since", err, next))
		case last:
			r.torn = true
		case repair:
			r.damaged = append(r.damaged, damage{off: off, end: len(data), err: err})
			return r, nil
		}
		return r, corrupt(off, err)
	}
	r.stop = int64(off)
	return r, nil
}

// payloadError is a record whose frame and checksum are right but whose
// payload its reader refuses: never a torn write.
type payloadError struct{ err error }

func (e *payloadError) Error() string { return e.err.Error() }
func (e *payloadError) Unwrap() error { return e.err }

// Dropped is a damaged record a repair drops.
type Dropped struct {
	Segment string
	Seq     uint64
	Offset  int64 // of the record's frame
	Bytes   int64 // dropped from Offset on
	// Payload is the bytes after the frame header up to the next record
	// (with none after it, as far as the declared length goes), for a
	// reader to count what is lost; it may be damaged itself.
	Payload []byte
	Err     error
}

// dropped describes damage d of a segment's data.
func dropped(path string, seq uint64, data []byte, d damage) Dropped {
	out := Dropped{Segment: path, Seq: seq, Offset: int64(d.off), Bytes: int64(d.end - d.off), Err: d.err}
	p := d.off + HeaderSize
	if p > d.end {
		return out
	}
	out.Payload = data[p:d.end]
	if size := int(binary.LittleEndian.Uint32(data[d.off:])); d.end == len(data) && size <= d.end-p {
		out.Payload = data[p : p+size]
	}
	return out
}

// Replay reads the segments seqs (in order, as Segments lists them) and
// calls fn with each record. A record cut short or failing its checksum
// with nothing valid after it, in the last segment, is a write that never
// finished, so never acknowledged, or a record of the file's previous life
// (recycled files are reused without being cleared): the segment is
// truncated there and the cut logged. Any other bad record (in an older
// segment, one with a valid record after it, or a payload fn refuses)
// stops replay with a *CorruptionError, unless opts.Repair is set: then
// the damaged record alone is dropped, the segment rewritten without it
// (or truncated, when nothing valid follows), opts.Dropped told and the
// drop logged.
//
// It returns the bytes of records each segment holds (what its file holds
// before an end marker or a cut), which Open counts through
// Options.Counted.
func Replay(opts Options, seqs []uint64, fn func(seq uint64, off int64, payload []byte) error) (map[uint64]int64, error) {
	log := opts.logger()
	counted := make(map[uint64]int64, len(seqs))
	for i, seq := range seqs {
		path := filepath.Join(opts.Dir, SegmentName(seq))
		data, err := opts.FS.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read wal segment: %w", err)
		}
		r, err := scanSegment(path, seq, data, func(off int64, p []byte) error { return fn(seq, off, p) }, i == len(seqs)-1, opts.Repair)
		var ce *CorruptionError
		if err != nil && (!r.torn || !errors.As(err, &ce)) {
			return nil, err
		}
		if r.torn {
			log.Warn("the last wal segment ends in bytes never committed (a torn record, or what its recycled file held before); truncating it there",
				"segment", path, "offset", ce.Offset, "size", ce.Size, "error", ce.Err)
		}
		kept := max(r.stop-r.start, 0)
		for _, d := range r.damaged {
			kept -= int64(min(d.end, int(r.stop)) - d.off)
			drop := dropped(path, seq, data, d)
			rows := int64(-1)
			if opts.Dropped != nil {
				rows = opts.Dropped(drop)
			}
			attrs := []any{"segment", path, "offset", drop.Offset, "bytes", drop.Bytes, "rows", rows, "error", d.err}
			if rows < 0 {
				attrs[7] = "unknown"
			}
			log.Error("repairing the wal: dropping a damaged record", attrs...)
		}
		counted[seq] = max(kept, 0)
		if err := rewrite(opts.FS, path, data, r); err != nil {
			return nil, err
		}
	}
	return counted, nil
}

// rewrite makes a segment hold only what its scan kept: it cuts a torn
// tail or damage with nothing after it, and copies the records around a
// damaged one into a new file that replaces it (temp file, fsync, rename,
// fsync the directory; a crash leaves the old file or the new).
func rewrite(fsys FS, path string, data []byte, r scanned) error {
	inside := len(r.damaged) > 0 && r.damaged[0].off < int(r.stop)
	if !inside {
		if (r.torn || len(r.damaged) > 0) && r.stop < int64(len(data)) {
			return truncate(fsys, path, r.stop)
		}
		return nil
	}
	tmp := path + repairSuffix
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create repaired wal segment: %w", err)
	}
	bufs := [][]byte{data[:r.start]}
	at := int(r.start)
	for _, d := range r.damaged {
		bufs = append(bufs, data[at:min(d.off, int(r.stop))])
		at = d.end
	}
	if at < int(r.stop) {
		bufs = append(bufs, data[at:r.stop])
	}
	if _, err := writeEach(f, bufs); err != nil {
		f.Close()
		return fmt.Errorf("write repaired wal segment: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync repaired wal segment: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close repaired wal segment: %w", err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		return fmt.Errorf("replace repaired wal segment: %w", err)
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("sync wal dir: %w", err)
	}
	return nil
}

// repairSuffix ends the name of a segment being rewritten by a repair; it
// does not end in SegmentExt, so it is never listed as a segment, and Open
// removes one a crash left.
const repairSuffix = ".repair"

func truncate(fsys FS, path string, size int64) error {
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
