package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"

	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
)

// TestHTTPServerCutsOffSlowClients: without read and idle timeouts a
// client that stalls in the middle of a body, or keeps a connection open
// and idle, holds it (and a goroutine) for good.
func TestHTTPServerCutsOffSlowClients(t *testing.T) {
	c, err := parseFlags([]string{"-http-read-timeout", "100ms", "-http-idle-timeout", "100ms"})
	require.NoError(t, err)
	hs := newHTTPServer(c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go hs.Serve(lis)
	defer hs.Close()
	for _, tt := range []struct{ name, send string }{
		{"stalled body", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly a few bytes"},
		{"idle keep-alive", "GET / HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", lis.Addr().String())
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write([]byte(tt.send))
			require.NoError(t, err)
			// The bound only keeps a broken server from hanging the test;
			// the server closes the connection long before it.
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			_, err = io.Copy(io.Discard, conn)
			var ne net.Error
			assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the server closed the connection: %v", err)
		})
	}
}

// TestGRPCStreamCap reads the HTTP/2 settings the Flight server sends:
// without the cap a client may open any number of streams, each holding a
// batch in memory.
func TestGRPCStreamCap(t *testing.T) {
	c, err := parseFlags([]string{"-max-grpc-streams", "7"})
	require.NoError(t, err)
	gs := grpc.NewServer(grpcLimits(c)...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go gs.Serve(lis)
	defer gs.Stop()
	conn, err := net.Dial("tcp", lis.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(time.Minute)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, bufio.NewReader(conn))
	require.NoError(t, fr.WriteSettings())
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			v, ok := sf.Value(http2.SettingMaxConcurrentStreams)
			assert.True(t, ok, "the server announces a stream cap")
			assert.EqualValues(t, 7, v)
			return
		}
	}
}

func TestWarnExposed(t *testing.T) {
	for _, tt := range []struct {
		name       string
		grpc, http string
		auth       bool
		warnings   int
	}{
		{"loopback", "127.0.0.1:8815", "127.0.0.1:8000", false, 0},
		{"localhost and ::1", "localhost:8815", "[::1]:8000", false, 0},
		{"every interface, no token (the container image)", "0.0.0.0:8815", ":8000", false, 2},
		{"one on the network", "127.0.0.1:8815", "10.0.0.5:8000", false, 1},
		{"a host name", "arcstore:8815", "127.0.0.1:8000", false, 1},
		{"every interface with a token", "0.0.0.0:8815", "0.0.0.0:8000", true, 0},
		{"a unix socket", "unix:///run/arcstore/arcstore.sock", "127.0.0.1:8000", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			warnExposed(slog.New(slog.NewTextHandler(&buf, nil)), config{grpcAddr: tt.grpc, httpAddr: tt.http}, tt.auth)
			assert.Equal(t, tt.warnings, strings.Count(buf.String(), "UNAUTHENTICATED WRITES FROM THE NETWORK"), buf.String())
			if tt.warnings > 0 {
				assert.Contains(t, buf.String(), "level=WARN")
				assert.Contains(t, buf.String(), tokenEnv)
			}
		})
	}
}

// startRoutes serves httpRoutes, as the sidecar does, with the flags args.
func startRoutes(t *testing.T, args ...string) string {
	t.Helper()
	c, err := parseFlags(args)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := storage.Open(storage.Options{DataDir: t.TempDir(), Logger: quiet, FlushInterval: time.Hour})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	hs := newHTTPServer(c, httpRoutes(c, store, nil, receiver.NewMetrics(), nil, memory.DefaultAllocator, quiet))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go hs.Serve(lis)
	t.Cleanup(func() { hs.Close() })
	return lis.Addr().String()
}

// TestWriteBodyTakesTheReadTimeout: a write whose body stalls is cut off
// at -http-read-timeout, as any other request is (a fixed 30 s deadline
// of the write handlers replaced the server's, longer or shorter).
func TestWriteBodyTakesTheReadTimeout(t *testing.T) {
	addr := startRoutes(t, "-http-read-timeout", "500ms")
	for _, path := range []string{receiver.PathWriteInfluxV1, receiver.PathWriteMsgpack} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer conn.Close()
			_, err = conn.Write([]byte("POST " + path + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nm v=1"))
			require.NoError(t, err)
			// The server cuts the body off long before this bound.
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			answer, err := io.ReadAll(conn)
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "the body was not cut off at the read timeout: %v", err)
			// Not bad input, which InfluxDB clients and Telegraf drop:
			// a slow link, to retry.
			assert.Contains(t, string(answer), "503 Service Unavailable")
			assert.Contains(t, string(answer), "Retry-After: 1")
			assert.Contains(t, string(answer), "did not arrive within 500ms")
		})
	}
}

// TestWrongMethodIs405: a write, health or admin endpoint called with
// the wrong method is answered 405 with the methods it takes, not 404 as
// if the path did not exist.
func TestWrongMethodIs405(t *testing.T) {
	addr := startRoutes(t)
	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodGet, receiver.PathWriteInfluxV1, "POST"},
		{http.MethodPut, receiver.PathWriteInfluxV2, "POST"},
		{http.MethodGet, receiver.PathWriteLineProtocol, "POST"},
		{http.MethodGet, receiver.PathWriteMsgpack, "POST"},
		{http.MethodGet, receiver.PathCompact, "POST"},
		{http.MethodPost, receiver.PathHealth, "GET, HEAD"},
		{http.MethodPost, receiver.PathReady, "GET, HEAD"},
		{http.MethodPost, receiver.PathMetrics, "GET, HEAD"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, "http://"+addr+tt.path, strings.NewReader("m v=1"))
			require.NoError(t, err)
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
			assert.Equal(t, tt.allow, resp.Header.Get("Allow"))
		})
	}
	resp, err := http.Get("http://" + addr + "/api/v1/write/nothing")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
