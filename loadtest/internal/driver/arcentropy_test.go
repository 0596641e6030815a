package driver

import (
	"context"
	"crypto/sha256"
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

var (
	uuidV4RE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	hex16RE  = regexp.MustCompile(`^[0-9a-f]{16}$`)
	hex32RE  = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// prepared generates payloads of the new shape as a run would and decodes
// every one of them.
func prepared(t *testing.T, s Signal, payloads, rows int) (*Arc, [][]byte, []arcmsgpack.Measurement) {
	t.Helper()
	d := &Arc{Plan: Plan{Signals: []Signal{s}, Workers: 8, Batch: rows}, Payloads: payloads}
	require.NoError(t, d.Prepare())
	bodies := d.bodies[s]
	require.Len(t, bodies, payloads)
	var ms []arcmsgpack.Measurement
	for _, b := range bodies {
		m := decodeGzip(t, b)
		require.Len(t, m, 1)
		require.Equal(t, rows, m[0].Rows())
		ms = append(ms, m[0])
	}
	return d, bodies, ms
}

func columnsByName(m arcmsgpack.Measurement) map[string]*arcmsgpack.Column {
	out := map[string]*arcmsgpack.Column{}
	for i := range m.Columns {
		out[m.Columns[i].Name] = &m.Columns[i]
	}
	return out
}

// requireDistinct fails on the first value seen twice.
func requireDistinct(t *testing.T, what string, seen map[string]bool, vals ...string) {
	t.Helper()
	for _, v := range vals {
		require.False(t, seen[v], "%s %q seen twice", what, v)
		seen[v] = true
	}
}

// TestNewLogsEveryRowNew: no two batches alike, and across all of them no
// request id twice; every row has the columns and types, a
// version-4 UUID and a 60-100 byte message, and messages do not repeat.
func TestNewLogsEveryRowNew(t *testing.T) {
	const payloads, rows = 64, 1000
	_, bodies, ms := prepared(t, ArcLogs, payloads, rows)
	bodySeen, requestSeen, messages := map[string]bool{}, map[string]bool{}, map[string]bool{}
	levels := map[string]int{}
	for i, m := range ms {
		sum := sha256.Sum256(bodies[i])
		requireDistinct(t, "payload", bodySeen, string(sum[:]))
		cols := columnsByName(m)
		kinds := map[string]arcmsgpack.Kind{}
		for name, c := range cols {
			kinds[name] = c.Kind
		}
		require.Equal(t, map[string]arcmsgpack.Kind{
			"level": arcmsgpack.KindString, "service": arcmsgpack.KindString, "environment": arcmsgpack.KindString,
			"region": arcmsgpack.KindString, "message": arcmsgpack.KindString, "request_id": arcmsgpack.KindString,
			"response_time_ms": arcmsgpack.KindFloat, "status_code": arcmsgpack.KindInt,
		}, kinds, "the columns besides time")
		ids := cols["request_id"].Strings()
		for _, id := range ids {
			require.Regexp(t, uuidV4RE, id)
		}
		requireDistinct(t, "request id", requestSeen, ids...)
		for _, msg := range cols["message"].Strings() {
			require.GreaterOrEqual(t, len(msg), MinLogMessage, msg)
			require.LessOrEqual(t, len(msg), MaxLogMessage, msg)
			messages[msg] = true
		}
		for _, l := range cols["level"].Strings() {
			levels[l]++
		}
		for _, v := range cols["response_time_ms"].Floats {
			require.True(t, v >= 10 && v <= 5000, "response time %v", v)
		}
	}
	assert.Len(t, requestSeen, payloads*rows)
	assert.Greater(t, len(messages), payloads*rows*999/1000, "messages are random per row")
	assert.Len(t, levels, 5)
	assert.InDelta(t, 0.5, float64(levels["INFO"])/float64(payloads*rows), 0.02, "Arc's level weights")
}

// TestNewTracesEveryRowNew: random trace and span ids per row, never
// twice across the batches, in Arc's 13 columns.
func TestNewTracesEveryRowNew(t *testing.T) {
	const payloads, rows = 64, 1000
	_, bodies, ms := prepared(t, ArcTraces, payloads, rows)
	bodySeen, traceSeen, spanSeen := map[string]bool{}, map[string]bool{}, map[string]bool{}
	parents := 0
	for i, m := range ms {
		sum := sha256.Sum256(bodies[i])
		requireDistinct(t, "payload", bodySeen, string(sum[:]))
		cols := columnsByName(m)
		require.Len(t, cols, 12, "13 columns with time")
		for _, name := range []string{"trace_id", "span_id", "parent_span_id", "service_name", "operation_name", "span_kind",
			"duration_ns", "status_code", "http_method", "environment", "region", "error"} {
			require.Contains(t, cols, name)
		}
		traces, spans := cols["trace_id"].Strings(), cols["span_id"].Strings()
		for j := range traces {
			require.Regexp(t, hex32RE, traces[j])
			require.Regexp(t, hex16RE, spans[j])
		}
		requireDistinct(t, "trace id", traceSeen, traces...)
		requireDistinct(t, "span id", spanSeen, spans...)
		for _, p := range cols["parent_span_id"].Strings() {
			if p != "" {
				require.Regexp(t, hex16RE, p)
				parents++
			}
		}
		assert.InDelta(t, time.Now().UnixMilli(), m.Time[0]/int64(time.Millisecond/time.Microsecond), float64(2*time.Minute/time.Millisecond), "milliseconds, as Arc's script sends")
	}
	assert.InDelta(t, 0.3, float64(parents)/float64(payloads*rows), 0.02, "30 % of spans have a parent")
}

// TestLogMessageLengths: each of the seven templates stays within 60-100
// bytes over many draws.
func TestLogMessageLengths(t *testing.T) {
	require.Len(t, logLines, 7)
	r := rand.New(rand.NewPCG(5, 6))
	for i, tmpl := range logLines {
		shortest, longest := MaxLogMessage+1, 0
		for range 20_000 {
			n := len(tmpl(nil, r))
			shortest, longest = min(shortest, n), max(longest, n)
		}
		assert.GreaterOrEqual(t, shortest, MinLogMessage, "template %d", i)
		assert.LessOrEqual(t, longest, MaxLogMessage, "template %d", i)
	}
}

// TestNewShapeDiffersFromRunToRun: the new shape's batches are drawn anew
// per run (a second run into the same tree adds new rows), the cycled
// shape's are the same every run, as before.
func TestNewShapeDiffersFromRunToRun(t *testing.T) {
	for _, tt := range []struct {
		shape Shape
		same  bool
	}{{ShapeNew, false}, {ShapeCycled, true}} {
		t.Run(string(tt.shape), func(t *testing.T) {
			ids := func() []string {
				d := &Arc{Plan: Plan{Signals: []Signal{ArcLogs}, Batch: 10}, Payloads: 2, Shape: tt.shape}
				require.NoError(t, d.Prepare())
				return columnsByName(decodeGzip(t, d.bodies[ArcLogs][1])[0])["request_id"].Strings()
			}
			if tt.same {
				assert.Equal(t, ids(), ids())
			} else {
				assert.NotEqual(t, ids(), ids())
			}
		})
	}
}

func TestShapeDefaultPayloads(t *testing.T) {
	assert.Equal(t, 8192, ShapeNew.DefaultPayloads(), "as the independent harness")
	assert.Equal(t, 8192, Shape("").DefaultPayloads())
	assert.Equal(t, 64, ShapeCycled.DefaultPayloads(), "as up to 2026-11-27")
}

// TestPrepareMemoryBudget: past the budget fewer distinct batches are made
// (as many as the first batch's weight says fit) and Sizes says how many.
func TestPrepareMemoryBudget(t *testing.T) {
	raw, err := arcRaw(ShapeNew, ArcLogs, 100, time.Now(), rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	gz, err := gzip1(raw)
	require.NoError(t, err)
	tests := []struct {
		name   string
		budget int64
		fresh  bool
		about  int // how many fit, give or take the batches' spread in size
	}{
		{name: "no bound", budget: 0, about: 40},
		{name: "room for all", budget: int64(100 * len(gz)), about: 40},
		{name: "room for about ten", budget: int64(10*len(gz) + len(gz)/2), about: 10},
		{name: "room for none still makes one", budget: 1, about: 1},
		{name: "fresh keeps raw batches", budget: int64(10*len(raw) + len(raw)/2), fresh: true, about: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Arc{Plan: Plan{Signals: []Signal{ArcLogs, ArcTraces}, Batch: 100}, Payloads: 40, MemoryBudget: 2 * tt.budget, Fresh: tt.fresh}
			require.NoError(t, d.Prepare())
			first := func() int {
				if tt.fresh {
					return len(d.fresh[ArcLogs][0].raw)
				}
				return len(d.bodies[ArcLogs][0])
			}()
			want := 40
			if tt.budget > 0 {
				want = int(min(40, max(1, tt.budget/int64(first))))
			}
			got := len(d.bodies[ArcLogs]) + len(d.fresh[ArcLogs])
			assert.Equal(t, want, got, "each measurement gets half the budget")
			assert.InDelta(t, tt.about, got, 1)
			assert.Equal(t, got, d.Sizes[ArcLogs].Distinct)
			traces := len(d.bodies[ArcTraces]) + len(d.fresh[ArcTraces])
			assert.Equal(t, traces, d.Sizes[ArcTraces].Distinct)
		})
	}
}

// TestArcRunSendsEveryRowOnce: while the run has not used up its distinct
// batches, no row reaches the server twice; past them it cycles through
// all of them (each worker steps through every batch, so a row goes out at
// most one more time per worker than the whole cycles).
func TestArcRunSendsEveryRowOnce(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]int{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ms := decodeGzip(t, body)
		mu.Lock()
		for _, id := range columnsByName(ms[0])["request_id"].Strings() {
			ids[id]++
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hs.Close()
	for _, tt := range []struct {
		name     string
		payloads int
	}{{"fewer sends than batches", 10_000}, {"cycling", 3}} {
		t.Run(tt.name, func(t *testing.T) {
			clear(ids)
			d := &Arc{Plan: Plan{Signals: []Signal{ArcLogs}, Rate: 5_000, Duration: 300 * time.Millisecond, Workers: 4, Batch: 10, Endpoint: hs.URL},
				Recorder: NewRecorder(), Payloads: tt.payloads, MemoryBudget: 1 << 20}
			require.NoError(t, d.Run(context.Background()))
			sent := d.Recorder.Total().Acked[ArcLogs]
			require.Greater(t, sent, int64(30), "more than three batches went out")
			mu.Lock()
			defer mu.Unlock()
			distinct := min(int(sent), 10*d.Sizes[ArcLogs].Distinct)
			assert.Len(t, ids, distinct)
			for id, n := range ids {
				require.LessOrEqual(t, n, int(sent)/distinct+d.Plan.Workers, id)
			}
		})
	}
}
