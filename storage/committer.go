package storage

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// committer is the hot path: it admits requests against the buffer, the
// disk and the WAL's bound, writes them to the WAL in groups that share
// one fsync, and buffers what it committed in the current generation
// until a flush rotates it out. Its goroutine is the only writer of the
// WAL and of the current generation. It is a concrete type on purpose:
// a request costs no interface call or channel hop more than before.
type committer struct {
	log        *slog.Logger
	mem        memory.Allocator
	obs        Observer
	noParquet  bool
	flushBytes int64
	maxBuffer  int64
	maxWAL     int64
	bufferWait time.Duration
	disk       diskFloor
	wal        *walState
	dedup      *dedup
	flusher    *flusher // asked to flush when enough is buffered
	sinks      *sinkSet // told of each closed segment

	appends chan *appendReq
	rotates chan chan *generation
	quit    <-chan struct{}

	gen      *generation  // owned by the committer goroutine
	group    []*appendReq // heads of requests
	scratch  []byte
	ends     []int
	parts    [][]byte
	buffered atomic.Int64 // bytes in every generation not yet released
	// admitted counts the bytes of requests past the buffer check and not
	// yet answered: concurrent requests see each other's before they are
	// in a generation, so together they cannot overshoot the ceiling.
	admitted atomic.Int64
	// room wakes writers waiting for buffer room (AppendAll); waiting
	// counts them, waited sums their waits in nanoseconds, waits counts
	// the waits begun (the flusher's sign that it is behind).
	room    roomSignal
	waiting atomic.Int32
	waited  atomic.Int64
	waits   atomic.Int64
	closing atomic.Bool
	closeMu sync.RWMutex // Append holds it shared so Close can wait them out
}

// committerConfig is the part of Options the committer reads; the Store
// builds it (committerConfigOf).
type committerConfig struct {
	Logger         *slog.Logger
	Allocator      memory.Allocator
	Observer       Observer
	NoParquet      bool
	FlushBytes     int64
	MaxBufferBytes int64
	MaxWALBytes    int64
	BufferWait     time.Duration
	DataDir        string
	MinFreeDisk    int64
	DiskFree       DiskFree
}

func newCommitter(cfg committerConfig, w *walState, d *dedup, sinks *sinkSet, quit <-chan struct{}) *committer {
	return &committer{
		log:        cfg.Logger,
		mem:        cfg.Allocator,
		obs:        cfg.Observer,
		noParquet:  cfg.NoParquet,
		flushBytes: cfg.FlushBytes,
		maxBuffer:  cfg.MaxBufferBytes,
		maxWAL:     cfg.MaxWALBytes,
		bufferWait: cfg.BufferWait,
		disk:       diskFloor{free: cfg.DiskFree, dir: cfg.DataDir, min: cfg.MinFreeDisk},
		wal:        w,
		dedup:      d,
		sinks:      sinks,
		appends:    make(chan *appendReq, maxGroup),
		rotates:    make(chan chan *generation),
		quit:       quit,
		gen:        newGeneration(),
	}
}

// abandon drops the current generation the way a crash would.
func (c *committer) abandon() { c.gen.release() }

// rememberID keeps the batch ID of a record that is not replayed.
func (c *committer) rememberID(e walEntry) {
	if e.id != NoDedup {
		c.dedup.add(e.id)
	}
}

func (c *committer) replayEntry(e walEntry) error {
	c.rememberID(e)
	rec, err := decodeWALRecord(e.ipc, c.mem)
	if err != nil {
		return err
	}
	defer rec.Release()
	t, err := tableFor(e.table, rec.Schema())
	if err != nil {
		return err
	}
	if err := t.Check(rec); err != nil {
		return err
	}
	c.addToGen(e.database, t, rec, len(e.ipc))
	return nil
}

// addToGen buffers a durable record for the next flush. Without Parquet
// only its size counts (it starts flushes, which close WAL segments for
// the sinks to read).
func (c *committer) addToGen(database string, t *Table, rec arrow.RecordBatch, size int) {
	if c.noParquet {
		c.gen.rows += rec.NumRows()
		c.gen.bytes += int64(size)
	} else {
		c.gen.add(database, t, rec, size)
	}
	c.buffered.Add(int64(size))
}

// waitForRoom waits for room, the end of the request's BufferWait or its
// client; waiting and waited let the committer and /metrics see it. full
// is what it waits out: the buffer's ceiling, which flushes make room
// under, or the disk's floor, which they may and whatever frees space
// (retention, an operator) may, unannounced: the disk is looked at again
// every diskRecheck.
func (c *committer) waitForRoom(ctx context.Context, room <-chan struct{}, giveUp <-chan time.Time, full error) error {
	c.waiting.Add(1)
	c.waits.Add(1)
	start := time.Now()
	defer func() {
		c.waited.Add(int64(time.Since(start)))
		c.waiting.Add(-1)
	}()
	var recheck <-chan time.Time
	if errors.Is(full, ErrDiskLow) {
		t := time.NewTimer(diskRecheck)
		defer t.Stop()
		recheck = t.C
	}
	select {
	case <-room:
		return nil
	case <-recheck:
		return nil
	case <-giveUp:
		return fmt.Errorf("%w (waited %s for a flush to make room)", full, c.bufferWait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// appendAll is one attempt of AppendAll; full is why it found no room
// for size more bytes (ErrBackpressure: the buffer; ErrDiskLow: the
// disk), and nothing was stored. It waits without holding closeMu, so
// Close does not wait for a flush that may never come.
func (c *committer) appendAll(ctx context.Context, batches []Batch, size int64) (full, _ error) {
	if c.closing.Load() {
		// Before RLock: a Close waiting for the lock blocks new readers
		// until the requests in flight are answered.
		return nil, ErrClosed
	}
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closing.Load() {
		return nil, ErrClosed
	}
	if err := c.disk.check(size); err != nil {
		if c.buffered.Load() > 0 {
			// A flush turns WAL segments into smaller Parquet files; one
			// of nothing would only rotate the WAL.
			c.flusher.request()
		}
		return err, nil
	}
	if c.admitted.Add(size)+c.buffered.Load() > c.maxBuffer {
		c.admitted.Add(-size)
		c.flusher.request()
		return ErrBackpressure, nil
	}
	// Once answered, committed rows are in buffered (addToGen runs before
	// the answer), so for a moment they count twice: on the safe side.
	added := false
	defer func() {
		c.admitted.Add(-size)
		if !added && c.waiting.Load() > 0 {
			// Refused, failed or all duplicates: the room it held is free
			// again, and no flush will say so.
			c.room.broadcast()
		}
	}()
	if err := c.wal.Err(); err != nil {
		return nil, err
	}
	if wal := c.wal.Bytes(); wal+size > c.maxWAL {
		return nil, fmt.Errorf("%w: the wal holds %d bytes not yet in every sink (limit %d)%s", ErrBackpressure, wal, c.maxWAL, c.sinks.heldNote())
	}
	reqs := make([]*appendReq, 0, len(batches))
	for i := range batches {
		b := &batches[i]
		if c.dedup.stored(b.ID, b.LegacyID) {
			b.Deduplicated = true
			c.deduplicated(b.Database, b.Table, b.Rec)
			continue
		}
		b.Rec.Retain()
		reqs = append(reqs, &appendReq{id: b.ID, batch: b, database: b.Database, table: b.Table, ipc: b.IPC, rec: b.Rec, done: make(chan error, 1)})
	}
	if len(reqs) == 0 {
		return nil, nil
	}
	// The first batch carries the others into the committer's group.
	reqs[0].request = reqs
	select {
	case c.appends <- reqs[0]:
	case <-ctx.Done():
		for _, r := range reqs {
			r.rec.Release()
		}
		return nil, ctx.Err()
	}
	// Once queued, the outcome must be waited for: the caller may only
	// forget a batch that is known not to be acknowledged.
	var err error
	for _, r := range reqs {
		if rerr := <-r.done; rerr != nil && err == nil {
			err = rerr
		}
		r.batch.Deduplicated = r.dup // written before done was sent
		added = added || !r.dup
	}
	added = added && err == nil
	return nil, err
}

// released gives back the buffer room of a flushed generation.
func (c *committer) released(bytes int64) {
	c.buffered.Add(-bytes)
	if bytes > 0 {
		c.room.broadcast()
	}
}

// commitLoop is the only writer of the WAL and of the current generation.
// Requests that arrive while an fsync runs queue up and share the next one.
func (c *committer) commitLoop() {
	for {
		select {
		case r := <-c.appends:
			c.group = append(c.group[:0], r)
			for len(c.group) < maxGroup {
				select {
				case r := <-c.appends:
					c.group = append(c.group, r)
					continue
				default:
				}
				break
			}
			c.commitGroup()
		case reply := <-c.rotates:
			reply <- c.rotate()
		case <-c.quit:
			return
		}
	}
}

// commitGroup writes each request of the group as one WAL record (so a
// request is stored whole or not at all) and commits them with one fsync.
func (c *committer) commitGroup() {
	inGroup := map[BatchID]bool{}
	var written int
	var bytes int64
	// The WAL does not copy what it is given until the commit, so every
	// request's batch headers go to scratch first, for the whole group,
	// and are sliced after, as appending may move it: ends has, per
	// request, the end of its payload's first 5 bytes and of each batch
	// header.
	c.scratch = c.scratch[:0]
	ends := c.ends[:0]
	for _, head := range c.group {
		at := len(c.scratch)
		c.scratch = append(c.scratch, payloadVersion, 0, 0, 0, 0)
		ends = append(ends, len(c.scratch))
		var n uint32
		for _, r := range head.batches() {
			if r.dup = r.id != NoDedup && (inGroup[r.id] || c.dedup.stored(r.batch.ID, r.batch.LegacyID)); r.dup {
				c.deduplicated(r.database, r.table, r.rec)
				continue
			}
			if r.id != NoDedup {
				inGroup[r.id] = true
			}
			c.scratch = appendBatchHeader(c.scratch, r.database, r.table.Name, r.id, len(r.ipc))
			ends = append(ends, len(c.scratch))
			n++
		}
		binary.LittleEndian.PutUint32(c.scratch[at+1:], n)
	}
	c.ends = ends
	i := 0
	for _, head := range c.group {
		start := ends[i] - 5
		parts := append(c.parts[:0], c.scratch[start:ends[i]])
		i++
		for _, r := range head.batches() {
			if r.dup {
				continue
			}
			parts = append(parts, c.scratch[ends[i-1]:ends[i]], r.ipc)
			i++
		}
		if len(parts) > 1 {
			bytes += c.wal.Write(parts...)
			written += (len(parts) - 1) / 2
		}
		clear(parts)
		c.parts = parts[:0]
	}
	start := time.Now()
	err := c.wal.Commit()
	c.obs.Committed(Commit{Batches: written, Bytes: bytes, Sync: time.Since(start), Err: err})
	for _, head := range c.group {
		for _, r := range head.batches() {
			if err == nil && !r.dup {
				if r.id != NoDedup {
					c.dedup.add(r.id)
				}
				c.addToGen(r.database, r.table, r.rec, len(r.ipc))
			}
			r.rec.Release()
			r.done <- err
		}
	}
	if err != nil {
		c.log.Error("wal commit failed; batches were not acknowledged", "requests", len(c.group), "error", err)
	}
	clear(c.group)
	// Writers waiting for room need a flush of what is here now: the one
	// they asked for may have found nothing to flush, their room held by
	// requests not yet committed then.
	if c.gen.bytes >= c.flushBytes || (c.gen.bytes > 0 && c.waiting.Load() > 0) {
		c.flusher.request()
	}
}

// rotate hands the current generation to a flush and starts a new one on a
// new WAL segment. It runs on the committer goroutine, between groups, so
// every record of the old segments is in the old generation.
func (c *committer) rotate() *generation {
	old := c.gen
	closed, err := c.wal.Rotate()
	if err != nil {
		c.log.Error("cannot start a new wal segment; flushing later", "error", err)
		return nil
	}
	old.lastSeq = closed
	c.gen = newGeneration()
	c.sinks.segmentClosed(old.lastSeq)
	return old
}

// deduplicated reports a dropped copy to the observer.
func (c *committer) deduplicated(database string, t *Table, rec arrow.RecordBatch) {
	c.obs.Deduplicated(Duplicate{Database: database, Table: t.Name, Rows: rec.NumRows()})
}
