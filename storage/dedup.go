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

	"github.com/zeebo/xxh3"
)

// BatchID identifies a batch by its content: a 128-bit XXH3 of its
// database, table and Arrow record batch message, then idTag. A sidecar
// killed after making a batch durable but before its acknowledgement
// reached the exporter sees the same batch again on the retry; the ID lets
// it acknowledge without storing a second copy. Identical content is by
// definition a duplicate in telemetry (same ids, same timestamps, same
// values).
//
// XXH3-128 rather than SHA-256 (which earlier versions used: see
// LegacyBatchID): it hashes record batches at about 11 GB/s on the
// reference machine against SHA-256's 1.3 GB/s with SHA-NI
// (BenchmarkBatchID), which was 6.5 % of the sidecar's CPU under the traces
// load test. What dedup needs is that two different batches of one window
// (15 minutes of running time, at most millions of IDs) never share an
// ID by chance: with 128 bits the chance is under 2^-80. It does not
// need resistance to crafted collisions: only the authenticated exporter
// sends batches, and a sender that forged one could only lose its own
// data.
type BatchID [32]byte

// idTag fills the second half of a BatchID: it tells the IDs of this
// version from the SHA-256 IDs of earlier ones (whose second half is
// never this, but with chance 2^-128).
var idTag = [16]byte{'a', 'r', 'c', 'i', 'd', '/', 'x', 'x', 'h', '3', '-', '1', '2', '8', 0, 0}

// NoDedup is the ID of a batch that is never a retry of another: it is
// neither checked nor remembered.
var NoDedup BatchID

// NewBatchID hashes a batch.
func NewBatchID(database, table string, parts ...[]byte) BatchID {
	h := xxh3.New()
	_, _ = h.WriteString(database)
	_, _ = h.Write([]byte{0})
	_, _ = h.WriteString(table)
	_, _ = h.Write([]byte{0})
	for _, p := range parts {
		_, _ = h.Write(p)
	}
	var id BatchID
	sum := h.Sum128().Bytes()
	copy(id[:16], sum[:])
	copy(id[16:], idTag[:])
	return id
}

// LegacyBatchID is the ID earlier versions gave a batch: the SHA-256 of
// the same bytes. Batches stored under it are still recognised as long as
// they are remembered (Store.LegacyBatchIDs, Batch.LegacyID), so that an
// upgrade while an exporter retries stores nothing twice.
func LegacyBatchID(database, table string, parts ...[]byte) BatchID {
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

func (id BatchID) legacy() bool { return id != NoDedup && [16]byte(id[16:]) != idTag }

const (
	batchIDsName = "batch-ids"
	// DefaultDedupWindow is how long a batch ID is remembered, counted in
	// the sidecar's running time: longer than any exporter retry of one
	// push while the sidecar is up (its timeout and backoff).
	DefaultDedupWindow = 15 * time.Minute
	// batchIDsMagic starts a batch ID file that counts in running time;
	// the older format (wall-clock times, no header) is still read.
	batchIDsMagic = "arcids2\n"
	batchIDSize   = len(BatchID{}) + 8
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
	legacy  int                       // IDs in seen that LegacyBatchID made
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
	d.addLocked(id, d.uptime())
	d.mu.Unlock()
}

func (d *dedup) addLocked(id BatchID, at time.Duration) {
	if _, ok := d.seen[id]; !ok {
		d.seen[id] = at
		if id.legacy() {
			d.legacy++
		}
	}
}

// hasLegacy reports whether IDs of earlier versions (LegacyBatchID) are
// still remembered.
func (d *dedup) hasLegacy() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.legacy > 0
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
			if id.legacy() {
				d.legacy--
			}
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
			at = time.Duration(binary.LittleEndian.Uint64(data[off+len(id):]))
		}
		d.addLocked(id, at)
	}
	return nil
}

// save writes the IDs to the batch-ids file of the system folder sys.
func (d *dedup) save(fsys FS, sys string) error {
	if err := writeFileAtomic(fsys, filepath.Join(sys, batchIDsName), d.encode()); err != nil {
		return fmt.Errorf("save batch ids: %w", err)
	}
	return nil
}

// load reads the IDs of the batch-ids file of the system folder sys, if
// there is one.
func (d *dedup) load(fsys FS, sys string) error {
	data, err := fsys.ReadFile(filepath.Join(sys, batchIDsName))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read batch ids: %w", err)
	}
	return d.decode(data)
}

// stored reports whether a batch is a copy of one stored within the
// dedup window, under its ID or the ID an earlier version gave it
// (legacy).
func (d *dedup) stored(id, legacy BatchID) bool {
	if id == NoDedup {
		return false
	}
	return d.has(id) || legacy != NoDedup && d.has(legacy)
}
