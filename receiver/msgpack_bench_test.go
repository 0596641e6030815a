package receiver

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"github.com/arc-otel/arc-otel/internal/benchcpu"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/storage"
)

// BenchmarkMsgpackWrite measures the whole Arc write API path of one
// request as the handler runs it: gzip decompression, MessagePack decode
// into columns, the Arrow record, the checks, the IPC encoding and the WAL
// commit (on tmpfs when there is one, so the fsync does not hide the CPU).
// The payloads are the load test's distributed_traces shape (13 columns,
// random 32-hex trace ids) and a request of its arc-logs scenario, gzip
// level 1. Flushes to Parquet are out of the measure.
func BenchmarkMsgpackWrite(b *testing.B) {
	for _, rows := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("traces/rows=%d", rows), func(b *testing.B) {
			benchWrite(b, gzipped(b, payload(b, arcTraces(rows, rand.New(rand.NewPCG(1, 2))))), rows)
		})
	}
	b.Run("logs/rows=1000", func(b *testing.B) { benchWrite(b, arcLogsGzip(b), 1000) })
}

// arcLogsGzip reads a request of the load test's arc-logs scenario as its
// driver sends them (every row new, gzip level 1; arcmsgpack's testdata).
func arcLogsGzip(b *testing.B) []byte {
	body, err := os.ReadFile("../internal/arcmsgpack/testdata/arc_logs_1000.msgpack.gz")
	require.NoError(b, err)
	return body
}

func benchWrite(b *testing.B, body []byte, rows int) {
	dir := benchDir(b)
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour,
		MaxBufferBytes: 1 << 40, FlushBytes: 1 << 40})
	require.NoError(b, err)
	defer store.Close()
	h := &MsgpackHandler{Store: store, Log: quiet, Mem: memory.DefaultAllocator}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	n := 0
	cpu := benchcpu.Process()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, PathWriteMsgpack, bytes.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusNoContent {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
		if n++; n%64 == 0 {
			b.StopTimer()
			require.NoError(b, store.Flush())
			b.StartTimer()
		}
	}
	reportRows(b, rows, cpu)
}

// BenchmarkMsgpackDecode is the decoding part of BenchmarkMsgpackWrite
// alone (no gzip, no store), on the same bodies: the share gzip leaves to
// the decoder.
func BenchmarkMsgpackDecode(b *testing.B) {
	for _, rows := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("traces/rows=%d", rows), func(b *testing.B) {
			benchDecode(b, payload(b, arcTraces(rows, rand.New(rand.NewPCG(1, 2)))), rows)
		})
	}
	b.Run("logs/rows=1000", func(b *testing.B) {
		r, err := gzip.NewReader(bytes.NewReader(arcLogsGzip(b)))
		require.NoError(b, err)
		body, err := io.ReadAll(r)
		require.NoError(b, err)
		benchDecode(b, body, 1000)
	})
}

func benchDecode(b *testing.B, body []byte, rows int) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	cpu := benchcpu.Process()
	for b.Loop() {
		if _, err := arcmsgpack.DecodeWithin(body, arcmsgpack.NewBudget(0)); err != nil {
			b.Fatal(err)
		}
	}
	reportRows(b, rows, cpu)
}

// reportRows reports ns/row of wall time and cpu-ns/row of the process's
// CPU time since cpu (the flushes between requests included): on a shared
// machine it moves far less than wall time, since waiting for a core is
// not counted.
func reportRows(b *testing.B, rows int, cpu time.Duration) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/float64(b.N*rows), "cpu-ns/row")
}

// benchDir is a data directory on tmpfs when the machine has one.
func benchDir(b *testing.B) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "arcbench")
		require.NoError(b, err)
		b.Cleanup(func() { _ = os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

// arcTraces is a distributed_traces payload as loadtest's Arc driver makes
// it.
func arcTraces(n int, r *rand.Rand) map[string]any {
	hex := func() string { return fmt.Sprintf("%016x", r.Uint64()) }
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	now := time.Now().UnixMilli()
	cols := map[string]any{}
	strs := func(name string, f func() string) {
		v := make([]string, n)
		for i := range v {
			v[i] = f()
		}
		cols[name] = v
	}
	ints := func(name string, f func(i int) int64) {
		v := make([]int64, n)
		for i := range v {
			v[i] = f(i)
		}
		cols[name] = v
	}
	services := strings.Fields("api-gateway auth-service user-service order-service payment-service inventory-service")
	methods := strings.Fields("GET POST PUT DELETE")
	ints("time", func(i int) int64 { return now - int64(i%1000) })
	strs("trace_id", func() string { return hex() + hex() })
	strs("span_id", hex)
	strs("parent_span_id", func() string {
		if r.IntN(10) < 3 {
			return hex()
		}
		return ""
	})
	strs("service_name", func() string { return pick(services...) })
	strs("operation_name", func() string { return pick(methods...) + " /api" })
	strs("span_kind", func() string { return pick("server", "client", "internal") })
	ints("duration_ns", func(int) int64 { return int64(r.IntN(500_000_000)) })
	ints("status_code", func(int) int64 { return []int64{200, 200, 201, 404, 500}[r.IntN(5)] })
	strs("http_method", func() string { return pick(methods...) })
	strs("environment", func() string { return pick("production", "staging", "development") })
	strs("region", func() string { return pick("us-east-1", "us-west-2", "eu-west-1", "ap-southeast-1") })
	errs := make([]bool, n)
	for i := range errs {
		errs[i] = r.IntN(50) == 0
	}
	cols["error"] = errs
	return map[string]any{"m": "distributed_traces", "columns": cols}
}
