package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// BatchID identifies a batch by its content: the SHA-256 of its database,
// table and Arrow record batch message. A sidecar killed after making a
// batch durable but before its acknowledgement reached the exporter sees
// the same batch again on the retry; the ID lets it acknowledge without
// storing a second copy. Identical content is by definition a duplicate in
// telemetry (same ids, same timestamps, same values).
type BatchID [sha256.Size]byte

// NoDedup is the ID of a batch that is never a retry of another: it is
// neither checked nor remembered.
var NoDedup BatchID

// NewBatchID hashes a batch.
func NewBatchID(database, table string, parts ...[]byte) BatchID {
	h := sha256.New()
	h.Write([]byte(database))
	h.Write([]byte{0})
	h.Write([]byte(table))
	h.Write([]byte{0})
	for _, p := range parts {
		h.Write(p)
	}
	var id BatchID
	h.Sum(id[:0])
	return id
}

const (
	batchIDsName = "batch-ids"
	// DefaultDedupWindow is how long a batch ID is remembered: longer than
	// any exporter retry of one push (its timeout and backoff).
	DefaultDedupWindow = 15 * time.Minute
)

// dedup remembers the IDs of durable batches for a window. It is saved
// before every flush deletes WAL segments, so IDs outlive the records that
// carried them.
type dedup struct {
	mu     sync.Mutex
	window time.Duration
	seen   map[BatchID]int64 // unix nanos when first stored
}

func newDedup(window time.Duration) *dedup {
	return &dedup{window: window, seen: map[BatchID]int64{}}
}

func (d *dedup) has(id BatchID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.seen[id]
	return ok
}

func (d *dedup) add(id BatchID, at int64) {
	d.mu.Lock()
	if _, ok := d.seen[id]; !ok {
		d.seen[id] = at
	}
	d.mu.Unlock()
}

// encode drops expired IDs and returns the rest: 32-byte ID, 8-byte time.
func (d *dedup) encode(now time.Time) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	limit := now.Add(-d.window).UnixNano()
	out := make([]byte, 0, len(d.seen)*(sha256.Size+8))
	for id, at := range d.seen {
		if at < limit {
			delete(d.seen, id)
			continue
		}
		out = append(out, id[:]...)
		out = binary.LittleEndian.AppendUint64(out, uint64(at))
	}
	return out
}

func (d *dedup) decode(data []byte) error {
	const size = sha256.Size + 8
	if len(data)%size != 0 {
		return fmt.Errorf("batch id file has %d bytes, not a multiple of %d", len(data), size)
	}
	for off := 0; off < len(data); off += size {
		var id BatchID
		copy(id[:], data[off:])
		d.add(id, int64(binary.LittleEndian.Uint64(data[off+sha256.Size:])))
	}
	return nil
}

func (s *Store) batchIDsPath() string { return filepath.Join(s.sysDir, batchIDsName) }

func (s *Store) saveBatchIDs() error {
	if err := writeFileAtomic(s.fs, s.batchIDsPath(), s.dedup.encode(time.Now())); err != nil {
		return fmt.Errorf("save batch ids: %w", err)
	}
	return nil
}

func (s *Store) loadBatchIDs() error {
	data, err := s.fs.ReadFile(s.batchIDsPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read batch ids: %w", err)
	}
	return s.dedup.decode(data)
}
