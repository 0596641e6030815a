package arcexporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// maxIdle is how long a DoPut stream may sit unused in the pool before it
// is closed instead of reused.
const maxIdle = time.Minute

// putStream is a long-lived DoPut stream of one table. It carries the
// descriptor and the schema once, then the batches of every push that uses
// it; the sidecar numbers acknowledgements per stream, so next is the
// sequence number the next acknowledgement must carry. A push owns the
// stream while it runs; a stream that failed in any way is closed, never
// reused, so a stream in the pool always has every batch it carried
// acknowledged.
type putStream struct {
	table    *schema.Table
	ctx      context.Context // the stream's: ended by close and by send's end of push
	cancel   context.CancelFunc
	stream   flight.FlightService_DoPutClient
	w        *batchWriter // sends the schema with the stream's first batch
	next     uint64
	lastUsed time.Time
}

// streamPool holds the idle streams of each table. Pushes take the most
// recently used one (the others age and are closed), so the pool holds
// about one stream per queue consumer and table.
type streamPool struct {
	mu     sync.Mutex
	idle   map[*schema.Table][]*putStream
	closed bool
}

// take returns an idle stream of t, or nil when there is none.
func (p *streamPool) take(t *schema.Table, now time.Time) *putStream {
	p.mu.Lock()
	defer p.mu.Unlock()
	free, ok := p.idle[t]
	if !ok {
		return nil
	}
	for len(free) > 0 && now.Sub(free[0].lastUsed) > maxIdle {
		free[0].close()
		free = free[1:]
	}
	var s *putStream
	if n := len(free); n > 0 {
		s, free = free[n-1], free[:n-1]
	}
	p.idle[t] = free
	return s
}

// put returns a healthy stream to the pool.
func (p *streamPool) put(s *putStream, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		s.close()
		return
	}
	s.lastUsed = now
	if p.idle == nil {
		p.idle = map[*schema.Table][]*putStream{}
	}
	p.idle[s.table] = append(p.idle[s.table], s)
}

// close ends every idle stream; streams returned later are closed too.
func (p *streamPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, free := range p.idle {
		for _, s := range free {
			s.close()
		}
	}
	p.idle = nil
}

// openStream opens a DoPut stream for t. The stream outlives the push that
// opens it, so its context is not the push's; the push's context only
// bounds the opening.
func openStream(ctx context.Context, client flight.Client, mem memory.Allocator, database string, t *schema.Table) (*putStream, error) {
	sctx, cancel := context.WithCancel(context.Background())
	stop := context.AfterFunc(ctx, cancel)
	stream, err := client.DoPut(sctx, putCallOption)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	w, err := newBatchWriter(&payloadWriter{stream: stream, desc: arcflight.Descriptor(database, t.Name)}, t.Arrow, mem)
	if err != nil {
		_ = stream.CloseSend()
		cancel()
		return nil, err
	}
	return &putStream{table: t, ctx: sctx, cancel: cancel, stream: stream, w: w}, nil
}

// close ends the stream: a clean end of stream for the sidecar, then the
// context, which also ends a reader still waiting for acknowledgements.
func (s *putStream) close() {
	_ = s.stream.CloseSend()
	s.cancel()
}

// errStreamEnded reports a stream the sidecar closed without an error
// before acknowledging every batch.
var errStreamEnded = errors.New("sidecar ended the stream")

// staleStream reports whether err is how a stream the sidecar already
// ended (it restarted, or is shutting down and ends idle streams) fails:
// for a stream taken from the pool that acknowledged nothing of this push,
// the push is sent again at once on a new stream. Nothing of it was
// stored, or a batch whose ack was lost is recognised by its content ID.
// Overload (ResourceExhausted) is not stale: it waits for the backoff.
func staleStream(err error) bool {
	if errors.Is(err, errStreamEnded) || errors.Is(err, io.EOF) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
		return true
	}
	return false
}

// send writes recs and waits for their acknowledgements, returning how
// many arrived (in order) before any error. Acks are read while batches are
// written, so flow control cannot deadlock the stream, and all batches are
// in flight at once. On any error the caller must close the stream.
//
// The end of ctx ends the stream: a write blocked on flow control (a
// sidecar that stopped reading, a link that drops every packet) returns
// then too, and once nobody waits the sidecar's acks would pile up. What
// was acknowledged before counts; a stream whose every batch was
// acknowledged is still not reused (see healthy).
func (s *putStream) send(ctx context.Context, recs []arrow.RecordBatch) (int, error) {
	type result struct {
		acked int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.readAcks(len(recs))
		done <- result{n, err}
	}()
	stop := context.AfterFunc(ctx, s.cancel)
	for _, rec := range recs {
		if s.w.Write(rec) != nil {
			break // the server ended the stream; its status comes from Recv
		}
	}
	r := <-done
	if !stop() && r.err != nil {
		return r.acked, fmt.Errorf("waiting for acknowledgements: %w", ctx.Err())
	}
	return r.acked, r.err
}

// healthy reports whether the stream may carry another push: it was not
// ended by the end of a push's context.
func (s *putStream) healthy() bool { return s.ctx.Err() == nil }

// readAcks reads want acknowledgements, each carrying the stream's next
// sequence number.
func (s *putStream) readAcks(want int) (int, error) {
	for acked := 0; acked < want; acked++ {
		res, err := s.stream.Recv()
		if errors.Is(err, io.EOF) {
			return acked, fmt.Errorf("%w after %d of %d batches of %s", errStreamEnded, acked, want, s.table.Name)
		}
		if err != nil {
			return acked, err
		}
		seq, err := arcflight.ParseAck(res.AppMetadata)
		if err != nil {
			return acked, err
		}
		if seq != s.next {
			return acked, fmt.Errorf("unexpected acknowledgement %d, want %d (%d of %d batches of this push)", seq, s.next, acked, want)
		}
		s.next++
	}
	return want, nil
}
