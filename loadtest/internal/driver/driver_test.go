package driver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestTemplateFillPatchesEveryItemID(t *testing.T) {
	for _, sig := range []Signal{Traces, Logs, Metrics} {
		t.Run(string(sig), func(t *testing.T) {
			tpl, err := newTemplate(sig, 50, time.Now(), false)
			require.NoError(t, err)
			var buf []byte
			for _, first := range []uint64{0, 1 << 40} {
				buf = tpl.fill(buf, first, time.Now())
				ids := idsOf(t, sig, buf)
				require.Len(t, ids, 50)
				for i, id := range ids {
					assert.Equal(t, fmt.Sprintf("%016x", first+uint64(i)), id)
				}
			}
		})
	}
}

// idsOf unmarshals a request and returns its items' id attributes in order.
func idsOf(t *testing.T, sig Signal, body []byte) []string {
	t.Helper()
	var ids []string
	switch sig {
	case Traces:
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(body))
		spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := range spans.Len() {
			v, _ := spans.At(i).Attributes().Get(IDAttribute)
			ids = append(ids, v.Str())
		}
	case Logs:
		req := plogotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(body))
		recs := req.Logs().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for i := range recs.Len() {
			v, _ := recs.At(i).Attributes().Get(IDAttribute)
			ids = append(ids, v.Str())
		}
	case Metrics:
		req := pmetricotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(body))
		pts := req.Metrics().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
		for i := range pts.Len() {
			v, _ := pts.At(i).Attributes().Get(IDAttribute)
			ids = append(ids, v.Str())
		}
	}
	return ids
}

func TestTracesAreNewOnEverySend(t *testing.T) {
	tpl, err := newTemplate(Traces, 50, time.Now(), false)
	require.NoError(t, err)
	require.Len(t, tpl.traceIDs, 50, "every span's trace id is patched")
	traces := func(first uint64) map[string]int {
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(tpl.fill(nil, first, time.Now())))
		out := map[string]int{}
		spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		for i := range spans.Len() {
			out[spans.At(i).TraceID().String()]++
		}
		return out
	}
	a, b := traces(0), traces(50)
	assert.Len(t, a, 25, "parent and child share their trace")
	for id, n := range a {
		assert.Equal(t, 2, n)
		assert.NotContains(t, b, id, "another send, other traces")
	}
}

func TestRandomIDsAreNewOnEverySend(t *testing.T) {
	tpl, err := newTemplate(Traces, 50, time.Now(), true)
	require.NoError(t, err)
	type span struct{ trace, id, parent string }
	send := func() []span {
		req := ptraceotlp.NewExportRequest()
		require.NoError(t, req.UnmarshalProto(tpl.fill(nil, 0, time.Now())))
		spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
		out := make([]span, spans.Len())
		for i := range out {
			s := spans.At(i)
			out[i] = span{s.TraceID().String(), s.SpanID().String(), s.ParentSpanID().String()}
		}
		return out
	}
	a, b := send(), send()
	require.Len(t, a, 50)
	seen := map[string]bool{}
	for i := 0; i < len(a); i += 2 {
		client, server := a[i], a[i+1]
		assert.Equal(t, client.trace, server.trace, "a pair shares its trace")
		assert.Equal(t, client.id, server.parent, "the server span's parent is the client span")
		assert.Empty(t, client.parent)
		assert.NotEqual(t, client.trace[:16], a[(i+2)%len(a)].trace[:16], "trace ids differ in every half, not only in a counter")
		assert.NotEqual(t, client.trace[16:], a[(i+2)%len(a)].trace[16:])
		for _, s := range []span{client, server} {
			assert.False(t, seen[s.id], "span ids are unique")
			seen[s.id] = true
		}
	}
	for i := range b {
		assert.NotEqual(t, a[i].id, b[i].id, "another send, other span ids")
		assert.NotEqual(t, a[i].trace, b[i].trace, "another send, other traces")
	}
}

func TestTimestampsFollowTheSend(t *testing.T) {
	built := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sent := built.Add(3 * time.Hour)
	for _, sig := range []Signal{Traces, Logs, Metrics} {
		t.Run(string(sig), func(t *testing.T) {
			tpl, err := newTemplate(sig, 20, built, false)
			require.NoError(t, err)
			require.Len(t, tpl.times, 20*len(timeTags[sig]), "every timestamp field found")
			body := tpl.fill(nil, 0, sent)
			var first, last time.Time
			switch sig {
			case Traces:
				req := ptraceotlp.NewExportRequest()
				require.NoError(t, req.UnmarshalProto(body))
				spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
				first, last = spans.At(0).StartTimestamp().AsTime(), spans.At(19).EndTimestamp().AsTime()
				assert.Equal(t, spanLength, spans.At(19).EndTimestamp().AsTime().Sub(spans.At(19).StartTimestamp().AsTime()))
			case Logs:
				req := plogotlp.NewExportRequest()
				require.NoError(t, req.UnmarshalProto(body))
				recs := req.Logs().ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
				first, last = recs.At(0).Timestamp().AsTime(), recs.At(19).ObservedTimestamp().AsTime()
			case Metrics:
				req := pmetricotlp.NewExportRequest()
				require.NoError(t, req.UnmarshalProto(body))
				pts := req.Metrics().ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints()
				first, last = pts.At(0).Timestamp().AsTime(), pts.At(19).Timestamp().AsTime()
			}
			assert.True(t, first.Equal(sent), "first item at the send time: %v", first)
			assert.WithinDuration(t, sent, last, time.Millisecond)
		})
	}
}

func TestPlanValidate(t *testing.T) {
	good := Plan{Signals: []Signal{Traces, Logs}, Rate: 1000, Duration: time.Second, Workers: 2, Batch: 100, Endpoint: "127.0.0.1:4317"}
	require.NoError(t, good.Validate())
	tests := []struct {
		name   string
		change func(*Plan)
		msg    string
	}{
		{"no signal", func(p *Plan) { p.Signals = nil }, "no signal"},
		{"negative rate", func(p *Plan) { p.Rate = -1 }, "rate -1"},
		{"no duration", func(p *Plan) { p.Duration = 0 }, "duration 0s"},
		{"fewer workers than signals", func(p *Plan) { p.Workers = 1 }, "workers 1"},
		{"no batch", func(p *Plan) { p.Batch = 0 }, "batch 0"},
		{"no endpoint", func(p *Plan) { p.Endpoint = "" }, "no endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := good
			tt.change(&p)
			assert.ErrorContains(t, p.Validate(), tt.msg)
		})
	}
}

func TestTelemetrygenArgs(t *testing.T) {
	d := &Telemetrygen{Plan: Plan{Signals: []Signal{Traces, Logs}, Rate: 40_000, Duration: 30 * time.Second, Workers: 4, Batch: 1000, Endpoint: "127.0.0.1:4317"}}
	assert.Equal(t, []string{"traces", "--otlp-endpoint", "127.0.0.1:4317", "--otlp-insecure", "--duration", "30s",
		"--workers", "2", "--rate", "5000", "--batch-size", "1000", "--interval", "1h0m0s"}, d.Args(Traces),
		"20 000 spans/s for traces over 2 workers is 5000 two-span traces per worker")
	assert.Contains(t, d.Args(Logs), "10000")
	d.Plan.Rate = 0
	assert.Contains(t, d.Args(Logs), "0", "0 is unthrottled in telemetrygen too")
}

func TestPacerSpacesSlots(t *testing.T) {
	start := time.Now()
	p := newPacer(1000, 100, start) // 10 requests per second
	ctx := context.Background()
	for range 4 {
		require.True(t, p.wait(ctx))
	}
	// Four slots at 0, 100, 200, 300 ms: the fourth cannot come earlier.
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, p.wait(cancelled))
	assert.True(t, newPacer(0, 100, start).wait(ctx), "rate 0 never waits")
}

// traceServer is an OTLP trace receiver that counts ids and fails the
// first requests it is told to.
type traceServer struct {
	ptraceotlp.UnimplementedGRPCServer
	mu       sync.Mutex
	ids      map[string]int
	failNext int
	code     codes.Code
	// failed are the ids of the requests failed; partial, when set, is
	// how many spans the first request's answer says were rejected.
	failed  map[string]bool
	partial int
}

func (s *traceServer) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spans := req.Traces().ResourceSpans().At(0).ScopeSpans().At(0).Spans()
	if s.failNext > 0 {
		s.failNext--
		for i := range spans.Len() {
			v, _ := spans.At(i).Attributes().Get(IDAttribute)
			s.failed[v.Str()] = true
		}
		return ptraceotlp.NewExportResponse(), status.Error(s.code, "try again")
	}
	for i := range spans.Len() {
		v, _ := spans.At(i).Attributes().Get(IDAttribute)
		s.ids[v.Str()]++
	}
	resp := ptraceotlp.NewExportResponse()
	if s.partial > 0 {
		resp.PartialSuccess().SetRejectedSpans(int64(s.partial))
		s.partial = 0
	}
	return resp, nil
}

func serve(t *testing.T, srv ptraceotlp.GRPCServer) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(g, srv)
	go g.Serve(l)
	t.Cleanup(g.Stop)
	return l.Addr().String()
}

func TestOTLPDriverSendsUniqueItemsAndRetries(t *testing.T) {
	tests := []struct {
		name     string
		code     codes.Code
		failures int
		rejected bool
		partial  int
	}{
		{name: "all accepted"},
		{name: "unavailable is retried", code: codes.Unavailable, failures: 3},
		{name: "invalid argument is given up", code: codes.InvalidArgument, failures: 1, rejected: true},
		{name: "a partial success", partial: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &traceServer{ids: map[string]int{}, failNext: tt.failures, code: tt.code, failed: map[string]bool{}, partial: tt.partial}
			rec := NewRecorder()
			d := NewOTLP(Plan{Signals: []Signal{Traces}, Rate: 20_000, Duration: 300 * time.Millisecond, Workers: 2, Batch: 100, Endpoint: serve(t, srv)}, rec)
			require.NoError(t, d.Run(context.Background()))

			total := rec.Total()
			srv.mu.Lock()
			defer srv.mu.Unlock()
			require.NotZero(t, total.Acked[Traces])
			assert.Equal(t, int64(len(srv.ids)-tt.partial), total.Acked[Traces], "every acknowledged span reached the server")
			for id, n := range srv.ids {
				require.Equal(t, 1, n, "id %s sent once", id)
			}
			assert.Equal(t, int64(tt.failures), total.Errors)
			doubt, ok := d.InDoubt()
			require.True(t, ok)
			switch {
			case tt.rejected:
				assert.Equal(t, int64(100), total.Rejected)
				require.Len(t, doubt, 1, "the request given up")
				assert.Equal(t, IDSpan{Signal: Traces, Lo: doubt[0].Lo, Hi: doubt[0].Hi}, doubt[0], "none of it acknowledged")
				assert.Len(t, srv.failed, 100)
				for id := range srv.failed {
					assert.True(t, id >= doubt[0].Lo && id <= doubt[0].Hi, "failed id %s in doubt", id)
				}
			case tt.partial > 0:
				assert.Equal(t, int64(tt.partial), total.Rejected)
				require.Len(t, doubt, 1, "the request partly refused")
				assert.Equal(t, int64(100-tt.partial), doubt[0].Acked)
				var in int
				for id := range srv.ids {
					if id >= doubt[0].Lo && id <= doubt[0].Hi {
						in++
					}
				}
				assert.Equal(t, 100, in, "the span is the whole request")
			default:
				assert.Zero(t, total.Rejected)
				assert.Empty(t, doubt)
			}
			lo, hi := d.IDRange()
			for id := range srv.ids {
				assert.True(t, id >= lo && id <= hi, "id %s within [%s, %s]", id, lo, hi)
			}
			for id := range srv.failed {
				assert.True(t, id >= lo && id <= hi, "failed id %s within [%s, %s]", id, lo, hi)
			}
			assert.Len(t, total.Latencies, len(srv.ids)/100)
		})
	}
}

// TestOTLPRequestsArePreparedBeforeTheClock: the harness marshals the
// workers' requests before it starts timing, and Run sends those, not a
// second set built on its clock.
func TestOTLPRequestsArePreparedBeforeTheClock(t *testing.T) {
	srv := &traceServer{ids: map[string]int{}}
	d := NewOTLP(Plan{Signals: []Signal{Traces}, Rate: 20_000, Duration: 100 * time.Millisecond, Workers: 3, Batch: 10, Endpoint: serve(t, srv)}, NewRecorder())
	require.NoError(t, d.Prepare())
	prepared := slices.Clone(d.templates)
	require.Len(t, prepared, 3, "one request per worker")
	require.NoError(t, d.Run(context.Background()))
	assert.Equal(t, prepared, d.templates, "Run sent the prepared requests")
	srv.mu.Lock()
	defer srv.mu.Unlock()
	assert.NotEmpty(t, srv.ids)
}
