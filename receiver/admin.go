package receiver

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/arc-otel/arc-otel/storage"
)

// PathCompact runs a compaction of every closed partition on demand.
const PathCompact = "/admin/compact"

// CompactHandler compacts on POST and answers with what it did. Wrap it in
// Tokens.RequireHTTP: it costs I/O.
type CompactHandler struct {
	Store *storage.Store
	Log   *slog.Logger
}

func (h *CompactHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st, err := h.Store.Compact(r.Context(), 0)
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{
		"partitions": st.Partitions, "files_in": st.FilesIn, "files_out": st.FilesOut,
		"rows": st.Rows, "bytes_in": st.BytesIn, "bytes_out": st.BytesOut, "seconds": st.Duration.Seconds(),
	}
	if err != nil {
		h.Log.Error("compaction on demand failed", "error", err)
		body["error"] = err.Error()
		w.WriteHeader(http.StatusInternalServerError)
	}
	_ = json.NewEncoder(w).Encode(body)
}
