package receiver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/arc-otel/arc-otel/internal/lineproto"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// The line-protocol write endpoints: Arc's own, and InfluxDB 1.x's and
// 2.x's, which Telegraf and InfluxDB client libraries write to.
const (
	PathWriteLineProtocol = "/api/v1/write/line-protocol"
	PathWriteInfluxV1     = "/write"
	PathWriteInfluxV2     = "/api/v2/write"
)

// partialWrite starts the answer to a request whose good lines were
// stored and bad ones dropped, in InfluxDB's words, which its clients
// (Telegraf) look for.
const partialWrite = "partial write: "

// Dialect is which API a line-protocol endpoint speaks: where it takes the
// database and precision from, how it checks tokens and how it words
// errors.
type Dialect int

// Dialects.
const (
	// DialectArc: database from x-arc-database, ?precision=, errors as
	// {"error": ...}, bearer tokens (Tokens.validFor says which each
	// dialect takes).
	DialectArc Dialect = iota
	// DialectInfluxV1: ?db= (x-arc-database wins, as in Arc), ?precision=
	// n/ns/u/us/ms/s/m/h, tokens also as ?p= or basic auth, errors as
	// {"error": ...}.
	DialectInfluxV1
	// DialectInfluxV2: ?bucket= (org is ignored), ?precision=
	// ns/us/ms/s, "Token" or "Bearer" tokens, errors as
	// {"code": ..., "message": ...}.
	DialectInfluxV2
)

// LineProtocolHandler takes line-protocol writes. It decodes the whole
// body into the columns the MessagePack API decodes to and stores them
// through the same path (Arc's checks, limits, one WAL commit per
// request), answering 204 only once that commit is durable. Bad lines are
// dropped and the good ones stored, as InfluxDB does: then the answer,
// once they are durable, is 400 "partial write: line N: <reason>
// dropped=<count>". A request refused as a whole (token, size, body,
// limits) stores nothing.
type LineProtocolHandler struct {
	Arc     *MsgpackHandler // the shared store path, its limits and metrics
	Tokens  *Tokens         // nil or empty: no authentication
	Dialect Dialect
}

func (h *LineProtocolHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Dialect != DialectArc {
		influxHeaders(w)
	}
	err := h.write(w, r)
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var he *httpError
	if !errors.As(err, &he) {
		he = fail(http.StatusInternalServerError, "%v", err)
	}
	what := "line protocol write rejected"
	if strings.HasPrefix(he.msg, partialWrite) {
		what = "line protocol write stored but for dropped lines"
	}
	h.Arc.Log.Warn(what, "path", r.URL.Path, "status", he.status, "error", he.msg, "remote", r.RemoteAddr)
	switch he.status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "1")
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="arcstore"`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	var body any
	switch h.Dialect {
	case DialectInfluxV2:
		body = map[string]string{"code": influxCode(he.status), "message": he.msg}
	case DialectInfluxV1:
		w.Header().Set("X-Influxdb-Error", headerText(he.msg))
		body = map[string]string{"error": he.msg}
	default:
		body = map[string]string{"error": he.msg}
	}
	w.WriteHeader(he.status)
	_ = json.NewEncoder(w).Encode(body)
}

// headerText escapes the bytes a header value may not hold (control
// characters but tab, which a dropped line's quoted text can carry): Go's
// HTTP client refuses the whole answer over one, and its caller then sees
// a broken connection and sends the batch again.
func headerText(s string) string {
	if !strings.ContainsFunc(s, isHeaderControl) {
		return s
	}
	var b strings.Builder
	for i := range len(s) {
		if c := s[i]; isHeaderControl(rune(c)) {
			fmt.Fprintf(&b, `\x%02x`, c)
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isHeaderControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// influxCode is InfluxDB 2.x's error code for a status.
func influxCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusRequestEntityTooLarge:
		return "request too large"
	case http.StatusTooManyRequests:
		return "too many requests"
	case http.StatusServiceUnavailable:
		return "unavailable"
	}
	return "internal error"
}

func (h *LineProtocolHandler) write(w http.ResponseWriter, r *http.Request) error {
	arrived := time.Now()
	if h.Tokens.Enabled() && !h.Tokens.validFor(r, h.Dialect) {
		return fail(http.StatusUnauthorized, "missing or invalid token (%s)", authHint(h.Dialect))
	}
	q := r.URL.Query()
	database := r.Header.Get(HeaderDatabase)
	if database == "" {
		switch h.Dialect {
		case DialectInfluxV1:
			database = q.Get("db")
		case DialectInfluxV2:
			// A 1.x-compatible bucket is "db/retention-policy".
			database, _, _ = strings.Cut(q.Get("bucket"), "/")
		}
	}
	if database == "" {
		database = defaultDatabase
	}
	database, err := storage.DatabaseFolder(database)
	if err != nil {
		return fail(http.StatusBadRequest, "database: %v", err)
	}
	prec, err := lineproto.ParsePrecision(q.Get("precision"), h.Dialect == DialectInfluxV1)
	if err != nil {
		return fail(http.StatusBadRequest, "%v", err)
	}
	b, t, budget, err := h.Arc.begin(w, r)
	if err != nil {
		return err
	}
	defer t.done()
	// The text is held while it is decoded: it counts against the
	// request's memory budget as its columns do.
	text, release, err := h.Arc.readBody(b, budget)
	if err != nil {
		b.done()
		return err
	}
	res, err := lineproto.Decode(text, prec, schema.TimestampOf(arrived), budget, h.Arc.Limits)
	release()
	b.done()
	if err != nil {
		return decodeError(err)
	}
	if len(res.Measurements) > 0 {
		if err := h.Arc.store(r.Context(), database, res.Measurements, arrived, budget, t); err != nil {
			return err
		}
	}
	if res.Dropped > 0 {
		// The good lines are durable: say which were not, as InfluxDB
		// does; its clients take a 400 "partial write" as final.
		h.Arc.Metrics.droppedLines(r.URL.Path, res.Dropped)
		return fail(http.StatusBadRequest, partialWrite+"%v dropped=%d", res.First, res.Dropped)
	}
	return nil
}
