package e2e

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// persistentQueue makes the arc exporter's queue a file_storage one, without
// batching so a request leaves the queue exactly as it entered.
func persistentQueue(dir string) string {
	return `    sending_queue: {enabled: true, num_consumers: 4, queue_size: 100000, storage: file_storage, batch: {enabled: false}}
extensions:
  file_storage: {directory: "` + dir + `"}
`
}

// TestChaosCollectorKills kills the collector with SIGKILL under load and
// restarts it on the same persistent queue: every span the collector
// acknowledged to the client reaches Parquet exactly once.
func TestChaosCollectorKills(t *testing.T) {
	kills := chaosKills(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	queueDir := t.TempDir()
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)), "-flush-interval", "300ms")
	otlp := addr(freePort(t))
	start := func() *collector { return startCollectorAt(t, sc.grpc, otlp, persistentQueue(queueDir)) }
	col := start()

	sender, stop := startLoad(t, otlp, 1, 200, 5*time.Millisecond)
	for i := range kills {
		time.Sleep(time.Duration(300+rand.IntN(700)) * time.Millisecond)
		col.kill()
		t.Logf("collector kill %d: %d spans acknowledged so far", i+1, sender.ackedCount())
		col = start()
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	// The restarted collector's counters start at zero: wait until its
	// queue is empty instead of comparing accepted with sent.
	deadline := time.Now().Add(60 * time.Second)
	for col.metric(t, "otelcol_exporter_queue_size", "") > 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("collector chaos: kills survived %d, spans acknowledged %d, lost %d, duplicated %d",
		kills, sender.ackedCount(), lost, dup)
	require.Positive(t, sender.ackedCount())
	assert.Zero(t, lost, "acknowledged spans missing from Parquet")
	assert.Zero(t, dup, "spans stored more than once")
}
