package receiver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// lowDisk is a data directory's file system whose free space the test
// sets; it starts with plenty.
type lowDisk struct{ free atomic.Int64 }

func (d *lowDisk) options(o *storage.Options) {
	d.free.Store(10 << 30)
	o.MinFreeDisk = 100 << 20
	o.DiskFree = func(string) (int64, error) { return d.free.Load(), nil }
	o.BufferWait = 50 * time.Millisecond
}

// TestNearlyFullDisk: below -min-free-disk every write API answers its
// retryable "unavailable" (503 with Retry-After, gRPC UNAVAILABLE) saying
// why, /ready answers 503 with the reason and the free-space gauge shows
// it; all of it clears by itself when space returns.
func TestNearlyFullDisk(t *testing.T) {
	disk := &lowDisk{}
	f := newFixture(t, disk.options)
	mux := http.NewServeMux()
	mux.Handle("/", NewHTTPHandler(f.store))
	mux.Handle("GET "+PathMetrics, f.metrics.Handler())
	HandleWrites(mux, &MsgpackHandler{Store: f.store, Log: quiet, Mem: memory.DefaultAllocator}, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	line := func(path string) (int, http.Header, string) {
		t.Helper()
		body := fmt.Sprintf("cpu,host=a usage=1.5 %d\n", time.Now().Add(-time.Minute).UnixNano())
		resp, err := http.Post(srv.URL+path, "text/plain", bytes.NewReader([]byte(body)))
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(raw)
	}
	ready := func() (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + PathReady)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(raw)
	}
	rec, _ := storagetest.LogBatch(t, "a", t0)
	defer rec.Release()

	code, _ := ready()
	require.Equal(t, http.StatusOK, code)
	disk.free.Store(40 << 20)

	code, body := ready()
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "writes refused: the disk is nearly full: 40 MiB free on the file system of "+f.dir+", under the 100 MiB kept for flushes (-min-free-disk)")
	for _, path := range []string{PathWriteLineProtocol, PathWriteInfluxV1, PathWriteInfluxV2 + "?bucket=b"} {
		code, header, body := line(path)
		assert.Equal(t, http.StatusServiceUnavailable, code, path)
		assert.Equal(t, "1", header.Get("Retry-After"), path)
		var msg map[string]string
		require.NoError(t, json.Unmarshal([]byte(body), &msg), body)
		assert.Contains(t, body, "the disk is nearly full", path)
	}
	_, err := f.put(t, arcflight.Descriptor("default", "logs"), rec)
	assert.Equal(t, codes.Unavailable, status.Code(err), "the exporter retries it: %v", err)
	assert.Contains(t, status.Convert(err).Message(), "the disk is nearly full")
	fams := scrapeMetrics(t, f.metrics)
	assert.Equal(t, float64(40<<20), value(fams, "arcstore_disk_free_bytes", nil))
	assert.Equal(t, float64(100<<20), value(fams, "arcstore_disk_min_free_bytes", nil))

	disk.free.Store(1 << 30)
	code, _ = ready()
	assert.Equal(t, http.StatusOK, code)
	code, _, body = line(PathWriteLineProtocol)
	assert.Equal(t, http.StatusNoContent, code, body)
	_, err = f.put(t, arcflight.Descriptor("default", "logs"), rec)
	require.NoError(t, err)
}
