package receiver

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

// inflightRequests is how many requests' worth of -max-decoded-memory may
// be decoding or waiting for their commit at once. A request's budget
// counts what it holds: its decoded columns, and once they are built, the
// copy of them written to the WAL and what building them takes (besides
// the compressed copy of a small gzip body, at most maxWholeGzip, each
// holds while it decodes).
const inflightRequests = 3

// inflight bounds the memory of the write requests in progress. A
// request's body is received whole first, within the room for bodies
// (receive); then it reserves its whole budget (so the semaphore is taken
// once and nothing waits while holding part of it: no deadlock), moves its
// body into that budget, keeps what its budget counts once its batches are
// built, and gives the rest back when it is answered. A client that sends
// its body slowly holds only the room its bytes take, never a budget.
// Requests past the bound wait their turn in arrival order; a client that
// gives up stops waiting.
type inflight struct {
	once   sync.Once
	sem    *semaphore.Weighted
	budget int64
	// room bounds the bodies being received, as sent, and those received
	// and waiting their turn: one budget's worth.
	room *semaphore.Weighted
}

func (f *inflight) init(budget int64) {
	f.once.Do(func() {
		if budget <= 0 {
			budget = arcmsgpack.DefaultMaxBytes
		}
		f.budget = budget
		f.sem = semaphore.NewWeighted(inflightRequests * budget)
		f.room = semaphore.NewWeighted(budget)
	})
}

// ticket is one request's share of the bound.
type ticket struct {
	f    *inflight
	held int64
}

// admit waits until a request's budget is free.
func (f *inflight) admit(ctx context.Context, budget int64) (*ticket, error) {
	f.init(budget)
	if err := f.sem.Acquire(ctx, f.budget); err != nil {
		return nil, err
	}
	return &ticket{f: f, held: f.budget}, nil
}

// keep gives back what is held past n bytes.
func (t *ticket) keep(n int64) {
	if n < t.held {
		t.f.sem.Release(t.held - n)
		t.held = n
	}
}

// done gives everything back.
func (t *ticket) done() { t.keep(0) }
