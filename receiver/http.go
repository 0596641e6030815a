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

// NewHTTPHandler serves /health (the process is up and its store open) and
// /ready (it also accepts writes: not shutting down, data directory
// writable).
func NewHTTPHandler(store *storage.Store) http.Handler {
	mux := http.NewServeMux()
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
		w.Write([]byte("ready\n"))
	})
	return mux
}
