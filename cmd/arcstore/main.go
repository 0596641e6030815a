// Command arcstore is the storage sidecar: it takes Arrow record batches
// from the arc exporter over Arrow Flight, makes them durable in a
// write-ahead log before acknowledging, and writes hive-partitioned Parquet.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
)

type config struct {
	dataDir        string
	grpcAddr       string
	httpAddr       string
	flushInterval  time.Duration
	compression    string
	maxBufferBytes int64
	flushBytes     int64
	logFormat      string
	logLevel       string
	shutdownWait   time.Duration
	tokenFile      string
	tlsCert        string
	tlsKey         string
	maxBody        int64
	maxDecoded     int64
	memoryLimit    int64
	compactEvery   time.Duration
	compactMinAge  time.Duration
	compactSort    bool
	retention      storage.Retention

	clickhouseAddr   string
	clickhouseConfig string
	parquet          bool
	maxWALBytes      int64
}

// defaultMemoryLimit keeps the sidecar's resident memory under 512 MiB with
// room for the runtime's own overhead.
const defaultMemoryLimit = 448 << 20

// tokenEnv holds comma-separated bearer tokens, for deployments that pass
// secrets in the environment.
const tokenEnv = "ARCSTORE_AUTH_TOKENS"

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("arcstore", flag.ContinueOnError)
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the WAL and the Parquet files")
	fs.StringVar(&c.grpcAddr, "grpc-addr", "127.0.0.1:8815", "Arrow Flight (gRPC) listen address")
	fs.StringVar(&c.httpAddr, "http-addr", "127.0.0.1:8000", "HTTP listen address (/health, /ready, /metrics, /api/v1/write/msgpack)")
	fs.DurationVar(&c.flushInterval, "flush-interval", storage.DefaultFlushInterval, "longest time an acknowledged row waits before it is in Parquet")
	fs.StringVar(&c.compression, "compression", "zstd", "Parquet compression: zstd, snappy or none")
	fs.Int64Var(&c.flushBytes, "flush-bytes", storage.DefaultFlushBytes, "flush early once this many bytes are buffered")
	fs.Int64Var(&c.maxBufferBytes, "max-buffer-bytes", storage.DefaultMaxBufferBytes, "buffered bytes past which writes are refused with RESOURCE_EXHAUSTED")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&c.shutdownWait, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for the batches being stored (every stream ends after its current batch) before closing the streams")
	fs.StringVar(&c.tokenFile, "auth-token-file", "", "file of bearer tokens, one per line; with it (or $"+tokenEnv+") every write needs one")
	fs.StringVar(&c.tlsCert, "tls-cert-file", "", "TLS certificate (PEM) for both listeners")
	fs.StringVar(&c.tlsKey, "tls-key-file", "", "TLS private key (PEM) for both listeners")
	fs.DurationVar(&c.compactEvery, "compact-interval", 15*time.Minute, "how often retention and compaction run; 0 turns both off (POST /admin/compact still works)")
	fs.DurationVar(&c.compactMinAge, "compact-min-age", 10*time.Minute, "compact a partition once its hour has ended this long ago")
	fs.BoolVar(&c.compactSort, "compact-sort", false, "sort compacted rows by the table's sort columns (service, time; about 5x slower compaction, see docs/PERFORMANCE.md)")
	retention := fs.String("retention", "", "delete partitions older than this: 720h for every table, or default/traces=168h,*/*=720h")
	fs.Int64Var(&c.memoryLimit, "memory-limit", defaultMemoryLimit, "soft limit of the Go heap (the GC works harder near it; $GOMEMLIMIT overrides); keep -max-buffer-bytes well under it")
	fs.Int64Var(&c.maxBody, "max-body-bytes", receiver.DefaultMaxBodyBytes, "largest MessagePack write request body, as sent (413 past it)")
	fs.Int64Var(&c.maxDecoded, "max-decoded-bytes", receiver.DefaultMaxDecodedBytes, "largest MessagePack write body after gzip/zstd decompression (413 past it)")
	fs.StringVar(&c.clickhouseAddr, "clickhouse-addr", "", "also write every acknowledged row to ClickHouse at HOST:PORT (native protocol, 9000); the WAL keeps rows until ClickHouse has them")
	fs.StringVar(&c.clickhouseConfig, "clickhouse-config", "", "YAML file of ClickHouse settings: database, user, password(_file), tls, cluster, ttl, compression (see README)")
	fs.BoolVar(&c.parquet, "parquet", true, "write Parquet files; -parquet=false with -clickhouse-addr makes ClickHouse the only storage")
	fs.Int64Var(&c.maxWALBytes, "max-wal-bytes", storage.DefaultMaxWALBytes, "WAL bytes on disk past which writes are refused with RESOURCE_EXHAUSTED (a sink that is down holds the WAL)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var err error
	if c.retention, err = storage.ParseRetention(*retention); err != nil {
		return c, fmt.Errorf("-retention: %w", err)
	}
	if c.maxBufferBytes > 0 && c.memoryLimit > 0 && c.maxBufferBytes > c.memoryLimit/2 {
		return c, fmt.Errorf("-max-buffer-bytes %d is over half of -memory-limit %d: buffered batches and the flush that encodes them must both fit", c.maxBufferBytes, c.memoryLimit)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return c, errors.New("-tls-cert-file and -tls-key-file go together")
	}
	if c.clickhouseConfig != "" && c.clickhouseAddr == "" {
		return c, errClickHouseConfigWithoutAddr
	}
	if !c.parquet && c.clickhouseAddr == "" {
		return c, errNoStorage
	}
	return c, nil
}

func newLogger(c config) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("-log-format %q: want text or json", c.logFormat)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "compact" {
		os.Exit(compactCommand(os.Args[2:]))
	}
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcstore:", err)
		os.Exit(2)
	}
	log, err := newLogger(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcstore:", err)
		os.Exit(2)
	}
	if err := run(c, log); err != nil {
		log.Error("arcstore stopped", "error", err)
		os.Exit(1)
	}
}

func run(c config, log *slog.Logger) error {
	if os.Getenv("GOMEMLIMIT") == "" && c.memoryLimit > 0 {
		debug.SetMemoryLimit(c.memoryLimit)
	}
	tokens, err := receiver.LoadTokens(c.tokenFile, os.Getenv(tokenEnv))
	if err != nil {
		return err
	}
	var tlsConfig *tls.Config
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("load TLS key pair: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	mem := memory.DefaultAllocator
	metrics := receiver.NewMetrics()
	var sinks []storage.Sink
	chSink, err := clickhouseSink(c, log)
	if err != nil {
		return err
	}
	if chSink != nil {
		sinks = append(sinks, chSink)
	}
	store, err := storage.Open(storage.Options{
		Sinks:           sinks,
		NoParquet:       !c.parquet,
		MaxWALBytes:     c.maxWALBytes,
		Observer:        metrics,
		DataDir:         c.dataDir,
		Compression:     c.compression,
		FlushInterval:   c.flushInterval,
		FlushBytes:      c.flushBytes,
		MaxBufferBytes:  c.maxBufferBytes,
		CompactInterval: c.compactEvery,
		CompactMinAge:   c.compactMinAge,
		CompactSort:     c.compactSort,
		Retention:       c.retention,
		Logger:          log,
		Allocator:       mem,
	})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	metrics.WatchStore(store)
	grpcLis, err := net.Listen("tcp", c.grpcAddr)
	if err != nil {
		store.Close()
		return fmt.Errorf("listen grpc: %w", err)
	}
	httpLis, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		grpcLis.Close()
		store.Close()
		return fmt.Errorf("listen http: %w", err)
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(64 << 20),
		grpc.ChainStreamInterceptor(tokens.StreamInterceptor()),
		grpc.ChainUnaryInterceptor(tokens.UnaryInterceptor()),
	}
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
		httpLis = tls.NewListener(httpLis, tlsConfig)
	}
	gs := grpc.NewServer(opts...)
	flightServer := &receiver.FlightServer{Store: store, Log: log, Mem: mem, Metrics: metrics}
	flight.RegisterFlightServiceServer(gs, flightServer)
	mux := http.NewServeMux()
	mux.Handle("/", receiver.NewHTTPHandler(store))
	mux.Handle("GET "+receiver.PathMetrics, metrics.Handler())
	mux.Handle("POST "+receiver.PathCompact, tokens.RequireHTTP(&receiver.CompactHandler{Store: store, Log: log}))
	mux.Handle("POST "+receiver.PathWriteMsgpack, tokens.RequireHTTP(&receiver.MsgpackHandler{
		Store: store, Log: log, Mem: mem, MaxBodyBytes: c.maxBody, MaxDecodedBytes: c.maxDecoded, Metrics: metrics,
	}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(grpcLis) }()
	go func() { errc <- hs.Serve(httpLis) }()
	log.Info("arcstore ready", "data_dir", c.dataDir, "grpc", grpcLis.Addr().String(), "http", httpLis.Addr().String(),
		"tls", tlsConfig != nil, "auth", tokens.Enabled(), "parquet", c.parquet, "clickhouse", c.clickhouseAddr)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Info("shutting down: flushing every buffered row", "signal", s.String())
	case err := <-errc:
		log.Error("server failed; shutting down", "error", err)
	}
	return shutdown(c, log, gs, flightServer.Drain, hs, store)
}

// shutdown stops taking batches, waits for open streams up to a deadline,
// then flushes everything buffered to Parquet.
func shutdown(c config, log *slog.Logger, gs *grpc.Server, drain func(), hs *http.Server, store *storage.Store) error {
	done := make(chan struct{})
	drain() // exporters keep streams open between pushes: end them
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(c.shutdownWait):
		log.Warn("open streams did not finish in time; closing them", "timeout", c.shutdownWait)
		gs.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(ctx)
	if err := store.Close(); err != nil {
		return fmt.Errorf("final flush: %w (the rows stay in the WAL and replay on the next start)", err)
	}
	log.Info("arcstore stopped cleanly")
	return nil
}
