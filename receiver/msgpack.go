package receiver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// The Arc-compatible write API.
const (
	PathWriteMsgpack = "/api/v1/write/msgpack"
	// HeaderDatabase names the database a write goes to; "default" without it.
	HeaderDatabase  = "x-arc-database"
	defaultDatabase = "default"
)

// Default request limits of the MessagePack API.
const (
	DefaultMaxBodyBytes    = 32 << 20
	DefaultMaxDecodedBytes = 128 << 20
)

// MsgpackHandler takes Arc MessagePack columnar writes: it decodes and
// checks the whole request, then stores every measurement of it in one WAL
// commit, and answers 204 only once that commit is durable.
type MsgpackHandler struct {
	Store *storage.Store
	Log   *slog.Logger
	Mem   memory.Allocator
	// MaxBodyBytes bounds the request body as sent, MaxDecodedBytes the
	// body after decompression (a small gzip body can inflate a
	// thousandfold); past either the answer is 413.
	MaxBodyBytes    int64
	MaxDecodedBytes int64
	// Limits bound columns, string values and partitions per request
	// (zero fields take storage's defaults).
	Limits storage.Limits
	// MaxDecodedMemory bounds the memory a request's decoded columns take
	// (arcmsgpack.Budget): charged before each allocation, 413 past it.
	// It bounds what one request costs, whatever its body claims;
	// arcmsgpack.DefaultMaxBytes when 0.
	MaxDecodedMemory int64
	Metrics          *Metrics // nil records nothing

	// BodyReadTimeout is how long a request may take to send its body
	// once there is room to receive it (DefaultBodyReadTimeout when 0;
	// arcstore sets -http-read-timeout): a client that trickles its body
	// holds the room its bytes take. It replaces the server's read
	// deadline for the rest of the request.
	BodyReadTimeout time.Duration

	inflight inflight // bounds all requests in progress together
}

// httpError is an answer other than 204.
type httpError struct {
	status int
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func fail(status int, format string, args ...any) *httpError {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

func (h *MsgpackHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.write(w, r); err != nil {
		var he *httpError
		if !errors.As(err, &he) {
			he = fail(http.StatusInternalServerError, "%v", err)
		}
		h.Log.Warn("msgpack write rejected", "status", he.status, "error", he.msg, "remote", r.RemoteAddr)
		switch he.status {
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", "1")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(he.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": he.msg})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *MsgpackHandler) write(w http.ResponseWriter, r *http.Request) error {
	arrived := time.Now()
	database := r.Header.Get(HeaderDatabase)
	if database == "" {
		database = defaultDatabase
	}
	database, err := storage.DatabaseFolder(database)
	if err != nil {
		return fail(http.StatusBadRequest, "%s header: %v", HeaderDatabase, err)
	}
	b, t, budget, err := h.begin(w, r)
	if err != nil {
		return err
	}
	defer t.done()
	ms, err := decodeBody(b, budget)
	b.done()
	if err != nil {
		return err
	}
	return h.store(r.Context(), database, ms, arrived, budget, t)
}

// begin receives the request's body whole, then waits for its turn to
// decode it within the bound of all requests in progress and charges the
// body to the request's budget. The caller decodes b, then gives it back
// (b.done), and gives t back once answered.
func (h *MsgpackHandler) begin(w http.ResponseWriter, r *http.Request) (b *body, t *ticket, budget *arcmsgpack.Budget, err error) {
	if b, err = h.receive(w, r); err != nil {
		return nil, nil, nil, err
	}
	if t, err = h.inflight.admit(r.Context(), h.MaxDecodedMemory); err != nil {
		b.done()
		return nil, nil, nil, fail(http.StatusServiceUnavailable, "not stored: gave up waiting for memory: %v", err)
	}
	budget = arcmsgpack.NewBudget(h.MaxDecodedMemory)
	if err := b.charge(budget); err != nil {
		b.done()
		t.done()
		return nil, nil, nil, err
	}
	return b, t, budget, nil
}

// decodeBody decodes a MessagePack body: a small gzip body from memory
// when it can (decodeHeld), a plain one in place, else as it decompresses.
func decodeBody(b *body, budget *arcmsgpack.Budget) ([]arcmsgpack.Measurement, error) {
	if b.whole {
		if ms, ok, err := decodeHeld(b.data, b.maxDecoded, budget); ok {
			return ms, err
		}
	}
	if b.kind == "" {
		ms, err := arcmsgpack.DecodeWithin(b.data, budget)
		if err != nil {
			return nil, decodeError(err)
		}
		return ms, nil
	}
	s, err := b.stream(budget)
	if err != nil {
		return nil, err
	}
	defer s.close()
	ms, err := arcmsgpack.DecodeReader(s, budget)
	if err != nil {
		return nil, s.fail(decodeError(err))
	}
	return ms, nil
}

// DefaultBodyReadTimeout is the default of MsgpackHandler.BodyReadTimeout.
const DefaultBodyReadTimeout = 30 * time.Second

// decodeError answers a body the decoders refused: 413 past the memory
// budget, else 400.
func decodeError(err error) error {
	if errors.Is(err, arcmsgpack.ErrTooLarge) {
		return fail(http.StatusRequestEntityTooLarge, "%v (-max-decoded-memory); send smaller requests", err)
	}
	return fail(http.StatusBadRequest, "%v", err)
}

// store checks every decoded measurement, turns it into a batch and stores
// them all in one WAL commit. Every write API (MessagePack columnar and
// row format, line protocol) ends here, so they share one set of checks
// and limits. What the batches take besides the columns is charged to the
// request's budget before it is built; the request then keeps, of its
// share t of the bound, what its budget counts.
func (h *MsgpackHandler) store(ctx context.Context, database string, ms []arcmsgpack.Measurement, arrived time.Time, budget *arcmsgpack.Budget, t *ticket) error {
	// Partitions are counted on the decoded times, before anything is
	// built: a small body of 90 000 one-row measurements is refused for
	// the cost of decoding it, not of 90 000 records, schemas and streams.
	parts := h.Limits.Partitions()
	for i := range ms {
		if err := parts.Add(database, ms[i].Name, measurementTimeUnit, ms[i].Time); err != nil {
			return checkError(err)
		}
	}
	batches := make([]storage.Batch, 0, len(ms))
	defer func() {
		for _, b := range batches {
			b.Rec.Release()
			// AppendAll has returned: the WAL is done with the stream.
			ipcBuffers.put(b.IPC)
		}
	}()
	// Everything is checked before anything is stored: a bad measurement
	// anywhere in the request rejects all of it.
	for i := range ms {
		b, err := h.batch(database, &ms[i], budget)
		if err != nil {
			return err
		}
		batches = append(batches, b)
		// The record holds its columns now (it is built on them): only
		// the batch refers to them from here on.
		ms[i] = arcmsgpack.Measurement{}
	}
	if err := h.Limits.CheckRequest(batches); err != nil {
		return checkError(err)
	}
	if err := h.Store.CheckFits(batches); err != nil {
		return checkError(err)
	}
	t.keep(budget.Used())
	err := h.Store.AppendAll(ctx, batches)
	for _, b := range batches {
		h.Metrics.batchOutcome(database, b.Table.Name, int(b.Rec.NumRows()), len(b.IPC), arrived, false, err)
	}
	if err != nil {
		if errors.Is(err, storage.ErrBackpressure) {
			h.Metrics.backpressured()
		}
		return storeError(err)
	}
	return nil
}

// measurementTimeUnit is the unit of arcmsgpack.Measurement.Time: the
// contract's.
const measurementTimeUnit = schema.TimestampUnit

// What building a measurement's batch allocates besides its columns and
// IPC stream, on its table's first use (its Arrow and Parquet schemas,
// arrays and stream headers): 7-14 KiB and 3.3 KiB a column measured,
// rounded up (TestBuildingABatchIsCharged).
const (
	buildMeasurementCost = 16 << 10
	buildColumnCost      = 4 << 10
)

func (h *MsgpackHandler) batch(database string, m *arcmsgpack.Measurement, budget *arcmsgpack.Budget) (storage.Batch, error) {
	// Counted before the record is built: an oversized one never is.
	if err := h.Limits.CheckColumns(m.Name, len(m.Columns)+1); err != nil {
		return storage.Batch{}, checkError(err)
	}
	if err := charge(budget, buildMeasurementCost+buildColumnCost*int64(len(m.Columns)+1)); err != nil {
		return storage.Batch{}, err
	}
	rec := m.Record(h.Mem)
	t, err := h.Limits.CheckMeasurement(m.Name, rec)
	if err != nil {
		rec.Release()
		return storage.Batch{}, checkError(err)
	}
	size := ipcSize(rec)
	if err := charge(budget, int64(size)); err != nil {
		rec.Release()
		return storage.Batch{}, err
	}
	payload, err := ipcStream(rec, size)
	if err != nil {
		rec.Release()
		return storage.Batch{}, err
	}
	// Arc writes have no retry identity: equal payloads are new rows.
	return storage.Batch{ID: storage.NoDedup, Database: database, Table: t, IPC: payload, Rec: rec}, nil
}

// charge takes n bytes of what the request stores from its budget: 413
// past it.
func charge(budget *arcmsgpack.Budget, n int64) error {
	if budget.Charge(n) != nil {
		return fail(http.StatusRequestEntityTooLarge, "request too large: its columns and the copy of them written to the WAL take more than %d bytes of memory (-max-decoded-memory); send smaller requests", budget.Limit())
	}
	return nil
}

// checkError maps a refusal of the checks before storing to its status:
// 413 for what is too large, 400 for the rest. The message names the
// measurement, column or limit.
func checkError(err error) error {
	if errors.Is(err, storage.ErrOverLimit) || errors.Is(err, storage.ErrTooLarge) {
		return fail(http.StatusRequestEntityTooLarge, "%v", err)
	}
	return fail(http.StatusBadRequest, "%v", err)
}

// ipcSize is what rec's IPC stream takes: its buffers (each padded to 8
// bytes) and the schema and message headers, so the stream is written once
// instead of regrown and copied a dozen times.
func ipcSize(rec arrow.RecordBatch) int {
	size := 1024 + 256*int(rec.NumCols())
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				size += b.Len() + 8
			}
		}
	}
	return size
}

func ipcStream(rec arrow.RecordBatch, size int) ([]byte, error) {
	buf := bytes.NewBuffer(ipcBuffers.get(size))
	w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	return buf.Bytes(), nil
}

func storeError(err error) error {
	switch {
	case errors.Is(err, storage.ErrBackpressure):
		return fail(http.StatusTooManyRequests, "not stored: %v", err)
	case errors.Is(err, storage.ErrClosed):
		return fail(http.StatusServiceUnavailable, "not stored: %v", err)
	}
	return fail(http.StatusServiceUnavailable, "not stored, retry: %v", err)
}
