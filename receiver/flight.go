package receiver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// FlightServer implements DoPut of the Arrow Flight service.
type FlightServer struct {
	flight.BaseFlightServer
	Store   *storage.Store
	Log     *slog.Logger
	Mem     memory.Allocator
	Metrics *Metrics // nil records nothing

	drainOnce sync.Once
	draining  chan struct{}
}

// errDraining ends streams once the sidecar shuts down; the exporter sends
// what was not acknowledged again on a new stream, to the restarted sidecar.
var errDraining = status.Error(codes.Unavailable, "sidecar shutting down")

func (s *FlightServer) drainCh() chan struct{} {
	s.drainOnce.Do(func() { s.draining = make(chan struct{}) })
	return s.draining
}

// Drain makes every DoPut stream end with Unavailable after the batch it
// is storing, idle ones at once. Exporters keep their streams open between
// pushes, so a graceful stop of the gRPC server would otherwise wait for
// its timeout.
func (s *FlightServer) Drain() {
	ch := s.drainCh()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

type received struct {
	fd  *arcflight.PutMessage
	err error
}

// ServerOptions are the gRPC server options the FlightServer needs: the
// codec that decodes DoPut messages with a single copy of their bytes,
// leaving room for the largest schema frame of the tables it takes, and
// frame buffers reused without clearing.
func ServerOptions() []grpc.ServerOption {
	headroom := 0
	for _, name := range schema.Names() {
		if t, err := storage.LookupTable(name); err == nil {
			headroom = max(headroom, len(t.SchemaFrame))
		}
	}
	return []grpc.ServerOption{arcflight.PutCodec{Headroom: headroom}.ServerOption(), arcflight.BufferPoolOption()}
}

// receive reads the stream's messages into a channel, so that DoPut can
// stop waiting for the next one when the sidecar drains; it reads at most
// one message ahead of the batch being stored.
func receive(ctx context.Context, stream flight.FlightService_DoPutServer) <-chan received {
	ch := make(chan received)
	go func() {
		for {
			fd := new(arcflight.PutMessage)
			err := stream.RecvMsg(fd)
			select {
			case ch <- received{fd, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// DoPut stores each record batch of the stream and acknowledges it once it
// is durable. A stream is long-lived: it carries the batches of many
// pushes, numbered from 0 in the order they arrive. Batches are stored one
// at a time so that an error ends the stream right after the last
// acknowledged batch: the client knows exactly what was kept. Concurrent
// streams share WAL fsyncs.
func (s *FlightServer) DoPut(stream flight.FlightService_DoPutServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel() // ends the receiver, whose Recv the return also ends
	msgs := receive(ctx, stream)
	next := func() (*arcflight.PutMessage, error) {
		select {
		case m := <-msgs:
			return m.fd, m.err
		case <-s.drainCh():
			return nil, errDraining
		}
	}
	first, err := next()
	if err != nil {
		return err
	}
	database, table, err := arcflight.ParseDescriptor(first.Descriptor)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if err := storage.CheckName("database", database); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	t, err := storage.LookupTable(table)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	schemaFrame, nanos := t.SchemaFrame, false
	switch {
	case len(first.Body) == 0 && arcflight.SameSchemaHeader(t.SchemaFrame, first.Header):
	case len(first.Body) == 0 && arcflight.SameSchemaHeader(t.NanosSchemaFrame, first.Header):
		// An exporter of an earlier build: its batches are stored in
		// microseconds (the WAL keeps them as sent; replay converts too).
		schemaFrame, nanos = t.NanosSchemaFrame, true
	default:
		return status.Errorf(codes.InvalidArgument,
			"schema of the stream is not the %s table's schema (docs/SCHEMA.md; send batches built from it)", table)
	}
	dec, err := arcflight.NewStreamDecoder(schemaFrame, s.Mem)
	if err != nil {
		return status.Errorf(codes.Internal, "%s table's schema: %v", table, err)
	}
	defer dec.Release()
	if err := t.CheckSchema(schema.StoredSchema(dec.Schema())); err != nil {
		return status.Errorf(codes.Internal, "%s table's schema frame: %v", table, err)
	}
	for seq := uint64(0); ; seq++ {
		fd, err := next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		arrived := time.Now()
		rows, dup, err := s.put(ctx, database, t, schemaFrame, dec, nanos, fd, seq)
		if err != nil {
			s.Metrics.batchOutcome(database, table, rows, len(fd.Body), arrived, false, err)
			s.Log.Warn("batch rejected", "database", database, "table", table, "batch", seq, "error", err)
			return err
		}
		err = stream.Send(&flight.PutResult{AppMetadata: arcflight.AckMetadata(seq)})
		// Stored is stored: a lost ack leaves the batch durable, and the
		// client's retry is recognised by its batch ID.
		s.Metrics.batchOutcome(database, table, rows, len(fd.Body), arrived, dup, nil)
		if err != nil {
			return err
		}
	}
}

// put stores one batch and returns its row count (0 when it could not be
// decoded) and whether the store dropped it as a copy of a stored batch.
func (s *FlightServer) put(ctx context.Context, database string, t *storage.Table, schemaFrame []byte, dec *arcflight.StreamDecoder, nanos bool, fd *arcflight.PutMessage, seq uint64) (rows int, dup bool, err error) {
	if err := arcflight.CheckMessage(fd.Header, fd.Body); err != nil {
		return 0, false, status.Errorf(codes.InvalidArgument, "batch %d of %s: malformed Arrow IPC: %v", seq, t.Name, err)
	}
	payload := fd.Stream(schemaFrame)
	// The record shares the payload's memory: both are the batch's bytes,
	// whose buffer is recycled once the record is released (after its
	// flush, or at once if it is not stored). fd's bytes are not read after
	// that: the batch IDs are taken while put holds the record.
	rec, err := dec.Decode(payload[len(schemaFrame):], fd.Recycle)
	if err != nil {
		return 0, false, status.Errorf(codes.InvalidArgument, "batch %d of %s: malformed Arrow IPC: %v", seq, t.Name, err)
	}
	if nanos {
		stored := schema.StoredTimes(rec)
		rec.Release()
		rec = stored
	}
	defer rec.Release()
	rows = int(rec.NumRows())
	check := t.CheckRows // the decoder's schema was checked when the stream opened
	if rec.Schema() != dec.Schema() {
		check = t.Check
	}
	if err := check(rec); err != nil {
		return rows, false, refusal(seq, t.Name, err)
	}
	id := storage.NewBatchID(database, t.Name, fd.Header, fd.Body)
	batch := []storage.Batch{{ID: id, Database: database, Table: t, IPC: payload, Rec: rec}}
	if s.Store.LegacyBatchIDs() {
		// Shortly after an upgrade: the batch may be a retry of one an
		// earlier version stored under its SHA-256 ID.
		batch[0].LegacyID = storage.LegacyBatchID(database, t.Name, fd.Header, fd.Body)
	}
	if err := s.Store.CheckFits(batch); err != nil {
		// Permanent: the exporter must not retry it for ever (it drops it
		// and says why; a smaller batch_size fits).
		return rows, false, status.Errorf(codes.InvalidArgument, "batch %d of %s: %v", seq, t.Name, err)
	}
	if err := s.Store.AppendAll(ctx, batch); err != nil {
		return rows, false, s.appendStatus(err, seq)
	}
	return rows, batch[0].Deduplicated, nil
}

// refusal is the status of a batch that failed its checks. A row's time
// out of range also names the time column in a BadRequest detail: the
// exporter then drops such rows and sends the rest of its push again,
// rather than dropping the push with them.
func refusal(seq uint64, table string, err error) error {
	st := status.Newf(codes.InvalidArgument, "batch %d of %s: %v", seq, table, err)
	if errors.Is(err, storage.ErrTimeRange) {
		if d, derr := st.WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: schema.ColTime, Description: err.Error()},
		}}); derr == nil {
			st = d
		}
	}
	return st.Err()
}

func (s *FlightServer) appendStatus(err error, seq uint64) error {
	msg := fmt.Sprintf("batch %d not stored: %v", seq, err)
	switch {
	case errors.Is(err, storage.ErrBackpressure):
		s.Metrics.backpressured()
		return status.Error(codes.ResourceExhausted, msg)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.Canceled, msg)
	}
	return status.Error(codes.Unavailable, msg)
}
