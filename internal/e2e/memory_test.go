package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// maxRSS is the sidecar's promise: resident memory under 512 MiB against
// any mix of concurrent requests.
const maxRSS = 512 << 20

// A write that costs the sidecar the most memory per byte sent.
type costlyWrite struct {
	name, path string
	body       []byte
	header     map[string]string
	clients    int
}

// lineProtocolText is size bytes of line protocol of one measurement and
// hour: it compresses about 300-fold, to a body small enough for the
// whole-body gzip path.
func lineProtocolText(size int) []byte {
	now := time.Now().UnixNano()
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "cpu,host=server%d,region=us-west usage_user=12.5,usage_system=3.25 %d\n", i%4, now)
	}
	return b.Bytes()
}

// msgpackColumns is a valid columnar MessagePack body of about size bytes
// of one measurement and hour: times and floats, 18 bytes a row sent,
// 16 decoded.
func msgpackColumns(tb testing.TB, size int) []byte {
	rows := size / 18
	now := time.Now().Add(-time.Minute).UnixMilli()
	times, values := make([]int64, rows), make([]float64, rows)
	for i := range rows {
		times[i], values[i] = now+int64(i%1000), float64(i)+0.25
	}
	body, err := msgpack.Marshal(map[string]any{"m": "big", "columns": map[string]any{"time": times, "value": values}})
	require.NoError(tb, err)
	return body
}

// manyMeasurementRows is n one-row measurements in MessagePack's row
// format: each its own partition.
func manyMeasurementRows(tb testing.TB, n int) []byte {
	rows := make([]map[string]any, n)
	now := time.Now().UnixMilli()
	for i := range rows {
		rows[i] = map[string]any{"m": fmt.Sprintf("m%d", i), "t": now, "fields": map[string]any{"v": 1}}
	}
	body, err := msgpack.Marshal(rows)
	require.NoError(tb, err)
	return body
}

func manyMeasurementLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "m%d v=1i\n", i)
	}
	return b.Bytes()
}

func gzipBody(tb testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(tb, err)
	require.NoError(tb, zw.Close())
	return buf.Bytes()
}

func zstdBody(tb testing.TB, b []byte) []byte {
	enc, err := zstd.NewWriter(nil)
	require.NoError(tb, err)
	defer enc.Close()
	return enc.EncodeAll(b, nil)
}

// costlyWrites are issue 31's requests that took the sidecar past its
// promise: many one-row measurements in a small body (item 3), large gzip
// and zstd bodies of each protocol sent at once (item 4).
func costlyWrites(tb testing.TB) []costlyWrite {
	text := lineProtocolText(60 << 20)
	columns := msgpackColumns(tb, 61_000_000)
	return []costlyWrite{
		{"many-measurements/msgpack-rows-gzip", "/api/v1/write/msgpack", gzipBody(tb, manyMeasurementRows(tb, 90_000)), nil, 2},
		{"many-measurements/line-protocol", "/api/v1/write/line-protocol", manyMeasurementLines(90_000), nil, 2},
		{"large/line-protocol-gzip-60MiB", "/api/v1/write/line-protocol", gzipBody(tb, text), nil, 6},
		{"large/line-protocol-zstd-60MiB", "/api/v1/write/line-protocol", zstdBody(tb, text), nil, 6},
		{"large/msgpack-gzip-61MB", "/api/v1/write/msgpack", gzipBody(tb, columns), nil, 4},
		{"large/msgpack-zstd-61MB", "/api/v1/write/msgpack", zstdBody(tb, columns), nil, 4},
	}
}

// sendAll sends each write from its clients at once, each client rounds
// times, and counts the answers by status.
func sendAll(tb testing.TB, base string, writes []costlyWrite, rounds int) map[int]int {
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for _, w := range writes {
		for range w.clients {
			wg.Go(func() {
				for range rounds {
					req, err := http.NewRequest(http.MethodPost, base+w.path, bytes.NewReader(w.body))
					if err != nil {
						tb.Error(err)
						return
					}
					for k, v := range w.header {
						req.Header.Set(k, v)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						tb.Errorf("%s: %v", w.name, err)
						return
					}
					resp.Body.Close()
					mu.Lock()
					statuses[resp.StatusCode]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return statuses
}

// BenchmarkPeakRSS reports the real sidecar's peak resident memory
// (peak-RSS-MiB) under issue 31's costly writes, each kind from several
// clients at once and then all kinds together, and fails past 512 MiB.
// Each iteration starts a fresh arcstore with the shipped defaults:
//
//	go test -run '^$' -bench BenchmarkPeakRSS -benchtime 1x ./internal/e2e/
func BenchmarkPeakRSS(b *testing.B) {
	writes := costlyWrites(b)
	cases := make(map[string][]costlyWrite)
	var names []string
	for _, w := range writes {
		names = append(names, w.name)
		cases[w.name] = []costlyWrite{w}
	}
	names = append(names, "mixed")
	for _, w := range writes {
		w.clients = 2
		cases["mixed"] = append(cases["mixed"], w)
	}
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			var peak int64
			for range b.N {
				dir := b.TempDir()
				sc := startSidecar(b, filepath.Join(dir, "data"), addr(freePort(b)), addr(freePort(b)))
				statuses := sendAll(b, "http://"+sc.http, cases[name], 2)
				peak = max(peak, peakRSS(b, sc.cmd.Process.Pid))
				sc.kill()
				b.Logf("%s: answers %v, peak RSS %d MiB", name, statuses, peak>>20)
				for _, w := range cases[name] {
					b.Logf("%s: %d-byte body", w.name, len(w.body))
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
			if peak >= maxRSS {
				b.Errorf("peak RSS %d MiB, the promise is under %d MiB", peak>>20, maxRSS>>20)
			}
		})
	}
}
