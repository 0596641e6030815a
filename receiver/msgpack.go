package receiver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
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

	// BodyReadTimeout is how long an admitted request may take to send
	// its body (DefaultBodyReadTimeout when 0): it holds a third of the
	// bound of requests in progress meanwhile, so a client that trickles
	// its body must not keep it.
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
	if err := storage.CheckName("database", database); err != nil {
		return fail(http.StatusBadRequest, "%s header: %v", HeaderDatabase, err)
	}
	t, err := h.admit(w, r)
	if err != nil {
		return err
	}
	defer t.done()
	b, err := h.openBody(r)
	if err != nil {
		return err
	}
	budget := arcmsgpack.NewBudget(h.MaxDecodedMemory)
	ms, err := arcmsgpack.DecodeReader(b, budget)
	b.close()
	if err != nil {
		return b.fail(decodeError(err))
	}
	t.keep(inflightRequests * budget.Used())
	return h.store(r.Context(), database, ms, arrived)
}

// DefaultBodyReadTimeout is the default of MsgpackHandler.BodyReadTimeout.
const DefaultBodyReadTimeout = 30 * time.Second

// admit waits for the request's turn within the bound of all requests in
// progress, then gives it BodyReadTimeout to send its body.
func (h *MsgpackHandler) admit(w http.ResponseWriter, r *http.Request) (*ticket, error) {
	t, err := h.inflight.admit(r.Context(), h.MaxDecodedMemory)
	if err != nil {
		return nil, fail(http.StatusServiceUnavailable, "not stored: gave up waiting for memory: %v", err)
	}
	// Not every ResponseWriter can (a wrapped one): then the server's own
	// timeouts are the only bound.
	timeout := h.BodyReadTimeout
	if timeout <= 0 {
		timeout = DefaultBodyReadTimeout
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	return t, nil
}

// decodeError answers a body the decoders refused: 413 past the memory
// budget, else 400.
func decodeError(err error) error {
	if errors.Is(err, arcmsgpack.ErrTooLarge) {
		return fail(http.StatusRequestEntityTooLarge, "%v", err)
	}
	return fail(http.StatusBadRequest, "%v", err)
}

// store checks every decoded measurement, turns it into a batch and stores
// them all in one WAL commit. Every write API (MessagePack columnar and
// row format, line protocol) ends here, so they share one set of checks
// and limits.
func (h *MsgpackHandler) store(ctx context.Context, database string, ms []arcmsgpack.Measurement, arrived time.Time) error {
	batches := make([]storage.Batch, 0, len(ms))
	defer func() {
		for _, b := range batches {
			b.Rec.Release()
			// AppendAll has returned: the WAL is done with the stream.
			putIPCBuffer(b.IPC)
		}
	}()
	// Everything is checked before anything is stored: a bad measurement
	// anywhere in the request rejects all of it.
	for i := range ms {
		b, err := h.batch(database, &ms[i])
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

func (h *MsgpackHandler) batch(database string, m *arcmsgpack.Measurement) (storage.Batch, error) {
	// Counted before the record is built: an oversized one never is.
	if err := h.Limits.CheckColumns(m.Name, len(m.Columns)+1); err != nil {
		return storage.Batch{}, checkError(err)
	}
	rec := m.Record(h.Mem)
	t, err := h.Limits.CheckMeasurement(m.Name, rec)
	if err != nil {
		rec.Release()
		return storage.Batch{}, checkError(err)
	}
	payload, err := ipcStream(rec)
	if err != nil {
		rec.Release()
		return storage.Batch{}, err
	}
	// Arc writes have no retry identity: equal payloads are new rows.
	return storage.Batch{ID: storage.NoDedup, Database: database, Table: t, IPC: payload, Rec: rec}, nil
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

func ipcStream(rec arrow.RecordBatch) ([]byte, error) {
	// Sized for the record's buffers (each padded to 8 bytes) and the
	// schema and message headers, so the stream is written once instead of
	// regrown and copied a dozen times.
	size := 1024 + 256*int(rec.NumCols())
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				size += b.Len() + 8
			}
		}
	}
	buf := bytes.NewBuffer(getIPCBuffer(size))
	w := ipc.NewWriter(buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode batch: %w", err)
	}
	return buf.Bytes(), nil
}

// ipcBuffers keeps the streams' buffers between requests: a stream is
// written, committed to the WAL and dropped within one request, and a new
// buffer of a batch's size (145 KB for 1000 spans) is zeroed by the
// runtime, then collected: 2-3 % of the sidecar's CPU at a million rows a
// second, with the collections it causes.
var ipcBuffers sync.Pool

// maxPooledIPC bounds the buffers kept: a rare huge request's buffer is
// left to the collector.
const maxPooledIPC = 4 << 20

func getIPCBuffer(size int) []byte {
	if p, ok := ipcBuffers.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	}
	return make([]byte, 0, size)
}

func putIPCBuffer(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledIPC {
		return
	}
	b = b[:0]
	ipcBuffers.Put(&b)
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

// Magic numbers of the compressed bodies the API accepts.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// body is a request body being read: as sent within MaxBodyBytes,
// decompressed (gzip or zstd, told apart by their magic numbers) within
// MaxDecodedBytes. It is read as it is decoded, so that neither the body
// nor its decompressed form is ever held whole.
type body struct {
	io.Reader
	raw, decoded *capped
	kind         string // "gzip", "zstd" or "" (plain)
	close        func()
}

// capped reads at most limit bytes; one more marks it over the limit.
type capped struct {
	r     io.Reader
	left  int64
	limit int64
	over  bool
	err   error // a read error other than EOF
}

var errOverLimit = errors.New("over the limit")

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, err := c.r.Read(one[:]); n > 0 {
			c.over = true
			return 0, errOverLimit
		} else if err != nil {
			return 0, c.note(err)
		}
		return 0, nil
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, c.note(err)
}

func (c *capped) note(err error) error {
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return err
}

// openBody starts reading the request's body.
func (h *MsgpackHandler) openBody(r *http.Request) (*body, error) {
	maxBody, maxDecoded := h.MaxBodyBytes, h.MaxDecodedBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	if maxDecoded <= 0 {
		maxDecoded = DefaultMaxDecodedBytes
	}
	if r.ContentLength > maxBody {
		return nil, fail(http.StatusRequestEntityTooLarge, "body of %d bytes is over the limit of %d", r.ContentLength, maxBody)
	}
	b := &body{raw: &capped{r: r.Body, left: maxBody, limit: maxBody}, close: func() {}}
	br := bufio.NewReader(b.raw)
	magic, _ := br.Peek(len(zstdMagic))
	var zr io.Reader
	switch {
	case bytes.HasPrefix(magic, gzipMagic):
		gz, err := openGzip(br)
		if err != nil {
			return nil, b.fail(fail(http.StatusBadRequest, "gzip body: %v", err))
		}
		zr, b.kind, b.close = gz, "gzip", func() { gzipReaders.Put(gz) }
	case bytes.HasPrefix(magic, zstdMagic):
		zd, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(maxDecoded)), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, b.fail(fail(http.StatusBadRequest, "zstd body: %v", err))
		}
		zr, b.kind, b.close = zd, "zstd", zd.Close
	default:
		b.Reader = br
		return b, nil
	}
	b.decoded = &capped{r: zr, left: maxDecoded, limit: maxDecoded}
	b.Reader = b.decoded
	return b, nil
}

// gzipReaders keeps gzip readers between requests: a new one allocates
// its window and tables (tens of KB) before reading a byte. klauspost's
// gzip decompresses the load test's bodies about twice as fast as
// compress/gzip allocating a reader per request (BenchmarkMsgpackWrite).
var gzipReaders sync.Pool

func openGzip(r io.Reader) (*gzip.Reader, error) {
	if gz, ok := gzipReaders.Get().(*gzip.Reader); ok {
		if err := gz.Reset(r); err != nil {
			gzipReaders.Put(gz)
			return nil, err
		}
		return gz, nil
	}
	return gzip.NewReader(r)
}

// fail turns a failure while reading the body into its answer: 413 past a
// limit, 400 for a body that does not read or decompress, else err.
func (b *body) fail(err error) error {
	switch {
	case b.raw.over:
		return fail(http.StatusRequestEntityTooLarge, "body is over the limit of %d bytes", b.raw.limit)
	case b.decoded != nil && b.decoded.over:
		return fail(http.StatusRequestEntityTooLarge, "%s body decompresses to more than %d bytes", b.kind, b.decoded.limit)
	case b.raw.err != nil:
		return fail(http.StatusBadRequest, "read body: %v", b.raw.err)
	case b.decoded != nil && b.decoded.err != nil:
		return fail(http.StatusBadRequest, "%s body: %v", b.kind, b.decoded.err)
	}
	return err
}

// readBody reads the whole (decompressed) body, for decoders that need it
// in one piece; it is charged to budget, and past it the answer is 413.
func (h *MsgpackHandler) readBody(r *http.Request, budget *arcmsgpack.Budget) ([]byte, error) {
	b, err := h.openBody(r)
	if err != nil {
		return nil, err
	}
	defer b.close()
	hint := r.ContentLength
	if b.kind != "" {
		hint = 0
	}
	limit := budget.Limit() - budget.Used()
	data, err := readAll(b, hint, limit)
	if err := b.fail(err); err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fail(http.StatusRequestEntityTooLarge, "body decodes to more than the %d bytes of memory a request may take", budget.Limit())
	}
	// readAll's buffer is at most twice what it holds.
	if err := budget.Charge(int64(cap(data))); err != nil {
		return nil, decodeError(err)
	}
	return data, nil
}

// readAll reads up to limit+1 bytes (one more tells a reader past the
// limit). The buffer is sized from hint (a Content-Length, at most limit)
// when there is one and doubles otherwise, so reading n bytes allocates
// under 2n plus the final buffer (io.ReadAll grows a large slice by a
// quarter at a time).
func readAll(r io.Reader, hint, limit int64) ([]byte, error) {
	size := int64(512)
	if hint > 0 && hint <= limit {
		size = hint + 1 // room to see the end of the body without growing
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return buf, nil
			}
			next := make([]byte, len(buf), min(2*int64(cap(buf)), limit+1))
			copy(next, buf)
			buf = next
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
