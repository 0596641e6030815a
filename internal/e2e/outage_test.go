package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSidecarOutage keeps load on the collector while the sidecar is down,
// then starts it: every span the collector acknowledged arrives once.
func TestSidecarOutage(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "500ms")
	col := startCollector(t, grpcAddr)
	sender, stop := startLoad(t, col.otlpGRPC, 1, 100, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	sc.stop(t, 30*time.Second)
	time.Sleep(sidecarOutage(t))
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "500ms")
	time.Sleep(500 * time.Millisecond)
	stop()
	col.waitDrained(t, 120*time.Second)
	// The collector held the outage's spans in its queue: its peak memory
	// must stay under the memory_limiter's limit (collectorConfig).
	peak := peakRSS(t, col.cmd.Process.Pid)
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("outage %s: spans acknowledged %d, lost %d, duplicated %d, collector peak RSS %d MiB", sidecarOutage(t), len(sender.acked), lost, dup, peak>>20)
	require.Positive(t, len(sender.acked))
	assert.Zero(t, lost)
	assert.Zero(t, dup)
	assert.Less(t, peak, int64(memoryLimiterMiB)<<20, "collector memory under its memory_limiter")
}

// memoryLimiterMiB is the collector's memory_limiter limit in collectorConfig.
const memoryLimiterMiB = 1024

// peakRSS is a process's resident-memory high-water mark (VmHWM).
func peakRSS(t testing.TB, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestBackpressure gives the sidecar a buffer ceiling far below the load.
// By default a write that finds it full waits for the flush it starts, so
// the buffer turns over and no write is refused; with -buffer-wait 0 it
// answers RESOURCE_EXHAUSTED instead, the exporter retries (and, once its
// queue is full, the collector refuses clients in turn). Either way the
// buffer does not grow and nothing acknowledged is lost.
func TestBackpressure(t *testing.T) {
	for _, tt := range []struct {
		name  string
		extra []string
		check func(t *testing.T, sc *sidecar)
	}{
		{
			// A wait longer than the default so that only a flush stalled
			// for 10 s, not a slow machine, could refuse a write.
			name:  "writes wait for the flush",
			extra: []string{"-buffer-wait", "10s"},
			check: func(t *testing.T, sc *sidecar) {
				assert.Positive(t, sidecarMetric(t, sc, "arcstore_buffer_wait_seconds_total"), "writes waited for room")
				assert.Zero(t, sidecarMetric(t, sc, "arcstore_backpressure_total"), "and none was refused")
			},
		},
		{
			name:  "refused at once with -buffer-wait 0",
			extra: []string{"-buffer-wait", "0"},
			check: func(t *testing.T, sc *sidecar) {
				assert.Positive(t, sidecarMetric(t, sc, "arcstore_backpressure_total"), "the sidecar pushed back")
				assert.Zero(t, sidecarMetric(t, sc, "arcstore_buffer_wait_seconds_total"))
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			grpcAddr := addr(freePort(t))
			args := append([]string{"-flush-interval", "1h", "-max-buffer-bytes", "400000"}, tt.extra...)
			sc := startSidecar(t, dataDir, grpcAddr, addr(freePort(t)), args...)
			col := startCollector(t, grpcAddr)
			sender, stop := startLoad(t, col.otlpGRPC, 2, 500, time.Millisecond)
			time.Sleep(3 * time.Second)
			stop()
			col.waitDrained(t, 120*time.Second)
			tt.check(t, sc)
			sc.stop(t, 30*time.Second)

			lost, dup := checkSpans(t, dataDir, sender)
			t.Logf("%s: spans acknowledged %d, client requests refused %d, lost %d, duplicated %d",
				tt.name, sender.ackedCount(), sender.failed, lost, dup)
			require.Positive(t, sender.ackedCount())
			assert.Zero(t, lost)
			assert.Zero(t, dup)
		})
	}
}

// checkSpans counts acknowledged spans missing from Parquet and spans
// stored more than once.
func checkSpans(t *testing.T, dataDir string, sender *spanSender) (lost, dup int) {
	t.Helper()
	rows := duckdb(t, "SELECT span_id, count(*) AS n FROM "+table(dataDir, "traces")+" GROUP BY span_id")
	found := map[string]int{}
	for _, r := range rows {
		found[r["span_id"].(string)] = int(r["n"].(float64))
		if int(r["n"].(float64)) > 1 {
			dup++
		}
	}
	for id := range sender.acked {
		if found[id] == 0 {
			lost++
		}
	}
	if dup > 0 {
		// Where the copies are tells a repeated batch (two files, the
		// same rows) from a file published twice.
		for _, r := range duckdb(t, "SELECT filename, min(span_id) AS first, count(*) AS n FROM read_parquet('"+dataDir+
			"/default/traces/**/*.parquet', hive_partitioning = true, filename = true) WHERE span_id IN (SELECT span_id FROM "+
			table(dataDir, "traces")+" GROUP BY span_id HAVING count(*) > 1) GROUP BY filename") {
			t.Logf("duplicated spans: %v rows from %v in %v", r["n"], r["first"], r["filename"])
		}
	}
	return lost, dup
}
