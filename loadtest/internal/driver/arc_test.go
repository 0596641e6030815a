package driver

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
)

func TestArcPayloadsDecode(t *testing.T) {
	for _, shape := range []Shape{ShapeNew, ShapeCycled} {
		for _, s := range []Signal{ArcMetrics, ArcLogs, ArcTraces, ArcEvents} {
			t.Run(string(shape)+"/"+string(s), func(t *testing.T) {
				body, err := ArcPayload(shape, s, 1000, time.Now(), rand.New(rand.NewPCG(1, 2)))
				require.NoError(t, err)
				ms := decodeGzip(t, body)
				require.Len(t, ms, 1)
				assert.Equal(t, string(s), ms[0].Name)
				assert.Equal(t, 1000, ms[0].Rows())
				assert.InDelta(t, time.Now().UnixMicro(), ms[0].Time[0], float64(2*time.Minute/time.Microsecond), "time units detected, stored in µs")
			})
		}
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
	assert.Equal(t, int64(2), tot.Throttled, "the two 503s were retried")
	assert.Zero(t, tot.Errors, "pushing back is not an error")
	assert.Zero(t, tot.Rejected)
	require.Contains(t, d.Sizes, ArcLogs)
	assert.Equal(t, 100, d.Sizes[ArcLogs].Rows)
	assert.Greater(t, d.Sizes[ArcLogs].Raw, d.Sizes[ArcLogs].Gzip)
	assert.Positive(t, d.Sizes[ArcLogs].Gzip)
	assert.Equal(t, "Bearer secret", srv.auth)
	assert.Equal(t, "prod", srv.database)
}

// TestArcDriverStopsRetryingAtTheEnd: a server that only pushes back (or
// is gone) must not keep the driver past its duration.
func TestArcDriverStopsRetryingAtTheEnd(t *testing.T) {
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer refuse.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for name, url := range map[string]string{"always 429": refuse.URL, "connection refused": gone.URL} {
		t.Run(name, func(t *testing.T) {
			rec := NewRecorder()
			d := &Arc{Plan: Plan{Signals: []Signal{ArcLogs}, Duration: 200 * time.Millisecond, Workers: 2, Batch: 10, Endpoint: url},
				Recorder: rec, Payloads: 1}
			done := make(chan error, 1)
			go func() { done <- d.Run(context.Background()) }()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(time.Minute):
				t.Fatal("the driver kept retrying after its duration")
			}
			tot := rec.Total()
			assert.Zero(t, tot.Items(), "nothing was acknowledged")
			assert.Positive(t, tot.Throttled+tot.Errors)
		})
	}
}

// TestArcPayloadWeight keeps the cycled payloads at least as heavy as the
// independent tool of issue 14: traces of 13 columns with 32-hex trace ids
// (~141 KB of MessagePack per 1000 rows), logs of 9 columns with a UUID
// request id and varied messages.
func TestArcPayloadWeight(t *testing.T) {
	uuidRE := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	tests := []struct {
		signal  Signal
		columns int // time included
		minRaw  int
		check   func(t *testing.T, cols map[string][]string)
	}{
		{signal: ArcTraces, columns: 13, minRaw: 141_000, check: func(t *testing.T, cols map[string][]string) {
			assert.Len(t, cols["trace_id"][0], 32)
			assert.Len(t, distinct(cols["trace_id"]), 1000, "random trace ids")
		}},
		{signal: ArcLogs, columns: 9, minRaw: 150_000, // a UUID and a ~45-byte message per row
			check: func(t *testing.T, cols map[string][]string) {
				for _, id := range cols["request_id"] {
					require.Regexp(t, uuidRE, id)
				}
				assert.Len(t, distinct(cols["request_id"]), 1000)
				assert.Greater(t, len(distinct(cols["message"])), 900, "messages vary row to row")
			}},
	}
	for _, tt := range tests {
		t.Run(string(tt.signal), func(t *testing.T) {
			raw, err := arcRaw(ShapeCycled, tt.signal, 1000, time.Now(), rand.New(rand.NewPCG(7, 8)))
			require.NoError(t, err)
			body, err := gzip1(raw)
			require.NoError(t, err)
			t.Logf("%s: one batch of 1000 rows is %d bytes of MessagePack, %d gzip-1", tt.signal, len(raw), len(body))
			assert.GreaterOrEqual(t, len(raw), tt.minRaw)
			ms, err := arcmsgpack.Decode(raw)
			require.NoError(t, err)
			require.Len(t, ms, 1)
			assert.Len(t, ms[0].Columns, tt.columns-1, "columns besides time")
			cols := map[string][]string{}
			for _, c := range ms[0].Columns {
				if c.Kind == arcmsgpack.KindString {
					cols[c.Name] = c.Strings()
				}
			}
			tt.check(t, cols)
		})
	}
}

func distinct(vals []string) map[string]bool {
	out := map[string]bool{}
	for _, v := range vals {
		out[v] = true
	}
	return out
}

// TestArcPrepareBeforeTheClock: payloads can be generated before a run is
// timed, and a run uses them once.
func TestArcPrepareBeforeTheClock(t *testing.T) {
	srv := &arcServer{rows: map[string]int{}}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	d := &Arc{Plan: Plan{Signals: []Signal{ArcTraces}, Rate: 5_000, Duration: 100 * time.Millisecond, Workers: 1, Batch: 50, Endpoint: hs.URL},
		Recorder: NewRecorder(), Payloads: 4}
	require.NoError(t, d.Prepare())
	require.Len(t, d.bodies[ArcTraces], 4)
	assert.Equal(t, 50, d.Sizes[ArcTraces].Rows, "sizes known before the run")
	require.NoError(t, d.Run(context.Background()))
	assert.Nil(t, d.bodies, "used once")
	assert.Positive(t, d.Recorder.Total().Acked[ArcTraces])
}

// TestArcWorkersTakeTurns: over one cycle the workers of a signal send each
// of its payloads exactly once, whatever the number of workers and signals.
func TestArcWorkersTakeTurns(t *testing.T) {
	for _, tt := range []struct{ workers, signals, payloads int }{
		{8, 1, 1024}, {8, 1, 64}, {3, 1, 64}, {8, 2, 64}, {5, 2, 60}, {1, 1, 4}, {4, 4, 8},
	} {
		t.Run(fmt.Sprintf("workers=%d/signals=%d/payloads=%d", tt.workers, tt.signals, tt.payloads), func(t *testing.T) {
			for sig := range tt.signals {
				sent := map[int]int{}
				var turns [][2]int
				for w := sig; w < tt.workers; w += tt.signals {
					first, stride := payloadTurn(w, tt.workers, tt.signals)
					turns = append(turns, [2]int{first, stride})
				}
				// Round robin: each worker's next request in turn, one cycle.
				for round := 0; len(turns) > 0 && round*len(turns) < tt.payloads; round++ {
					for _, tr := range turns {
						if i := tr[0] + round*tr[1]; i < tt.payloads {
							sent[i%tt.payloads]++
						}
					}
				}
				for i, n := range sent {
					assert.Equal(t, 1, n, "payload %d sent %d times in one cycle", i, n)
				}
				assert.Len(t, sent, tt.payloads, "every payload of signal %d sent once", sig)
			}
		})
	}
}
