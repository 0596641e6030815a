package storage

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	// DefaultDedupWindow is how long a batch ID is remembered, counted in
	// the sidecar's running time: longer than any exporter retry of one
	// push while the sidecar is up (its timeout and backoff).
	DefaultDedupWindow = 15 * time.Minute
	// batchIDsMagic starts a batch ID file that counts in running time;
	// the older format (wall-clock times, no header) is still read.
	batchIDsMagic = "arcids2\n"
	batchIDSize   = sha256.Size + 8
)

// dedup remembers the IDs of durable batches for a window. The window is
// counted in the sidecar's own running time (uptime summed over every
// start, saved with the IDs), not wall time: a sidecar that stored a batch
// and died before acknowledging it may stay down for hours while the
// exporter retries, and the retry must still be known when it comes back.
// The IDs are saved before any WAL segment is deleted, so they outlive the
// records that carried them.
type dedup struct {
	mu      sync.Mutex
	window  time.Duration
	seen    map[BatchID]time.Duration // running time when first stored
	base    time.Duration             // running time of earlier starts
	started time.Time                 // this start, on clock
	clock   func() time.Time
}

func newDedup(window time.Duration, clock func() time.Time) *dedup {
	if clock == nil {
		clock = time.Now
	}
	return &dedup{window: window, seen: map[BatchID]time.Duration{}, clock: clock, started: clock()}
}

// uptime is the running time of this start and every earlier one; d.mu
// is held.
func (d *dedup) uptime() time.Duration { return d.base + d.clock().Sub(d.started) }

func (d *dedup) has(id BatchID) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.seen[id]
	return ok
}

func (d *dedup) add(id BatchID) {
	d.mu.Lock()
	if _, ok := d.seen[id]; !ok {
		d.seen[id] = d.uptime()
	}
	d.mu.Unlock()
}

// encode drops expired IDs and returns the rest: the magic, the running
// time now, then per ID the 32-byte ID and its 8-byte running time.
func (d *dedup) encode() []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.uptime()
	limit := now - d.window
	out := make([]byte, 0, len(batchIDsMagic)+8+len(d.seen)*batchIDSize)
	out = append(out, batchIDsMagic...)
	out = binary.LittleEndian.AppendUint64(out, uint64(now))
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

// decode loads a saved file; the running time goes on from the one it
// was saved at.
func (d *dedup) decode(data []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := !strings.HasPrefix(string(data[:min(len(data), len(batchIDsMagic))]), batchIDsMagic)
	if !old {
		if len(data) < len(batchIDsMagic)+8 {
			return fmt.Errorf("batch id file has %d bytes, too few for its header", len(data))
		}
		d.base = max(d.base, time.Duration(binary.LittleEndian.Uint64(data[len(batchIDsMagic):])))
		d.started = d.clock()
		data = data[len(batchIDsMagic)+8:]
	}
	if len(data)%batchIDSize != 0 {
		return fmt.Errorf("batch id file has %d bytes of ids, not a multiple of %d", len(data), batchIDSize)
	}
	now := d.uptime()
	for off := 0; off < len(data); off += batchIDSize {
		var id BatchID
		copy(id[:], data[off:])
		// The older format has wall-clock times: its IDs get a whole
		// window from now.
		at := now
		if !old {
			at = time.Duration(binary.LittleEndian.Uint64(data[off+sha256.Size:]))
		}
		if _, ok := d.seen[id]; !ok {
			d.seen[id] = at
		}
	}
	return nil
}

func (s *Store) batchIDsPath() string { return filepath.Join(s.sysDir, batchIDsName) }

func (s *Store) saveBatchIDs() error {
	if err := writeFileAtomic(s.fs, s.batchIDsPath(), s.dedup.encode()); err != nil {
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
