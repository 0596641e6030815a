package receiver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/arc-otel/arc-otel/storage"
)

// InfluxDB 1.x's endpoints that Telegraf and InfluxDB client libraries
// call besides the write: the health check, and the query endpoint,
// where Telegraf's influxdb output creates its database at start-up.
const (
	PathPing  = "/ping"
	PathQuery = "/query"
)

// InfluxVersion is what X-Influxdb-Version says: InfluxDB 1.8 is the
// release whose write API the sidecar serves, /write and the 2.x
// compatibility /api/v2/write both.
const InfluxVersion = "1.8.10"

// maxQueryBytes bounds a /query request's form: a CREATE DATABASE is a
// line.
const maxQueryBytes = 64 << 10

// influxHeaders marks an answer as InfluxDB's, as InfluxDB marks all of
// them.
func influxHeaders(w http.ResponseWriter) {
	w.Header().Set("X-Influxdb-Version", InfluxVersion)
}

// servePing answers GET and HEAD /ping as InfluxDB does: 204, or with
// ?verbose=true 200 and the version. It needs no token.
func servePing(w http.ResponseWriter, r *http.Request) {
	influxHeaders(w)
	if v := r.URL.Query().Get("verbose"); v != "" && v != "0" && v != "false" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"version": InfluxVersion})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// QueryHandler answers POST /query for the one statement writers send:
// CREATE DATABASE, which succeeds without doing anything (a database is
// a folder its first write makes). Queries are for the Parquet files and
// the engines that read them, so any other statement is refused.
type QueryHandler struct {
	Tokens *Tokens
}

func (h *QueryHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	influxHeaders(w)
	w.Header().Set("Content-Type", "application/json")
	if h.Tokens.Enabled() && !h.Tokens.validFor(r, DialectInfluxV1) {
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "missing or invalid token (" + authHint(DialectInfluxV1) + ")"})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxQueryBytes)
	name, err := createDatabase(r.FormValue("q"))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	result := map[string]any{"statement_id": 0}
	if _, err := storage.DatabaseFolder(name); err != nil {
		result["error"] = err.Error()
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"results": []any{result}})
}

// createDatabase reads `CREATE DATABASE <name> [WITH ...]` (InfluxQL; a
// name double-quoted with backslash escapes, or bare) and returns the
// name.
func createDatabase(q string) (string, error) {
	refuse := fmt.Errorf("arcstore answers no queries but CREATE DATABASE; read the Parquet files instead (docs/QUERIES.md): %.80q", q)
	rest := strings.TrimSpace(q)
	for _, word := range []string{"CREATE", "DATABASE"} {
		head, tail, ok := strings.Cut(rest, " ")
		if !ok || !strings.EqualFold(head, word) {
			return "", refuse
		}
		rest = strings.TrimSpace(tail)
	}
	var name string
	if strings.HasPrefix(rest, `"`) {
		var b strings.Builder
		i := 1
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' && i+1 < len(rest) {
				i++
				if rest[i] == 'n' {
					b.WriteByte('\n')
					continue
				}
			}
			b.WriteByte(rest[i])
		}
		if i == len(rest) {
			return "", fmt.Errorf("error parsing query: unterminated database name in %.80q", q)
		}
		name, rest = b.String(), rest[i+1:]
	} else {
		end := strings.IndexAny(rest, " \t\n;")
		if end < 0 {
			end = len(rest)
		}
		name, rest = rest[:end], rest[end:]
	}
	rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), ";"))
	if name == "" || rest != "" && !strings.HasPrefix(strings.ToUpper(rest), "WITH ") {
		return "", refuse
	}
	return name, nil
}
