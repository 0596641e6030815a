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

	"github.com/arc-otel/arc-otel/internal/arcmsgpack"
	"github.com/arc-otel/arc-otel/receiver"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/iceberg"
	"github.com/arc-otel/arc-otel/storage/upload"
	"github.com/arc-otel/arc-otel/storage/wal"
)

type config struct {
	dataDir        string
	grpcAddr       string
	grpc           listenAddr // -grpc-addr parsed
	httpAddr       string
	flushInterval  time.Duration
	compression    string
	maxBufferBytes int64
	bufferWait     time.Duration
	flushBytes     int64
	flushWorkers   int
	logFormat      string
	logLevel       string
	shutdownWait   time.Duration
	tokenFile      string
	tlsCert        string
	tlsKey         string
	maxBody        int64
	maxDecoded     int64
	limits         storage.Limits
	memoryLimit    int64
	compactEvery   time.Duration
	compactMinAge  time.Duration
	compactSort    bool
	retention      storage.Retention

	clickhouseAddr   string
	clickhouseConfig string
	parquet          bool
	maxWALBytes      int64
	minFreeDisk      int64
	walRepair        bool
	dedupWindow      time.Duration

	s3      s3Flags
	iceberg icebergFlags

	httpReadTimeout time.Duration
	httpIdleTimeout time.Duration
	maxGRPCStreams  uint

	maxDecodedMemory int64 // -max-decoded-memory

	pprofAddr       string
	pprofContention bool // -pprof-contention
	showVersion     bool
}

// defaultMemoryLimit keeps the sidecar's resident memory under 512 MiB with
// room for what the limit does not count: resident memory ran 40-55 MiB
// over it (the binary's pages, memory freed but not yet returned), so
// 448 MiB left peaks of 500 MiB at 8 and 16 Arc-protocol writers; 384 MiB
// holds them at 437-439 MiB for the same CPU per row
// (docs/PERFORMANCE.md#against-the-targets).
const defaultMemoryLimit = 384 << 20

// tokenEnv holds comma-separated bearer tokens, for deployments that pass
// secrets in the environment.
const tokenEnv = "ARCSTORE_AUTH_TOKENS"

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("arcstore", flag.ContinueOnError)
	fs.StringVar(&c.dataDir, "data-dir", "./data", "directory for the WAL and the Parquet files")
	fs.StringVar(&c.grpcAddr, "grpc-addr", "127.0.0.1:8815", "Arrow Flight (gRPC) listen address: host:port, or a Unix socket unix:///path/to.sock (for a collector on the same host)")
	fs.StringVar(&c.httpAddr, "http-addr", "127.0.0.1:8000", "HTTP listen address (/health, /ready, /metrics, /api/v1/write/msgpack, line protocol on /api/v1/write/line-protocol, /write, /api/v2/write)")
	fs.DurationVar(&c.flushInterval, "flush-interval", storage.DefaultFlushInterval, "longest time an acknowledged row waits before it is in Parquet")
	fs.StringVar(&c.compression, "compression", "zstd", "Parquet compression: zstd, snappy or none")
	sizeVar(fs, &c.flushBytes, "flush-bytes", storage.DefaultFlushBytes, "flush early once this `size` is buffered (bytes, or with a unit: KiB, MiB, GiB, KB, MB, GB)")
	fs.IntVar(&c.flushWorkers, "flush-workers", 2, "goroutines a flush may encode a Parquet file's columns on when writers waited for buffer room since the previous flush began or wait now, at most one per CPU and 4 (1: always one column after the other)")
	sizeVar(fs, &c.maxBufferBytes, "max-buffer-bytes", storage.DefaultMaxBufferBytes, "buffered `size` past which writes wait (-buffer-wait) for a flush to make room, then are refused with RESOURCE_EXHAUSTED (429)")
	fs.DurationVar(&c.bufferWait, "buffer-wait", storage.DefaultBufferWait, "how long a write that finds the buffer full waits for a flush to make room before it is refused; 0 refuses at once")
	fs.StringVar(&c.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.DurationVar(&c.shutdownWait, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for the batches being stored (every stream ends after its current batch) before closing the streams; 0 closes them at once")
	fs.StringVar(&c.tokenFile, "auth-token-file", "", "file of bearer tokens, one per line; with it (or $"+tokenEnv+") every write needs one")
	fs.StringVar(&c.tlsCert, "tls-cert-file", "", "TLS certificate (PEM) for both listeners")
	fs.StringVar(&c.tlsKey, "tls-key-file", "", "TLS private key (PEM) for both listeners")
	fs.DurationVar(&c.compactEvery, "compact-interval", 15*time.Minute, "how often retention and compaction run; 0 turns both off (POST /admin/compact still works)")
	fs.DurationVar(&c.compactMinAge, "compact-min-age", 10*time.Minute, "compact a partition once its hour has ended this long ago (0: as soon as it has ended)")
	fs.BoolVar(&c.compactSort, "compact-sort", false, "sort compacted OTLP rows by the table's sort columns (service, time; about 5x slower compaction, see docs/PERFORMANCE.md); measurements are always ordered by time")
	retention := fs.String("retention", "", "delete partitions older than this: 720h for every table, or default/traces=168h,*/*=720h; with -s3-bucket only once verified in the bucket")
	sizeVar(fs, &c.memoryLimit, "memory-limit", defaultMemoryLimit, "soft limit (a `size`) of the Go heap (the GC works harder near it; $GOMEMLIMIT overrides); keep -max-buffer-bytes well under it; 0 sets no limit")
	sizeVar(fs, &c.maxBody, "max-body-bytes", receiver.DefaultMaxBodyBytes, "largest Arc write request body (a `size`: MessagePack or line protocol), as sent (413 past it)")
	sizeVar(fs, &c.maxDecoded, "max-decoded-bytes", receiver.DefaultMaxDecodedBytes, "largest Arc write request body (a `size`: MessagePack or line protocol) after gzip/zstd decompression (413 past it)")
	fs.DurationVar(&c.httpReadTimeout, "http-read-timeout", defaultHTTPReadTimeout, "longest time to read one HTTP request, body included; a slower client is cut off")
	fs.DurationVar(&c.httpIdleTimeout, "http-idle-timeout", defaultHTTPIdleTimeout, "how long an idle HTTP keep-alive connection stays open")
	fs.UintVar(&c.maxGRPCStreams, "max-grpc-streams", defaultMaxGRPCStreams, "most concurrent Arrow Flight streams per client connection (each can hold a batch in memory)")
	fs.IntVar(&c.limits.MaxColumns, "max-columns", storage.DefaultMaxColumns, "most columns of one measurement in an Arc-protocol write, time included (413 past it)")
	fs.IntVar(&c.limits.MaxStringBytes, "max-string-bytes", storage.DefaultMaxStringBytes, "largest string value in an Arc-protocol write (413 past it)")
	fs.IntVar(&c.limits.MaxPartitionsPerRequest, "max-partitions-per-request", storage.DefaultMaxPartitionsPerRequest, "most partitions (table and UTC hour) one Arc-protocol write may touch (413 past it)")
	sizeVar(fs, &c.maxDecodedMemory, "max-decoded-memory", arcmsgpack.DefaultMaxBytes, "most memory (a `size`) one write request's decoded columns may take (MessagePack and line protocol), charged before each allocation (413 past it)")
	fs.StringVar(&c.clickhouseAddr, "clickhouse-addr", "", "also write every acknowledged row to ClickHouse at HOST:PORT (native protocol, 9000); the WAL keeps rows until ClickHouse has them")
	fs.StringVar(&c.clickhouseConfig, "clickhouse-config", "", "YAML file of ClickHouse settings: database, user, password(_file), tls, cluster, ttl, compression (see docs/CLICKHOUSE.md)")
	fs.BoolVar(&c.parquet, "parquet", true, "write Parquet files; -parquet=false with -clickhouse-addr makes ClickHouse the only storage")
	sizeVar(fs, &c.maxWALBytes, "max-wal-bytes", storage.DefaultMaxWALBytes, "WAL `size` (bytes of records; the directory takes up to twice that plus two reused segment files) past which writes are refused with RESOURCE_EXHAUSTED (a sink that is down holds the WAL)")
	sizeVar(fs, &c.minFreeDisk, "min-free-disk", storage.DefaultMinFreeDisk, "free `size` kept on the data directory's file system for flushes: below it writes wait (-buffer-wait) for a flush, then are refused with UNAVAILABLE (503) and /ready says why, until space returns; 0 keeps no floor")
	c.s3.register(fs)
	c.iceberg.register(fs)
	fs.BoolVar(&c.walRepair, "wal-repair", false, walRepairUsage)
	fs.DurationVar(&c.dedupWindow, "dedup-window", storage.DefaultDedupWindow, "how long the batch ID of a stored batch is remembered so that a retry of it is not stored again, counted in the sidecar's running time")
	fs.StringVar(&c.pprofAddr, "pprof-addr", "", "serve net/http/pprof on this `address`, e.g. 127.0.0.1:6060 (off by default; unauthenticated: keep it on loopback)")
	fs.BoolVar(&c.pprofContention, "pprof-contention", false, "with -pprof-addr, record block and mutex profiles (/debug/pprof/block, /debug/pprof/mutex); off by default: sampling costs CPU on every wait")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if err := checkFloors(fs, flagFloors); err != nil {
		return c, err
	}
	var err error
	if c.grpc, err = parseGRPCAddr(c.grpcAddr); err != nil {
		return c, err
	}
	if c.retention, err = storage.ParseRetention(*retention); err != nil {
		return c, fmt.Errorf("-retention: %w", err)
	}
	if c.maxBufferBytes > 0 && c.memoryLimit > 0 && c.maxBufferBytes > c.memoryLimit/2 {
		return c, fmt.Errorf("-max-buffer-bytes %s is over half of -memory-limit %s: buffered batches and the flush that encodes them must both fit", formatSize(c.maxBufferBytes), formatSize(c.memoryLimit))
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
	if err := c.s3.check(c.parquet); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := c.iceberg.check(set, c.parquet, c.s3.bucket != ""); err != nil {
		return c, err
	}
	return c, nil
}

// bufferWait is the store's BufferWait for -buffer-wait: the flag's 0
// (refuse at once) is the store's negative value, its 0 being the default.
func bufferWait(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// minFreeDisk is the store's MinFreeDisk for -min-free-disk: the flag's 0
// (no floor) is the store's negative value, its 0 being the default.
func minFreeDisk(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
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
		os.Exit(compactCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	c, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcstore:", err)
		os.Exit(2)
	}
	if c.showVersion {
		fmt.Println(versionLine())
		os.Exit(0)
	}
	log, err := newLogger(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "arcstore:", err)
		os.Exit(2)
	}
	// Libraries that log through the standard log package (iceberg-go's
	// warnings) then log through this one, in its format.
	slog.SetDefault(log)
	if err := run(c, log); err != nil {
		log.Error("arcstore stopped", "error", err)
		os.Exit(1)
	}
}

func run(c config, log *slog.Logger) error {
	procs := setProcs()
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
	committer, err := newCommitter(c, log)
	if err != nil {
		return err
	}
	var table upload.Table // a nil *Committer in it would not be nil
	if committer != nil {
		table = committer
	}
	uploader, err := newUploader(c, log, table)
	if err != nil {
		return err
	}
	var observer storage.Observer = metrics
	if uploader != nil {
		observer = uploader.Observe(metrics)
	}
	store, err := storage.Open(storage.Options{
		Sinks:           sinks,
		NoParquet:       !c.parquet,
		MaxWALBytes:     c.maxWALBytes,
		MinFreeDisk:     minFreeDisk(c.minFreeDisk),
		WALRepair:       c.walRepair,
		DedupWindow:     c.dedupWindow,
		Observer:        observer,
		DataDir:         c.dataDir,
		Compression:     c.compression,
		FlushInterval:   c.flushInterval,
		FlushBytes:      c.flushBytes,
		FlushWorkers:    c.flushWorkers,
		MaxBufferBytes:  c.maxBufferBytes,
		BufferWait:      bufferWait(c.bufferWait),
		CompactInterval: c.compactEvery,
		CompactMinAge:   c.compactMinAge,
		CompactSort:     c.compactSort,
		Retention:       storeRetention(c),
		Logger:          log,
		Allocator:       mem,
	})
	if err != nil {
		return fmt.Errorf("open store: %w", openError(err))
	}
	metrics.WatchStore(store)
	var ready []receiver.ReadyCheck
	if committer != nil {
		metrics.Register(committer.Collectors()...)
		ready = append(ready, committer.Ready)
	}
	if uploader != nil {
		metrics.Register(uploader.Collectors()...)
		ready = append(ready, uploader.Ready)
		checkBucket(uploader, c.s3.bucket, log)
	}
	grpcLis, err := listen(c.grpc)
	if err != nil {
		store.Close()
		return fmt.Errorf("listen grpc (-grpc-addr %s): %w", c.grpcAddr, err)
	}
	httpLis, err := net.Listen("tcp", c.httpAddr)
	if err != nil {
		grpcLis.Close()
		store.Close()
		return fmt.Errorf("listen http: %w", err)
	}
	if c.pprofAddr != "" {
		ps, _, err := startPprof(c.pprofAddr, log)
		if err != nil {
			httpLis.Close()
			grpcLis.Close()
			store.Close()
			return err
		}
		defer ps.Close()
		if c.pprofContention {
			recordContention()
		}
	}
	opts := append(append(grpcLimits(c), receiver.ServerOptions()...),
		grpc.MaxRecvMsgSize(64<<20),
		grpc.ChainStreamInterceptor(tokens.StreamInterceptor()),
		grpc.ChainUnaryInterceptor(tokens.UnaryInterceptor()),
	)
	if tlsConfig != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsConfig)))
		httpLis = tls.NewListener(httpLis, tlsConfig)
	}
	gs := grpc.NewServer(opts...)
	flightServer := &receiver.FlightServer{Store: store, Log: log, Mem: mem, Metrics: metrics}
	flight.RegisterFlightServiceServer(gs, flightServer)
	hs := newHTTPServer(c, httpRoutes(c, store, ready, metrics, tokens, mem, log))
	if committer != nil {
		committer.Start() // off the write path: an unreachable catalog holds no write
	}
	if uploader != nil {
		if err := uploader.Start(store); err != nil {
			if committer != nil {
				committer.Stop()
			}
			grpcLis.Close()
			httpLis.Close()
			store.Close()
			return fmt.Errorf("start uploads: %w", err)
		}
	}

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(grpcLis) }()
	go func() { errc <- hs.Serve(httpLis) }()
	log.Info("arcstore ready", "version", versionString(), "data_dir", c.dataDir, "grpc", grpcLis.Addr().String(), "http", httpLis.Addr().String(),
		"tls", tlsConfig != nil, "auth", tokens.Enabled(), "parquet", c.parquet, "clickhouse", c.clickhouseAddr, "s3_bucket", c.s3.bucket, "gomaxprocs", procs)
	warnExposed(log, c, tokens.Enabled())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		log.Info("shutting down: flushing every buffered row", "signal", s.String())
	case err := <-errc:
		log.Error("server failed; shutting down", "error", err)
	}
	return shutdown(c, log, gs, flightServer.Drain, hs, store, uploader, committer)
}

// shutdown stops taking batches, waits for open streams up to a deadline,
// then flushes everything buffered to Parquet.
func shutdown(c config, log *slog.Logger, gs *grpc.Server, drain func(), hs *http.Server, store *storage.Store, uploader *upload.Uploader, committer *iceberg.Committer) error {
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
	if uploader != nil {
		uploader.Stop() // before the store it deletes partitions through, and the tables it settles
	}
	if committer != nil {
		commitLastFlush(c, log, store, committer)
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("final flush: %w (the rows stay in the WAL and replay on the next start)", err)
	}
	log.Info("arcstore stopped cleanly")
	return nil
}

// commitLastFlush flushes and brings the tables up to date once more
// before the committer stops, so that after a clean stop a table reader
// sees what a reader of the files sees. It is bounded: an unreachable
// catalog delays the stop by at most shutdownWait, and what it misses is
// committed at the next start.
func commitLastFlush(c config, log *slog.Logger, store *storage.Store, committer *iceberg.Committer) {
	defer committer.Stop()
	if err := store.Flush(); err != nil {
		return // store.Close flushes again and says why
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.shutdownWait)
	defer cancel()
	if err := committer.Sync(ctx); err != nil {
		log.Warn("the last flush's files are not in the Iceberg tables yet; the next start commits them", "error", err)
	}
}

// walRepairUsage is the -wal-repair flag of the sidecar and of `arcstore
// compact`, which replays the same WAL.
const walRepairUsage = "start even if a WAL record is damaged: drop that record alone and log what is dropped (see docs/OPERATIONS.md); without it such a start stops with the segment and offset"

// openError adds what to do to a damaged WAL's error.
func openError(err error) error {
	if ce := (*wal.CorruptionError)(nil); errors.As(err, &ce) {
		return fmt.Errorf("%w; keep a copy of the segment, then run once with -wal-repair to drop the damaged record (docs/OPERATIONS.md)", err)
	}
	return err
}
