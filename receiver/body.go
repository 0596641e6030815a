package receiver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/internal/inflate"
)

// Magic numbers of the compressed bodies the API accepts.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// body is a request body, received whole as sent (within MaxBodyBytes)
// before the request takes its turn to decode (receive, then admit): a
// client that sends its body slowly holds only what it has sent, and
// delays no one else. Decompressed (gzip or zstd, told apart by their
// magic numbers) within MaxDecodedBytes, it is decoded as it decompresses,
// its decompressed form never held whole; but a small gzip body (at most
// maxWholeGzip as sent) is decompressed in one piece (inflateHeld,
// inflate.Gunzip), about twice as fast as a streaming gzip reader on the
// Arc API's bodies. Where that path does not apply it streams, so every
// answer and limit is the streaming one
// (TestSmallGzipBodiesDecodeWholeAsTheyStream).
type body struct {
	data       []byte // the body as sent
	buf        []byte // what holds it, a pooled buffer
	kind       string // "gzip", "zstd" or "" (plain)
	whole      bool   // decompressed in one piece when it can
	streamed   bool   // was read through stream
	maxDecoded int64

	f      *inflight
	held   int64              // what data takes: of the room for bodies, then of
	budget *arcmsgpack.Budget // the request's budget, once admitted
}

// maxWholeGzip is the largest gzip body decompressed whole. Its
// decompressed form is held while it is decoded and counts against the
// request's memory budget with its columns: 1 MiB sent is 2.5 MiB of the
// load test's payloads, a few percent of the default budget; larger
// bodies stream.
const maxWholeGzip = 1 << 20

// firstRead is the room a body is first received into (its
// Content-Length when smaller). It grows fourfold as more arrives (a
// 300 KB body is copied twice), up to its Content-Length: a client holds
// at most four times the room of what it has sent.
const firstRead = 64 << 10

// receive reads the request's body whole, growing its buffer as the body
// arrives, each growth taken from the room for bodies (inflight.room).
func (h *MsgpackHandler) receive(w http.ResponseWriter, r *http.Request) (*body, error) {
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
	h.inflight.init(h.MaxDecodedMemory)
	b := &body{maxDecoded: maxDecoded, f: &h.inflight}
	known := r.ContentLength >= 0
	size := int64(firstRead)
	if known {
		size = min(size, r.ContentLength)
	}
	if err := b.grow(r.Context(), size, true); err != nil {
		return nil, err
	}
	// The time to send the body starts once there is room to receive it.
	// Not every ResponseWriter can (a wrapped one): then the server's own
	// timeouts are the only bound.
	timeout := h.BodyReadTimeout
	if timeout <= 0 {
		timeout = DefaultBodyReadTimeout
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
	for {
		if len(b.data) == cap(b.data) {
			if known && int64(len(b.data)) == r.ContentLength {
				break // net/http holds a body to its Content-Length
			}
			if int64(len(b.data)) > maxBody {
				b.done()
				return nil, fail(http.StatusRequestEntityTooLarge, "body is over the limit of %d bytes", maxBody)
			}
			next := min(4*int64(cap(b.data)), maxBody+1, b.f.budget)
			if known {
				next = min(next, r.ContentLength)
			}
			if next == int64(cap(b.data)) {
				b.done()
				return nil, fail(http.StatusRequestEntityTooLarge, "body takes more than the %d bytes of memory a request may take (-max-decoded-memory)", b.f.budget)
			}
			if err := b.grow(r.Context(), next, false); err != nil {
				return nil, err
			}
		}
		n, err := r.Body.Read(b.data[len(b.data):cap(b.data)])
		b.data = b.data[:len(b.data)+n]
		if errors.Is(err, io.EOF) && (!known || int64(len(b.data)) == r.ContentLength) {
			break
		}
		if err != nil {
			b.done()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// Not bad input: a slow link. InfluxDB clients and
				// Telegraf drop a batch answered 400 (or 408), and retry
				// one answered 503.
				return nil, fail(http.StatusServiceUnavailable, "not stored, retry: the body did not arrive within %s of there being room for it (-http-read-timeout)", timeout)
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fail(http.StatusBadRequest, "read body: %v", err)
		}
	}
	switch {
	case bytes.HasPrefix(b.data, gzipMagic):
		b.kind, b.whole = "gzip", len(b.data) <= maxWholeGzip
	case bytes.HasPrefix(b.data, zstdMagic):
		b.kind = "zstd"
	}
	return b, nil
}

// grow makes room for size bytes of body, taken from the room for bodies
// first, in arrival order. The first room is waited for as long as the
// client waits, holding nothing; more is waited for at most roomWait: a
// request that waits while holding part of the room could wait for ever
// on others doing the same, so it gives up its room instead, and is told
// to retry.
func (b *body) grow(ctx context.Context, size int64, first bool) error {
	if size > b.f.budget {
		b.done()
		return fail(http.StatusRequestEntityTooLarge, "body takes more than the %d bytes of memory a request may take (-max-decoded-memory)", b.f.budget)
	}
	if first {
		if err := b.f.room.Acquire(ctx, size); err != nil {
			return fail(http.StatusServiceUnavailable, "not stored: gave up waiting for room to receive the body: %v", err)
		}
	} else {
		wait, cancel := context.WithTimeout(ctx, roomWait)
		err := b.f.room.Acquire(wait, size)
		cancel()
		if err != nil {
			b.done()
			return fail(http.StatusServiceUnavailable, "not stored, retry: the bodies being received or waiting to be decoded filled their room of %d bytes for %s", b.f.budget, roomWait)
		}
	}
	// A pooled buffer may be larger: only what was taken is used.
	buf := bodies.get(int(size))
	data := append(buf, b.data...)[:len(b.data):size]
	b.done()
	b.buf, b.data, b.held = buf, data, size
	return nil
}

// roomWait is how long a body being received waits for more room.
const roomWait = time.Second

// charge moves the body from the room for bodies to the request's
// budget, once it has been admitted to decode.
func (b *body) charge(budget *arcmsgpack.Budget) error {
	if budget.Charge(b.held) != nil {
		return fail(http.StatusRequestEntityTooLarge, "body of %d bytes takes more than the %d bytes of memory a request may take (-max-decoded-memory)", len(b.data), budget.Limit())
	}
	b.f.room.Release(b.held)
	b.budget = budget
	return nil
}

// done gives back what the body holds, where it is charged: it has been
// decoded, or refused.
func (b *body) done() {
	if b.budget != nil {
		b.budget.Release(b.held)
	} else if b.held > 0 {
		b.f.room.Release(b.held)
	}
	bodies.put(b.buf)
	b.buf, b.data, b.held = nil, nil, 0
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

// stream is the body decompressed as it is read, within maxDecoded; plain
// bodies read as they are.
type stream struct {
	io.Reader
	kind    string
	decoded *capped // nil for a plain body
	close   func()
}

// stream starts reading the body decompressed. A zstd decoder's window
// and buffers are charged to budget until it is closed.
func (b *body) stream(budget *arcmsgpack.Budget) (*stream, error) {
	b.streamed = true
	src := bytes.NewReader(b.data)
	s := &stream{Reader: src, kind: b.kind, close: func() {}}
	var r io.Reader
	switch b.kind {
	case "gzip":
		gz, err := openGzip(src)
		if err != nil {
			return nil, fail(http.StatusBadRequest, "gzip body: %v", err)
		}
		r, s.close = gz, func() { gzipReaders.Put(gz) }
	case "zstd":
		mem, err := zstdMemory(b.data)
		if err != nil {
			return nil, err
		}
		if err := budget.Charge(mem); err != nil {
			return nil, decodeError(err)
		}
		zd, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(b.maxDecoded)), zstd.WithDecoderMaxWindow(maxZstdWindow))
		if err != nil {
			budget.Release(mem)
			return nil, fail(http.StatusBadRequest, "zstd body: %v", err)
		}
		r, s.close = zd, func() {
			zd.Close()
			budget.Release(mem)
		}
	default:
		return s, nil
	}
	s.decoded = &capped{r: r, left: b.maxDecoded, limit: b.maxDecoded}
	s.Reader = s.decoded
	return s, nil
}

// maxZstdWindow is the largest zstd window a body may need, as a decoder
// holds its window: what the zstd tool writes up to level 19 and with
// --long=23 or less (--ultra -20 and up, and --long=24 and up, need more).
const maxZstdWindow = 8 << 20

// windowTooLarge answers a zstd body that needs more window than
// maxZstdWindow.
func windowTooLarge(window uint64) error {
	return fail(http.StatusRequestEntityTooLarge, "zstd body needs a window of %d bytes, over the limit of %d (8 MiB): compress with a window of at most 8 MiB (zstd level 19 or lower, --long=23 or less)", window, maxZstdWindow)
}

// zstdDecoderBuffers is what a zstd decoder holds besides its window
// (its block buffers and tables): about 1.2 MiB measured.
const zstdDecoderBuffers = 1280 << 10

// zstdMemory is what decoding a zstd body takes, from its first frame's
// header: its window (a single-segment frame's content) and buffers.
func zstdMemory(data []byte) (int64, error) {
	var h zstd.Header
	if err := h.Decode(data); err != nil {
		return 0, fail(http.StatusBadRequest, "zstd body: %v", err)
	}
	window := h.WindowSize
	if h.SingleSegment {
		window = h.FrameContentSize
	}
	if window > maxZstdWindow {
		return 0, windowTooLarge(window)
	}
	return int64(window) + zstdDecoderBuffers, nil
}

// fail turns a failure while decompressing into its answer: 413 past a
// limit, 400 for a body that does not decompress, else err.
func (s *stream) fail(err error) error {
	switch {
	case s.decoded != nil && (s.decoded.over || errors.Is(s.decoded.err, zstd.ErrDecoderSizeExceeded)):
		return fail(http.StatusRequestEntityTooLarge, "%s body decompresses to more than %d bytes", s.kind, s.decoded.limit)
	case s.decoded != nil && errors.Is(s.decoded.err, zstd.ErrWindowSizeExceeded):
		// A later frame's window: the first one's is checked before.
		return fail(http.StatusRequestEntityTooLarge, "zstd body needs a window over the limit of %d (8 MiB): compress with a window of at most 8 MiB (zstd level 19 or lower, --long=23 or less)", maxZstdWindow)
	case s.decoded != nil && s.decoded.err != nil:
		return fail(http.StatusBadRequest, "%s body: %v", s.kind, s.decoded.err)
	}
	return err
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

// inflateHeld decompresses a gzip body held whole into a buffer sized by
// its trailer's claim, charged to budget first as the most it may hold;
// release gives it back to its pool and the budget. ok is false, with
// nothing held, when the claim does not fit in what the budget has left or
// is not what the body decompresses to (several members, a corrupt body):
// streaming then gives the answer.
func inflateHeld(src []byte, maxDecoded int64, budget *arcmsgpack.Budget) (out []byte, release func(), ok bool) {
	claim := int64(inflate.ClaimedSize(src))
	charge := claim + inflate.Margin
	if claim < 0 || claim > maxDecoded || budget.Charge(charge) != nil {
		return nil, nil, false
	}
	// Sized for the claim, charged: decoding never grows it.
	buf := decodedBodies.get(int(charge))
	release = func() {
		budget.Release(charge)
		decodedBodies.put(buf)
	}
	out, err := inflate.Gunzip(buf, src, int(claim))
	if err != nil {
		release()
		return nil, nil, false
	}
	return out, release, true
}

// decodeHeld decodes a gzip body held whole from memory. ok is false when
// it must stream instead: inflateHeld's cases, and a body whose columns
// fit the budget only without the decompressed body beside them (as
// streaming holds them).
func decodeHeld(src []byte, maxDecoded int64, budget *arcmsgpack.Budget) (ms []arcmsgpack.Measurement, ok bool, err error) {
	used := budget.Used()
	out, release, ok := inflateHeld(src, maxDecoded, budget)
	if !ok {
		return nil, false, nil
	}
	ms, err = arcmsgpack.DecodeWithin(out, budget)
	// The columns copy the values: the body goes back at once, and is not
	// counted while the request waits for its commit.
	release()
	switch {
	case errors.Is(err, arcmsgpack.ErrTooLarge):
		budget.Release(budget.Used() - used)
		return nil, false, nil
	case err != nil:
		return nil, true, decodeError(err)
	}
	return ms, true, nil
}

// readBody reads the whole (decompressed) body, for decoders that need it
// in one piece; it is charged to budget, and past it the answer is 413.
// release gives it back once it has been decoded. A gzip body is
// decompressed in one piece whatever its size: it is held whole anyway.
func (h *MsgpackHandler) readBody(b *body, budget *arcmsgpack.Budget) (data []byte, release func(), err error) {
	if b.kind == "gzip" {
		if out, release, ok := inflateHeld(b.data, b.maxDecoded, budget); ok {
			return out, release, nil
		}
	}
	if b.kind == "" {
		return b.data, func() {}, nil
	}
	s, err := b.stream(budget)
	if err != nil {
		return nil, nil, err
	}
	defer s.close()
	data, err = readAll(s, contentSize(b), budget)
	if err := s.fail(err); err != nil {
		if data != nil {
			budget.Release(int64(cap(data)))
		}
		return nil, nil, err
	}
	return data, func() { budget.Release(int64(cap(data))) }, nil
}

// contentSize is the size a zstd body's first frame says it decompresses
// to (the zstd tool writes it when it knows it), 0 when unknown.
func contentSize(b *body) int64 {
	var h zstd.Header
	if b.kind != "zstd" || h.Decode(b.data) != nil || !h.HasFCS {
		return 0
	}
	return int64(min(h.FrameContentSize, uint64(b.maxDecoded)))
}

// readAll reads r whole into a buffer of hint bytes (and one more to see
// the end), or that doubles as it fills, each new one charged to budget
// before it is allocated and the one it replaces given back once copied:
// the budget counts both while both are held. Past the budget it stops
// with 413. data, when not nil, is charged.
func readAll(r io.Reader, hint int64, budget *arcmsgpack.Budget) (data []byte, err error) {
	first := int64(64 << 10)
	if hint > 0 {
		first = hint + 1
	}
	if err := budget.Charge(first); err != nil {
		return nil, decodeError(err)
	}
	buf := make([]byte, 0, first)
	for {
		if len(buf) == cap(buf) {
			size := min(2*int64(cap(buf)), budget.Limit()-budget.Used())
			if size <= int64(cap(buf)) || budget.Charge(size) != nil {
				budget.Release(int64(cap(buf)))
				return nil, fail(http.StatusRequestEntityTooLarge, "body decodes to more than the %d bytes of memory a request may take (-max-decoded-memory)", budget.Limit())
			}
			next := make([]byte, len(buf), size)
			copy(next, buf)
			budget.Release(int64(cap(buf)))
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
