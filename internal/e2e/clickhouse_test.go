package e2e

import (
	"bufio"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

// clickhouseSpans counts the rows of each span id in ClickHouse.
func clickhouseSpans(t *testing.T, srv *chtest.Server) map[string]int {
	t.Helper()
	out := srv.MustQuery("SELECT span_id, count() FROM default.traces GROUP BY span_id FORMAT TSV")
	found := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		id, n, ok := strings.Cut(sc.Text(), "\t")
		require.True(t, ok, sc.Text())
		c, err := strconv.Atoi(n)
		require.NoError(t, err)
		found[id] = c
	}
	return found
}

// checkClickHouse counts acknowledged spans missing from ClickHouse and
// spans stored there more than once.
func checkClickHouse(t *testing.T, srv *chtest.Server, senders ...*spanSender) (lost, dup, acked int) {
	t.Helper()
	found := clickhouseSpans(t, srv)
	for _, n := range found {
		if n > 1 {
			dup++
		}
	}
	for _, s := range senders {
		for id := range s.acked {
			acked++
			if found[id] == 0 {
				lost++
			}
		}
	}
	return lost, dup, acked
}

// sidecarMetric sums a metric's series on the sidecar's /metrics.
func sidecarMetric(t *testing.T, sc *sidecar, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + sc.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		require.NoError(t, err)
		sum += v
	}
	return sum
}

// TestClickHouseSinkSurvivesKills drives load through the collector into a
// sidecar that writes Parquet and ClickHouse, SIGKILLs the sidecar at
// random moments (mid-insert among them: flushes every 150 ms) and checks
// every acknowledged span is in ClickHouse exactly once, and in Parquet.
func TestClickHouseSinkSurvivesKills(t *testing.T) {
	srv := chtest.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	args := []string{"-flush-interval", "150ms", "-clickhouse-addr", srv.Native}
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, grpcAddr)
	sender, stop := startLoad(t, col.otlpGRPC, 2, 250, 5*time.Millisecond)
	kills := chaosKills(t)
	for i := range kills {
		time.Sleep(time.Duration(300+rand.IntN(900)) * time.Millisecond)
		sc.kill()
		t.Logf("kill %d: %d spans acknowledged so far", i+1, sender.ackedCount())
		sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup, acked := checkClickHouse(t, srv, sender)
	plost, pdup := checkSpans(t, dataDir, sender)
	// A kill between an insert and its cursor sends the segment again; the
	// server drops it by its token and counts it here.
	dropped := srv.MustQuery("SELECT sum(value) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'")
	t.Logf("clickhouse chaos: kills %d, spans acknowledged %d; ClickHouse lost %d, duplicated %d, repeated inserts dropped by token %s; Parquet lost %d, duplicated %d",
		kills, acked, lost, dup, dropped, plost, pdup)
	require.Positive(t, acked)
	assert.Zero(t, lost, "acknowledged spans missing from ClickHouse")
	assert.Zero(t, dup, "spans in ClickHouse more than once")
	assert.Zero(t, plost, "acknowledged spans missing from Parquet")
	assert.Zero(t, pdup, "spans in Parquet more than once")
}

// TestClickHouseOutageUnderLoad stops ClickHouse for 30 s under load: the
// sidecar goes on acknowledging (into the WAL and Parquet), the WAL holds
// what ClickHouse lacks, and once it is back every span arrives once.
func TestClickHouseOutageUnderLoad(t *testing.T) {
	srv := chtest.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "500ms", "-clickhouse-addr", srv.Native)
	col := startCollector(t, grpcAddr)
	sender, stop := startLoad(t, col.otlpGRPC, 1, 100, 20*time.Millisecond)
	time.Sleep(time.Second)

	srv.Stop()
	before := sender.ackedCount()
	time.Sleep(chOutage(t))
	during := sender.ackedCount() - before
	lag := sidecarMetric(t, sc, "arcstore_sink_lag_segments")
	wal := sidecarMetric(t, sc, "arcstore_wal_bytes")
	failed := sidecarMetric(t, sc, `arcstore_sink_writes_total{result="error",sink="clickhouse"}`)
	srv.Restart()

	require.Eventually(t, func() bool { return sidecarMetric(t, sc, "arcstore_sink_lag_segments") == 0 },
		2*time.Minute, 200*time.Millisecond, "the sink catches up once ClickHouse is back")
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup, acked := checkClickHouse(t, srv, sender)
	plost, pdup := checkSpans(t, dataDir, sender)
	t.Logf("clickhouse outage %s: spans acknowledged %d (%d during the outage); at its end the sink was %v segments behind, the WAL held %.0f bytes, %v inserts had failed; ClickHouse lost %d, duplicated %d; Parquet lost %d, duplicated %d",
		chOutage(t), acked, during, lag, wal, failed, lost, dup, plost, pdup)
	assert.Positive(t, during, "the sidecar kept acknowledging while ClickHouse was down")
	assert.Positive(t, lag, "segments waited for ClickHouse")
	assert.Positive(t, wal, "the WAL held them")
	assert.Positive(t, failed, "inserts failed and were retried")
	assert.Zero(t, lost, "acknowledged spans missing from ClickHouse")
	assert.Zero(t, dup, "spans in ClickHouse more than once")
	assert.Zero(t, plost)
	assert.Zero(t, pdup)
}

// TestTwoCollectorsTwoSidecarsOneClickHouse is the scale-out layout of
// docs/SCALING.md on loopback: two collector + sidecar pairs, each fed by
// its own clients, both sidecars writing one ClickHouse. Every span must
// arrive exactly once, from both.
func TestTwoCollectorsTwoSidecarsOneClickHouse(t *testing.T) {
	srv := chtest.Start(t)
	type unit struct {
		sc     *sidecar
		col    *collector
		sender *spanSender
		stop   func()
	}
	units := make([]unit, 2)
	for i := range units {
		dataDir := filepath.Join(t.TempDir(), "data")
		grpcAddr := addr(freePort(t))
		units[i].sc = startSidecar(t, dataDir, grpcAddr, addr(freePort(t)), "-flush-interval", "300ms", "-clickhouse-addr", srv.Native)
		units[i].col = startCollector(t, grpcAddr)
	}
	for i := range units {
		units[i].sender, units[i].stop = startLoadFrom(t, units[i].col.otlpGRPC, 2, 200, 5*time.Millisecond, uint64(i)<<40)
	}
	time.Sleep(3 * time.Second)
	var senders []*spanSender
	for _, u := range units {
		u.stop()
		u.col.waitDrained(t, 120*time.Second)
		u.sc.stop(t, 30*time.Second)
		senders = append(senders, u.sender)
		require.Positive(t, u.sender.ackedCount())
	}
	ids := map[string]bool{}
	for _, u := range units {
		id, err := os.ReadFile(filepath.Join(u.sc.dataDir, "_arcstore", "sidecar-id"))
		require.NoError(t, err)
		ids[strings.TrimSpace(string(id))] = true
	}
	assert.Len(t, ids, 2, "each sidecar has its own id, so their insert tokens never collide")

	lost, dup, acked := checkClickHouse(t, srv, senders...)
	t.Logf("two units into one ClickHouse: spans acknowledged %d (%d + %d), lost %d, duplicated %d",
		acked, senders[0].ackedCount(), senders[1].ackedCount(), lost, dup)
	assert.Zero(t, lost)
	assert.Zero(t, dup)
	assert.Equal(t, strconv.Itoa(acked), srv.MustQuery("SELECT count() FROM default.traces"), "nothing but the acknowledged spans")
}

// TestClickHouseRewriteAfterLostCursorIsDropped makes, deterministically,
// the state a SIGKILL between a ClickHouse insert and its cursor leaves:
// segments inserted, cursor not moved. It keeps a copy of the data
// directory from before the inserts, lets the sidecar insert, then puts the
// copy back and starts the sidecar on it. The same segments go again with
// the same tokens, and ClickHouse keeps one copy.
func TestClickHouseRewriteAfterLostCursorIsDropped(t *testing.T) {
	srv := chtest.Start(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	args := []string{"-flush-interval", "200ms", "-clickhouse-addr", srv.Native}
	srv.Stop() // the segments wait in the WAL
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	col := startCollector(t, grpcAddr)
	sender, stop := startLoad(t, col.otlpGRPC, 2, 200, 5*time.Millisecond)
	time.Sleep(2 * time.Second)
	stop()
	col.waitDrained(t, 60*time.Second)
	sc.stop(t, 30*time.Second)
	require.Positive(t, sidecarSegments(t, dataDir), "segments held for ClickHouse")

	before := filepath.Join(t.TempDir(), "before")
	out, err := exec.Command("cp", "-a", dataDir, before).CombinedOutput()
	require.NoError(t, err, string(out))

	srv.Restart()
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	require.Eventually(t, func() bool { return sidecarMetric(t, sc, "arcstore_sink_lag_segments") == 0 }, time.Minute, 100*time.Millisecond)
	sc.stop(t, 30*time.Second)
	first := srv.MustQuery("SELECT count() FROM default.traces")

	require.NoError(t, os.RemoveAll(dataDir))
	require.NoError(t, os.Rename(before, dataDir))
	sc = startSidecar(t, dataDir, grpcAddr, httpAddr, args...)
	require.Eventually(t, func() bool { return sidecarMetric(t, sc, "arcstore_sink_lag_segments") == 0 }, time.Minute, 100*time.Millisecond)
	resent := sidecarMetric(t, sc, `arcstore_sink_writes_total{result="ok",sink="clickhouse"}`)
	sc.stop(t, 30*time.Second)

	dropped := srv.MustQuery("SELECT sum(value) FROM system.events WHERE event = 'DuplicatedInsertedBlocks'")
	lost, dup, acked := checkClickHouse(t, srv, sender)
	t.Logf("lost cursor: %d spans acknowledged, %s in ClickHouse after the first pass; the second pass sent %v inserts again, ClickHouse dropped %s blocks; lost %d, duplicated %d",
		acked, first, resent, dropped, lost, dup)
	assert.Equal(t, strconv.Itoa(acked), first, "the first pass stored every span")
	assert.Positive(t, resent, "the second pass sent the segments again")
	assert.NotEqual(t, "0", dropped, "and ClickHouse dropped them by their tokens")
	assert.Zero(t, lost)
	assert.Zero(t, dup)
}

// sidecarSegments counts WAL segment files with data.
func sidecarSegments(t *testing.T, dataDir string) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "_arcstore", "wal"))
	require.NoError(t, err)
	n := 0
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Size() > 0 {
			n++
		}
	}
	return n
}
