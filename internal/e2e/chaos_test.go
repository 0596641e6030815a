package e2e

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// chaosKills is how many times the chaos test kills the sidecar: a few in
// `make test`, ARC_CHAOS_KILLS=12 (or more) in `make chaos`.
func chaosKills(t *testing.T) int {
	if s := os.Getenv("ARC_CHAOS_KILLS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		return n
	}
	return 3
}

// spanSender sends traces of unique spans to the collector and remembers
// which ones the collector acknowledged.
type spanSender struct {
	client ptraceotlp.GRPCClient
	next   atomic.Uint64
	mu     sync.Mutex
	acked  map[string]bool
	failed int
	// past dates the spans this long before now (closed hours).
	past time.Duration
}

func (s *spanSender) send(ctx context.Context, n int) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "chaos")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	ids := make([]string, 0, n)
	now := pcommon.NewTimestampFromTime(time.Now().Add(-s.past))
	for range n {
		id := s.next.Add(1)
		var sid pcommon.SpanID
		binary.BigEndian.PutUint64(sid[:], id)
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
		sp.SetSpanID(sid)
		sp.SetName("op")
		sp.SetStartTimestamp(now)
		sp.SetEndTimestamp(now + 1000)
		ids = append(ids, hex.EncodeToString(sid[:]))
	}
	_, err := s.client.Export(ctx, ptraceotlp.NewExportRequestFromTraces(td))
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.failed++
		return
	}
	for _, id := range ids {
		s.acked[id] = true
	}
}

// startLoad sends requests of n unique spans to the collector at otlpAddr
// from workers goroutines, pausing between requests, until the returned
// stop function is called; stop waits for the senders to finish.
func startLoad(t *testing.T, otlpAddr string, workers, n int, pause time.Duration) (*spanSender, func()) {
	t.Helper()
	return startLoadFrom(t, otlpAddr, workers, n, pause, 0)
}

// startLoadFrom is startLoad with span ids after firstID, so that senders
// to different collectors never share one.
func startLoadFrom(t *testing.T, otlpAddr string, workers, n int, pause time.Duration, firstID uint64) (*spanSender, func()) {
	t.Helper()
	return startLoadPast(t, otlpAddr, workers, n, pause, firstID, 0)
}

// startLoadPast is startLoadFrom with spans dated past before now.
func startLoadPast(t *testing.T, otlpAddr string, workers, n int, pause time.Duration, firstID uint64, past time.Duration) (*spanSender, func()) {
	t.Helper()
	conn, err := grpc.NewClient(otlpAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	sender := &spanSender{client: ptraceotlp.NewGRPCClient(conn), acked: map[string]bool{}, past: past}
	sender.next.Store(firstID)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				sender.send(context.Background(), n)
				time.Sleep(pause)
			}
		})
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			conn.Close()
		})
	}
	t.Cleanup(stop)
	return sender, stop
}

func (s *spanSender) failedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *spanSender) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// TestChaosSidecarKills drives steady load through the collector while the
// sidecar is killed with SIGKILL at random moments and restarted. Every span
// the collector acknowledged must end up in Parquet exactly once.
func TestChaosSidecarKills(t *testing.T) {
	kills := chaosKills(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	// A short flush interval puts kills in the middle of flushes and
	// publishes too, not only between acknowledgements.
	args := []string{"-flush-interval", "150ms"}
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, grpcAddr)

	sender, stop := startLoad(t, col.otlpGRPC, 2, 250, 5*time.Millisecond)

	for i := range kills {
		time.Sleep(time.Duration(200+rand.IntN(800)) * time.Millisecond)
		sc.kill()
		t.Logf("kill %d: %d spans acknowledged so far", i+1, sender.ackedCount())
		sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("chaos: kills survived %d, spans acknowledged %d, lost %d, duplicated %d, client requests refused %d",
		kills, len(sender.acked), lost, dup, sender.failed)
	require.Positive(t, len(sender.acked))
	assert.Zero(t, lost, "acknowledged spans missing from Parquet")
	assert.Zero(t, dup, "spans stored more than once")
}
