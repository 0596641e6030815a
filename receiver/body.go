package receiver

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"

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

// body is a request body being read: as sent within MaxBodyBytes,
// decompressed (gzip or zstd, told apart by their magic numbers) within
// MaxDecodedBytes. It is read as it is decoded, so that neither the body
// nor its decompressed form is ever held whole.
//
// A small gzip body (at most maxWholeGzip bytes as sent, its
// Content-Length known) is the exception: whole is set instead of Reader,
// and the caller reads it whole (readWhole) and decompresses it in one
// piece (inflateHeld, inflate.Gunzip), about twice as fast as a streaming
// gzip reader on the Arc API's bodies. Where that path does not apply it
// streams the body it holds (streamHeld), so every answer and limit is
// the streaming one (TestSmallGzipBodiesDecodeWholeAsTheyStream).
type body struct {
	io.Reader
	raw, decoded *capped
	kind         string // "gzip", "zstd" or "" (plain)
	close        func()

	whole      io.Reader // the compressed body, to read whole; nil when streamed
	size       int64     // its Content-Length
	maxDecoded int64
}

// maxWholeGzip is the largest gzip body decompressed whole. Its
// decompressed form is held while it is decoded and counts against the
// request's memory budget with its columns: 1 MiB sent is 2.5 MiB of the
// load test's payloads, a few percent of the default budget; larger
// bodies stream.
const maxWholeGzip = 1 << 20

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
	switch {
	case bytes.HasPrefix(magic, gzipMagic) && r.ContentLength > 0 && r.ContentLength <= maxWholeGzip:
		b.kind, b.whole, b.size, b.maxDecoded = "gzip", br, r.ContentLength, maxDecoded
		return b, nil
	case bytes.HasPrefix(magic, gzipMagic):
		if err := b.streamGzip(br, maxDecoded); err != nil {
			return nil, err
		}
	case bytes.HasPrefix(magic, zstdMagic):
		zd, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(maxDecoded)), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, b.fail(fail(http.StatusBadRequest, "zstd body: %v", err))
		}
		b.kind, b.close = "zstd", zd.Close
		b.decompressed(zd, maxDecoded)
	default:
		b.Reader = br
	}
	return b, nil
}

// streamGzip reads the body through a gzip reader.
func (b *body) streamGzip(r io.Reader, maxDecoded int64) error {
	gz, err := openGzip(r)
	if err != nil {
		return b.fail(fail(http.StatusBadRequest, "gzip body: %v", err))
	}
	b.kind, b.close = "gzip", func() { gzipReaders.Put(gz) }
	b.decompressed(gz, maxDecoded)
	return nil
}

func (b *body) decompressed(r io.Reader, maxDecoded int64) {
	b.decoded = &capped{r: r, left: maxDecoded, limit: maxDecoded}
	b.Reader = b.decoded
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

// readWhole reads a small gzip body whole into a pooled buffer; done puts
// it back. It is not charged to the request's budget (a body streamed
// past that budget must be refused as streaming refuses it): it is at
// most maxWholeGzip, for at most inflightRequests requests decoding at
// once.
func (b *body) readWhole() (src []byte, done func(), err error) {
	src = wholeBodies.get(int(b.size))[:b.size]
	if _, err := io.ReadFull(b.whole, src); err != nil {
		wholeBodies.put(src)
		return nil, nil, b.fail(fail(http.StatusBadRequest, "read body: %v", err))
	}
	return src, func() { wholeBodies.put(src) }, nil
}

// streamHeld makes b stream a body it holds whole, as a larger body
// streams.
func (b *body) streamHeld(src []byte) error {
	b.whole = nil
	return b.streamGzip(bytes.NewReader(src), b.maxDecoded)
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
	buf := decodedBodies.get(inflate.OutputSize(src, int(claim)))
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
		budget.Release(budget.Used())
		return nil, false, nil
	case err != nil:
		return nil, true, decodeError(err)
	}
	return ms, true, nil
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
	if b.whole != nil {
		src, done, err := b.readWhole()
		if err != nil {
			return nil, err
		}
		defer done()
		if out, release, ok := inflateHeld(src, b.maxDecoded, budget); ok {
			// The caller keeps the text: a copy, then charged as the
			// pooled buffer's charge is given back.
			text := bytes.Clone(out)
			release()
			if err := budget.Charge(int64(len(text))); err != nil {
				return nil, decodeError(err)
			}
			return text, nil
		}
		if err := b.streamHeld(src); err != nil {
			return nil, err
		}
	}
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
