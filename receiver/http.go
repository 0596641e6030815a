package receiver

import (
	"net/http"

	"github.com/arc-otel/arc-otel/storage"
)

// Paths of the HTTP endpoints.
const (
	PathHealth = "/health"
	PathReady  = "/ready"
)

// ReadyCheck is a further condition of /ready (the object-storage
// uploader's credentials): nil when met, else what is wrong.
type ReadyCheck func() error

// NewHTTPHandler serves /health (the process is up and its store open) and
// /ready (it also accepts writes: not shutting down, data directory
// writable with more than -min-free-disk free, and every check met).
func NewHTTPHandler(store *storage.Store, checks ...ReadyCheck) http.Handler {
	mux := http.NewServeMux()
	HandleHealth(mux, store, checks...)
	return mux
}

// HandleHealth registers /health and /ready (NewHTTPHandler) on mux. On a
// mux with other routes they are registered by path, not under "/": a
// catch-all would answer a write sent with the wrong method 404 instead
// of 405.
func HandleHealth(mux *http.ServeMux, store *storage.Store, checks ...ReadyCheck) {
	mux.HandleFunc("GET "+PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		if !store.Ready() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+PathReady, func(w http.ResponseWriter, _ *http.Request) {
		if !store.Ready() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if err := store.Writable(); err != nil {
			http.Error(w, "data directory not writable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := store.DiskRoom(); err != nil {
			http.Error(w, "writes refused: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		for _, check := range checks {
			if err := check(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		w.Write([]byte("ready\n"))
	})
}

// HandleWrites registers the write APIs on mux: Arc's MessagePack API
// (columnar and row format) and the three line-protocol endpoints, which
// all store through arc, and InfluxDB's /ping and /query (CREATE
// DATABASE), which its writers call too.
func HandleWrites(mux *http.ServeMux, arc *MsgpackHandler, tokens *Tokens) {
	mux.Handle("POST "+PathWriteMsgpack, tokens.RequireHTTP(arc))
	for path, dialect := range map[string]Dialect{
		PathWriteLineProtocol: DialectArc,
		PathWriteInfluxV1:     DialectInfluxV1,
		PathWriteInfluxV2:     DialectInfluxV2,
	} {
		mux.Handle("POST "+path, &LineProtocolHandler{Arc: arc, Tokens: tokens, Dialect: dialect})
	}
	// GET also serves HEAD.
	mux.HandleFunc("GET "+PathPing, servePing)
	mux.Handle("POST "+PathQuery, &QueryHandler{Tokens: tokens})
}
