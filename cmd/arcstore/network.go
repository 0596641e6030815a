package main

import (
	"log/slog"
	"math"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"

	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
)

// Network limits. A client that sends its headers slower than this, or
// never, is cut off: otherwise each one holds a connection and a goroutine
// for good.
const httpReadHeaderTimeout = 10 * time.Second

// Defaults of the network flags. The read timeout covers a whole request
// body (32 MiB at -max-body-bytes' default, over a slow link). The stream
// cap must stay above what one collector keeps open: the exporter holds a
// long-lived stream per table and queue consumer (4 x 16 by default), and
// a stream past the cap waits for another to end, which an idle pooled
// stream does only after a minute.
const (
	defaultHTTPReadTimeout = 2 * time.Minute
	defaultHTTPIdleTimeout = 2 * time.Minute
	defaultMaxGRPCStreams  = 256
)

// newHTTPServer is the HTTP listener's server with its timeouts. There is
// no write timeout: an answer waits for the WAL fsync, and POST
// /admin/compact for a whole compaction.
func newHTTPServer(c config, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpReadHeaderTimeout,
		ReadTimeout:       c.httpReadTimeout,
		IdleTimeout:       c.httpIdleTimeout,
	}
}

// httpRoutes are the HTTP listener's endpoints. A write's body has the
// read timeout to arrive from when there is room to receive it (the wait
// for room does not count), as the rest of a request has from its start.
func httpRoutes(c config, store *storage.Store, ready []receiver.ReadyCheck, metrics *receiver.Metrics,
	tokens *receiver.Tokens, mem memory.Allocator, log *slog.Logger,
) *http.ServeMux {
	mux := http.NewServeMux()
	receiver.HandleHealth(mux, store, ready...)
	mux.Handle("GET "+receiver.PathMetrics, metrics.Handler())
	mux.Handle("POST "+receiver.PathCompact, tokens.RequireHTTP(&receiver.CompactHandler{Store: store, Log: log}))
	receiver.HandleWrites(mux, &receiver.MsgpackHandler{
		Store: store, Log: log, Mem: mem, MaxBodyBytes: c.maxBody, MaxDecodedBytes: c.maxDecoded,
		MaxDecodedMemory: c.maxDecodedMemory, Limits: c.limits, Metrics: metrics,
		BodyReadTimeout: c.httpReadTimeout,
	}, tokens)
	return mux
}

// grpcLimits caps the concurrent streams of each client connection: every
// open stream can hold a batch of up to the message size in memory.
func grpcLimits(c config) []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxConcurrentStreams(uint32(min(c.maxGRPCStreams, math.MaxUint32)))}
}

// warnExposed says loudly when a listener other hosts can reach takes
// writes without a token: anyone who reaches it can write (and, on HTTP,
// run compactions).
func warnExposed(log *slog.Logger, c config, auth bool) {
	if auth {
		return
	}
	for _, l := range []struct{ name, flag, addr string }{
		{"Arrow Flight (gRPC)", "-grpc-addr", c.grpcAddr},
		{"HTTP", "-http-addr", c.httpAddr},
	} {
		if isLoopback(l.addr) {
			continue
		}
		log.Warn("UNAUTHENTICATED WRITES FROM THE NETWORK: the "+l.name+" listener is on a non-loopback address and no token is set; "+
			"anyone who can reach it can write. Set -auth-token-file or $"+tokenEnv+", or listen on 127.0.0.1 ("+l.flag+")",
			"listener", l.name, "addr", l.addr)
	}
}

// isLoopback reports whether a listen address only takes connections from
// this host: a Unix socket, a loopback IP or localhost. An empty host,
// 0.0.0.0, :: or any other name listens on the network.
func isLoopback(addr string) bool {
	if strings.HasPrefix(addr, unixPrefix) {
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
