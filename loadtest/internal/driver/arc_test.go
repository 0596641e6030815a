package driver

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

func TestArcPayloadsDecode(t *testing.T) {
	for _, s := range []Signal{ArcMetrics, ArcLogs, ArcTraces, ArcEvents} {
		t.Run(string(s), func(t *testing.T) {
			body, err := ArcPayload(s, 1000, time.Now(), rand.New(rand.NewPCG(1, 2)))
			require.NoError(t, err)
			ms := decodeGzip(t, body)
			require.Len(t, ms, 1)
			assert.Equal(t, string(s), ms[0].Name)
			assert.Equal(t, 1000, ms[0].Rows())
			assert.InDelta(t, time.Now().UnixNano(), ms[0].Time[0], float64(2*time.Minute), "time units detected")
		})
	}
}

func decodeGzip(t *testing.T, body []byte) []arcmsgpack.Measurement {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	ms, err := arcmsgpack.Decode(raw)
	require.NoError(t, err)
	return ms
}

type arcServer struct {
	mu       sync.Mutex
	rows     map[string]int
	busy     int // answer 503 to this many requests first
	auth     string
	database string
}

func (s *arcServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth, s.database = r.Header.Get("Authorization"), r.Header.Get("x-arc-database")
	if r.URL.Path != ArcPath {
		http.NotFound(w, r)
		return
	}
	if s.busy > 0 {
		s.busy--
		w.Header().Set("Retry-After", "0")
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	raw, _ := io.ReadAll(zr)
	ms, err := arcmsgpack.Decode(raw)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, m := range ms {
		s.rows[m.Name] += m.Rows()
	}
	w.WriteHeader(http.StatusNoContent)
}

func TestArcDriverPostsAndRetries(t *testing.T) {
	srv := &arcServer{rows: map[string]int{}, busy: 2}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	rec := NewRecorder()
	d := &Arc{Plan: Plan{Signals: []Signal{ArcMetrics, ArcLogs}, Rate: 20_000, Duration: 300 * time.Millisecond, Workers: 2, Batch: 100, Endpoint: hs.URL},
		Recorder: rec, Token: "secret", Database: "prod", Payloads: 3}
	require.NoError(t, d.Run(context.Background()))

	tot := rec.Total()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	assert.Equal(t, int64(srv.rows[string(ArcMetrics)]), tot.Acked[ArcMetrics])
	assert.Equal(t, int64(srv.rows[string(ArcLogs)]), tot.Acked[ArcLogs])
	assert.Positive(t, tot.Acked[ArcMetrics])
	assert.Equal(t, int64(2), tot.Errors, "the two 503s were retried")
	assert.Zero(t, tot.Rejected)
	assert.Equal(t, "Bearer secret", srv.auth)
	assert.Equal(t, "prod", srv.database)
}
