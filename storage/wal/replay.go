package wal

import (
	"bytes"
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
	off, seed, end, err := segmentFormat(data, seq)
	if err != nil {
		return 0, 0, &CorruptionError{Segment: path, Seq: seq, Size: int64(len(data)), Err: err}
	}
	start = int64(off)
	for off < len(data) {
		if end != nil && bytes.HasPrefix(data[off:], end) {
			// Sealed: what follows is what the file held before.
			return start, int64(off), nil
		}
		payload, n, err := readRecord(data[off:], seed)
		if err == nil {
			err = fn(int64(off), payload)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				return start, int64(off), fmt.Errorf("wal segment %s at offset %d: %w", path, off, err)
			}
			if err != nil {
				err = &payloadError{err}
			}
		}
		if err != nil {
			return start, int64(off), &CorruptionError{Segment: path, Seq: seq, Offset: int64(off), Size: int64(len(data)), Err: err}
		}
		off += n
	}
	return start, int64(off), nil
}

// payloadError is a record whose frame and checksum are right but whose
// payload its reader refuses: never a torn write.
type payloadError struct{ err error }

func (e *payloadError) Error() string { return e.err.Error() }
func (e *payloadError) Unwrap() error { return e.err }

// Replay reads the segments seqs (in order, as Segments lists them) and
// calls fn with each record. A record cut short or failing its checksum in
// the last segment is a write that never finished, so never acknowledged,
// or a record of the file's previous life (recycled files are reused
// without being cleared): the segment is truncated there and the cut
// logged. Any other bad record
// (in an older segment, or a payload fn refuses) stops replay with a
// *CorruptionError, unless opts.Repair is set: then the segment is
// truncated at the record and what is dropped is logged.
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
		start, stop, err := readRecords(path, seq, data, func(off int64, p []byte) error { return fn(seq, off, p) })
		counted[seq] = max(stop-start, 0)
		var ce *CorruptionError
		if !errors.As(err, &ce) {
			if err != nil {
				return nil, err
			}
			continue
		}
		var pe *payloadError
		torn := i == len(seqs)-1 && !errors.As(ce.Err, &pe)
		switch {
		case torn:
			log.Warn("the last wal segment ends in bytes never committed (a torn record, or what its recycled file held before); truncating it there",
				"segment", path, "offset", ce.Offset, "size", ce.Size, "error", ce.Err)
		case opts.Repair:
			log.Error("repairing the wal: truncating a corrupt segment, the records from the offset on are dropped",
				"segment", path, "offset", ce.Offset, "dropped_bytes", ce.Size-ce.Offset, "error", ce.Err)
		default:
			return nil, ce
		}
		if err := truncate(opts.FS, path, ce.Offset); err != nil {
			return nil, err
		}
	}
	return counted, nil
}

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
