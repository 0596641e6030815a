package storage

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// chunk is a record, or some of its rows, waiting in a partition buffer.
type chunk struct {
	rec  arrow.RecordBatch
	rows []int32 // nil: all rows
}

func (c chunk) numRows() int {
	if c.rows == nil {
		return int(c.rec.NumRows())
	}
	return len(c.rows)
}

type partition struct {
	key    partKey
	table  *Table
	chunks []chunk
	rows   int
}

// generation holds every record appended to a run of WAL segments, by
// partition. Only the committer goroutine touches the current generation; a
// flush owns a generation once it has been swapped out.
type generation struct {
	parts map[partKey]*partition
	rows  int64
	bytes int64
	// lastSeq is the last WAL segment whose records are in this generation.
	lastSeq uint64
}

func newGeneration() *generation {
	return &generation{parts: map[partKey]*partition{}}
}

// add keeps rec (one more reference) in the partitions its rows fall in.
func (g *generation) add(database string, t *Table, rec arrow.RecordBatch, size int) {
	hours, rows := split(rec, t.timeCol)
	for i, h := range hours {
		k := partKey{database: database, table: t.Name, hour: h, variant: t.variant}
		p := g.parts[k]
		if p == nil {
			p = &partition{key: k, table: t}
			g.parts[k] = p
		}
		rec.Retain()
		c := chunk{rec: rec, rows: rows[i]}
		p.chunks = append(p.chunks, c)
		p.rows += c.numRows()
	}
	g.rows += rec.NumRows()
	g.bytes += int64(size)
}

func (g *generation) release() {
	for _, p := range g.parts {
		for _, c := range p.chunks {
			c.rec.Release()
		}
	}
	g.parts = nil
}

// roomSignal wakes the writers that found the buffer full once a flush has
// released a generation, a request has given back room it did not fill,
// or the store is closing, so they try again at once instead of being
// refused and coming back after a client's backoff:
// a refusal idles a closed-loop client for its whole Retry-After, and at
// 16 or more concurrent writers those idle seconds cost a third of the
// rate (docs/PERFORMANCE.md).
type roomSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// next returns a channel closed at the next broadcast.
func (r *roomSignal) next() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch == nil {
		r.ch = make(chan struct{})
	}
	return r.ch
}

func (r *roomSignal) broadcast() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}
