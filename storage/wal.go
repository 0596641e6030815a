package storage

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// The WAL (package wal) frames and checksums records; a record's payload
// here is one request, every batch of it, so a request is replayed whole
// or not at all however many write calls it took:
//
//	version 3: uint8 3 | uint32 batches | batches × (uint16 len | database |
//	           uint16 len | table | 32-byte batch ID | uint32 len | Arrow IPC stream)
//	version 2: uint8 2 | uint16 len | database | uint16 len | table |
//	           32-byte batch ID | Arrow IPC stream (one batch; still read)
//
// A payload of any other version is refused loudly (a *wal.CorruptionError
// that stops start-up), never skipped.
const (
	segmentExt     = wal.SegmentExt
	payloadVersion = 3
)

// walMaxWrite is the most bytes one WAL write call takes; a variable so
// tests can make a request span several write calls.
var walMaxWrite = wal.DefaultMaxWrite

// walState is the Store's WAL, where it lives, and what a repair at
// start-up dropped.
type walState struct {
	*wal.WAL
	dir    string
	fs     FS
	log    *slog.Logger
	repair bool // Options.WALRepair
	// lost reports whether some consumer did not have segment seq yet: a
	// damaged record of it that a repair drops is lost.
	lost     func(seq uint64) bool
	repaired walRepair
}

func (w *walState) options() wal.Options {
	return wal.Options{FS: w.fs, Dir: w.dir, Logger: w.log, MaxWrite: walMaxWrite, Repair: w.repair, Dropped: w.dropped}
}

// stats returns the number of segments and the bytes of their records.
func (w *walState) stats() (segments int, bytes int64, err error) {
	entries, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("list wal: %w", err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), segmentExt) {
			continue
		}
		segments++
		if w.WAL != nil {
			continue
		}
		// Before the WAL opens, the files are all there is to count.
		if info, err := e.Info(); err == nil {
			bytes += info.Size()
		}
	}
	if w.WAL != nil {
		bytes = w.Bytes()
	}
	return segments, bytes, nil
}

// walRepair is what a repair at start-up dropped that some consumer did
// not have yet: written during recovery, read after Open returns.
type walRepair struct {
	records int                 // damaged records lost
	rows    map[[2]string]int64 // their rows by database and table, where readable
}

// DroppedRows is how many rows of one table a WAL repair dropped.
type DroppedRows struct {
	Database, Table string
	Rows            int64
}

// dropped is told each damaged record a repair drops and returns how
// many rows it held (-1 when its payload cannot be read: the damage hit
// its batches' framing). The damage is often in the frame alone (its
// length or checksum) or in a column's values, so the names and row
// counts usually still read; rows already in Parquet and in every sink are
// not lost.
func (w *walState) dropped(d wal.Dropped) int64 {
	lost := w.lost(d.Seq)
	if lost {
		w.repaired.records++
	} else {
		w.log.Info("the damaged wal record was stored by every consumer before: nothing is lost", "segment", d.Segment, "offset", d.Offset)
	}
	entries, err := decodePayload(d.Payload)
	if err != nil {
		return -1
	}
	counts := make([]int64, len(entries))
	var rows int64
	for i, e := range entries {
		n, err := arcflight.Rows(e.ipc)
		if err != nil || !utf8.ValidString(e.database) || !utf8.ValidString(e.table) {
			return -1
		}
		counts[i] = n
		rows += n
	}
	if lost {
		if w.repaired.rows == nil {
			w.repaired.rows = map[[2]string]int64{}
		}
		for i, e := range entries {
			w.repaired.rows[[2]string{e.database, e.table}] += counts[i]
		}
	}
	return rows
}

// walEntry is one batch of a replayed record.
type walEntry struct {
	seq      uint64
	database string
	table    string
	id       BatchID
	ipc      []byte
}

// appendBatchHeader appends what precedes a batch's IPC stream in a
// version 3 payload.
func appendBatchHeader(dst []byte, database, table string, id BatchID, ipcLen int) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(database)))
	dst = append(dst, database...)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(table)))
	dst = append(dst, table...)
	dst = append(dst, id[:]...)
	return binary.LittleEndian.AppendUint32(dst, uint32(ipcLen))
}

// decodePayload returns the batches of one record, whichever version
// wrote it. Errors wrap wal.ErrCorrupt.
func decodePayload(p []byte) ([]walEntry, error) {
	if len(p) < 1 {
		return nil, fmt.Errorf("%w: empty payload", wal.ErrCorrupt)
	}
	switch p[0] {
	case 2:
		e, rest, err := decodeBatch(p[1:], false)
		if err != nil {
			return nil, err
		}
		e.ipc = rest
		return []walEntry{e}, nil
	case 3:
		if len(p) < 5 {
			return nil, fmt.Errorf("%w: batch count", wal.ErrCorrupt)
		}
		n := int(binary.LittleEndian.Uint32(p[1:]))
		p = p[5:]
		out := make([]walEntry, 0, min(n, 64))
		for range n {
			e, rest, err := decodeBatch(p, true)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			p = rest
		}
		if len(p) != 0 {
			return nil, fmt.Errorf("%w: %d bytes after the last batch", wal.ErrCorrupt, len(p))
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: payload version %d is not one this build reads (2 or 3); run the build that wrote it, or repair the wal to drop it", wal.ErrCorrupt, p[0])
}

func decodeBatch(p []byte, sized bool) (walEntry, []byte, error) {
	var e walEntry
	var ok bool
	if e.database, p, ok = cutString(p); !ok {
		return e, nil, fmt.Errorf("%w: database name", wal.ErrCorrupt)
	}
	if e.table, p, ok = cutString(p); !ok {
		return e, nil, fmt.Errorf("%w: table name", wal.ErrCorrupt)
	}
	if len(p) < len(e.id) {
		return e, nil, fmt.Errorf("%w: batch id", wal.ErrCorrupt)
	}
	copy(e.id[:], p)
	p = p[len(e.id):]
	if !sized {
		return e, p, nil
	}
	if len(p) < 4 {
		return e, nil, fmt.Errorf("%w: batch length", wal.ErrCorrupt)
	}
	n := int(binary.LittleEndian.Uint32(p))
	p = p[4:]
	if len(p) < n {
		return e, nil, fmt.Errorf("%w: batch of %d bytes, %d left", wal.ErrCorrupt, n, len(p))
	}
	e.ipc = p[:n]
	return e, p[n:], nil
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

// decodeWALRecord decodes a batch of a WAL record in the contract's time
// unit: records that earlier builds wrote hold nanoseconds
// (schema.StoredTimes).
func decodeWALRecord(ipc []byte, mem memory.Allocator) (arrow.RecordBatch, error) {
	rec, err := arcflight.DecodeRecord(ipc, mem)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	return schema.StoredTimes(rec), nil
}
