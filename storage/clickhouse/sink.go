package clickhouse

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"

	"github.com/arc-otel/arc-otel/storage"
)

// SinkName is the sink's name in the data directory, logs and metrics.
const SinkName = "clickhouse"

// Config configures the sink.
type Config struct {
	// Addr is host:port of the native protocol (9000, or 9440 with TLS).
	Addr string
	// Database, if set, takes the rows of every sidecar database; by
	// default each goes to the ClickHouse database of its own name.
	Database string
	User     string
	Password string
	// TLS, if set, encrypts the connection.
	TLS *tls.Config
	// Cluster, if set, creates tables ON CLUSTER with Distributed tables
	// over ReplicatedMergeTree ones (see CreateTable).
	Cluster string
	// TTL, if set, expires rows: a ClickHouse interval such as "INTERVAL 30 DAY".
	TTL string
	// DedupWindow is the tables' insert deduplication window, in inserts.
	DedupWindow int
	// DialTimeout bounds connecting; 5 s if zero.
	DialTimeout time.Duration
	// Compression compresses blocks with LZ4 on the wire.
	Compression bool
	Logger      *slog.Logger
}

// Errors of a configuration that cannot work.
var ErrNoAddr = errors.New("clickhouse address is empty")

// Sink inserts the rows of WAL segments into ClickHouse: one INSERT per
// table and segment, in the native columnar format, with the segment's
// token as insert_deduplication_token so that a segment written again after
// a crash or a lost answer is dropped by the server, not stored twice.
type Sink struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex // the store writes from one goroutine; this keeps Write and Close apart
	conn   *ch.Client
	ready  map[string]bool // tables known to exist with a schema variant's columns
	blocks map[*storage.Table]*block
}

// New returns a sink that connects on first use: a ClickHouse that is down
// at start holds rows in the WAL instead of stopping the sidecar.
func New(cfg Config) (*Sink, error) {
	if cfg.Addr == "" {
		return nil, ErrNoAddr
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.DedupWindow <= 0 {
		cfg.DedupWindow = DefaultDedupWindow
	}
	return &Sink{cfg: cfg, log: cfg.Logger, ready: map[string]bool{}, blocks: map[*storage.Table]*block{}}, nil
}

// Config returns the sink's settings, defaults filled in.
func (s *Sink) Config() Config { return s.cfg }

// Name implements storage.Sink.
func (s *Sink) Name() string { return SinkName }

// Write implements storage.Sink.
func (s *Sink) Write(ctx context.Context, w storage.SinkWrite) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.blockFor(w.Table)
	if err != nil {
		return fmt.Errorf("%w: %w", storage.ErrRejected, err)
	}
	b.reset()
	for _, rec := range w.Records {
		if err := b.append(rec); err != nil {
			return fmt.Errorf("%w: %w", storage.ErrRejected, err)
		}
	}
	if b.rows() == 0 {
		return nil
	}
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	database := w.Database
	if s.cfg.Database != "" {
		database = s.cfg.Database
	}
	if err := s.ensureTable(ctx, c, database, w.Table); err != nil {
		return s.fail(err)
	}
	table := w.Table.Name
	settings := []ch.Setting{
		{Key: "insert_deduplicate", Value: "1", Important: true},
		{Key: "insert_deduplication_token", Value: w.Token, Important: true},
		// An asynchronous insert is answered before it is in a part, and
		// deduplicates by other rules: a user profile must not turn it on.
		{Key: "async_insert", Value: "0"},
		// A block whose column types differ from the table's is an error,
		// not a conversion: the server would turn values it cannot parse
		// into NULL, a silent loss.
		{Key: "input_format_native_allow_types_conversion", Value: "0"},
		// The tables are partitioned by day, and a segment may hold a
		// backfill of months: past the server's 100 partitions an insert
		// is refused, at every retry, holding the WAL for good.
		{Key: "max_partitions_per_insert_block", Value: "0"},
	}
	if s.cfg.Cluster != "" {
		// Answer only once every shard has its rows, so the WAL is not
		// trimmed ahead of them.
		settings = append(settings, ch.Setting{Key: "insert_distributed_sync", Value: "1", Important: true})
	}
	err = c.Do(ctx, ch.Query{Body: b.insertQuery(database, table), Input: b.input(), Settings: settings})
	b.reset() // drop references to the records' buffers
	if err != nil {
		return s.fail(fmt.Errorf("insert into %s.%s: %w", database, table, err))
	}
	return nil
}

// blockFor returns the block of a table's inserts. The OTLP tables' blocks
// are kept, their buffers reused from insert to insert; a measurement's
// is made for the insert and dropped with it: its schema variants have no
// bound (line protocol's field sets vary by request), and a block kept for
// each would hold the buffers of its largest insert for good.
func (s *Sink) blockFor(t *storage.Table) (*block, error) {
	if b, ok := s.blocks[t]; ok {
		return b, nil
	}
	b, err := newBlock(t)
	if err != nil {
		return nil, err
	}
	if storage.IsOTLPTable(t.Name) {
		s.blocks[t] = b
	}
	return b, nil
}

func (s *Sink) connect(ctx context.Context) (*ch.Client, error) {
	if s.conn != nil && !s.conn.IsClosed() {
		return s.conn, nil
	}
	opts := ch.Options{
		Address:     s.cfg.Addr,
		User:        s.cfg.User,
		Password:    s.cfg.Password,
		TLS:         s.cfg.TLS,
		DialTimeout: s.cfg.DialTimeout,
		ClientName:  "arcstore",
		// Inserts of a large segment can take longer than the 3 s default
		// between packets on a busy server.
		ReadTimeout: time.Minute,
	}
	if s.cfg.Compression {
		opts.Compression = ch.CompressionLZ4
	}
	c, err := ch.Dial(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to clickhouse at %s: %w", s.cfg.Addr, err)
	}
	s.conn = c
	return c, nil
}

// fail sorts an error: a refusal of the rows' shape is final (ErrRejected);
// anything else is retried, on a new connection unless the server answered.
func (s *Sink) fail(err error) error {
	if exc, ok := ch.AsException(err); ok {
		if permanent(exc.Code) {
			return fmt.Errorf("%w: %w", storage.ErrRejected, err)
		}
		if exc.Code == proto.ErrUnknownTable || exc.Code == proto.ErrUnknownDatabase {
			clear(s.ready) // dropped behind our back: create it again
		}
		return err
	}
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	return err
}

// permanent lists the server errors that mean the rows do not fit the table
// (a measurement column whose type changed, a table created by hand with
// other columns); sending them again cannot succeed.
func permanent(code proto.Error) bool {
	switch code {
	case proto.ErrTypeMismatch, proto.ErrCannotConvertType, proto.ErrNoSuchColumnInTable,
		proto.ErrThereIsNoColumn, proto.ErrIllegalColumn, proto.ErrIllegalTypeOfArgument,
		proto.ErrIncorrectNumberOfColumns, proto.ErrCannotParseText, proto.ErrCannotInsertNullInOrdinaryColumn:
		return true
	}
	return false
}

// maxReadyTables bounds the tables and schema variants the sink remembers
// as created: past it, it forgets them all and checks each again on its
// next insert.
const maxReadyTables = 4096

// ensureTable creates the database and table on first use, and gives a
// measurement table the columns of each new schema variant.
func (s *Sink) ensureTable(ctx context.Context, c *ch.Client, database string, t *storage.Table) error {
	key := fmt.Sprintf("%s\x00%s\x00%p", database, t.Name, t)
	if s.ready[key] {
		return nil
	}
	stmts := []string{CreateDatabase(database, s.cfg.Cluster)}
	create, err := CreateTable(database, t, TableOptions{TTL: s.cfg.TTL, DedupWindow: s.cfg.DedupWindow, Cluster: s.cfg.Cluster})
	if err != nil {
		return err
	}
	stmts = append(stmts, create...)
	if !storage.IsOTLPTable(t.Name) {
		add, err := AddColumns(database, t, s.cfg.Cluster)
		if err != nil {
			return err
		}
		stmts = append(stmts, add...)
	}
	for _, q := range stmts {
		if err := c.Do(ctx, ch.Query{Body: q}); err != nil {
			return fmt.Errorf("create %s.%s: %w", database, t.Name, err)
		}
	}
	if err := s.checkColumns(ctx, c, database, t); err != nil {
		return err
	}
	if err := s.checkDedupWindow(ctx, c, database, t); err != nil {
		return err
	}
	if len(s.ready) >= maxReadyTables {
		clear(s.ready) // a measurement's variants have no bound; the DDL is idempotent
	}
	s.ready[key] = true
	s.log.Info("clickhouse table ready", "database", database, "table", t.Name)
	return nil
}

// checkColumns compares the table's column types in ClickHouse with the
// rows': a table made by an older schema or by hand may differ, and the
// error should name the column rather than leave it to the insert.
func (s *Sink) checkColumns(ctx context.Context, c *ch.Client, database string, t *storage.Table) error {
	var names, types proto.ColStr
	have := map[string]string{}
	err := c.Do(ctx, ch.Query{
		Body: fmt.Sprintf("SELECT name, type FROM system.columns WHERE database = '%s' AND table = '%s'",
			escapeString(database), escapeString(t.Name)),
		Result: proto.Results{{Name: "name", Data: &names}, {Name: "type", Data: &types}},
		OnResult: func(context.Context, proto.Block) error {
			for i := range names.Rows() {
				have[names.Row(i)] = types.Row(i)
			}
			names.Reset()
			types.Reset()
			return nil
		},
	})
	if err != nil {
		return fmt.Errorf("read the columns of %s.%s: %w", database, t.Name, err)
	}
	b, err := s.blockFor(t)
	if err != nil {
		return err
	}
	for i, name := range b.names {
		want := string(b.cols[i].Type())
		got, ok := have[name]
		switch {
		case !ok:
			return fmt.Errorf("%w: %s.%s has no column %s", storage.ErrRejected, database, t.Name, name)
		case got != want:
			return fmt.Errorf("%w: column %s of %s.%s is %s in ClickHouse, the rows have %s", storage.ErrRejected, name, database, t.Name, got, want)
		}
	}
	return nil
}

// checkDedupWindow makes sure the table that takes the inserts remembers
// enough tokens to drop a segment sent again. A table created before the
// sink, by hand or by another tool, may lack the setting, and a plain
// MergeTree then deduplicates nothing: every crash between an insert and
// its cursor would leave a second copy. What cannot be fixed here (no
// ALTER grant, a foreign engine, a Distributed table sharded at random) is
// logged as an error and the inserts go on: stopping them would hold the
// WAL until the sidecar refuses writes, for a risk that needs a crash.
func (s *Sink) checkDedupWindow(ctx context.Context, c *ch.Client, database string, t *storage.Table) error {
	target := t.Name
	if s.cfg.Cluster != "" {
		target += localSuffix
		if err := s.checkShardKey(ctx, c, database, t); err != nil {
			return err
		}
	}
	eng, create, err := tableInfo(ctx, c, database, target)
	if err != nil {
		return err
	}
	if !strings.Contains(eng, "MergeTree") {
		// A Null table feeding materialized views, say: the user's design,
		// whose deduplication the sink cannot see.
		s.log.Error("table is not a MergeTree: a segment sent again after a crash may be stored twice",
			"database", database, "table", target, "engine", eng)
		return nil
	}
	if have, ok := dedupWindow(create, eng); ok && have >= s.cfg.DedupWindow {
		return nil
	}
	s.log.Warn("raising the insert deduplication window of an existing table, without which a segment sent again after a crash would be stored twice",
		"database", database, "table", target, "window", s.cfg.DedupWindow)
	if err := c.Do(ctx, ch.Query{Body: RaiseDedupWindow(database, target, eng, s.cfg.Cluster, s.cfg.DedupWindow)}); err != nil {
		if _, ok := ch.AsException(err); !ok {
			return fmt.Errorf("set the deduplication window of %s.%s: %w", database, target, err)
		}
		s.log.Error("cannot set the insert deduplication window; a segment sent again after a crash may be stored twice",
			"database", database, "table", target, "error", err)
	}
	return nil
}

// checkShardKey warns of a Distributed table that shards at random (made
// by hand or by an older release): a segment sent again splits otherwise,
// and each shard may drop or keep parts that are not the ones it had.
func (s *Sink) checkShardKey(ctx context.Context, c *ch.Client, database string, t *storage.Table) error {
	_, create, err := tableInfo(ctx, c, database, t.Name)
	if err != nil {
		return err
	}
	if strings.Contains(create, "rand()") {
		s.log.Error("the Distributed table shards by rand(): after a crash a resent segment may be lost or stored twice on some shards; recreate it with a sharding key that is a function of the row",
			"database", database, "table", t.Name, "suggested_key", shardKey(t))
	}
	return nil
}

// tableInfo reads a table's engine and CREATE statement.
func tableInfo(ctx context.Context, c *ch.Client, database, table string) (engine, create string, err error) {
	var engines, creates proto.ColStr
	found := false
	err = c.Do(ctx, ch.Query{
		Body: fmt.Sprintf("SELECT engine, create_table_query FROM system.tables WHERE database = '%s' AND name = '%s'",
			escapeString(database), escapeString(table)),
		Result: proto.Results{{Name: "engine", Data: &engines}, {Name: "create_table_query", Data: &creates}},
		OnResult: func(context.Context, proto.Block) error {
			if engines.Rows() > 0 && !found {
				engine, create, found = engines.Row(0), creates.Row(0), true
			}
			return nil
		},
	})
	if err != nil {
		return "", "", fmt.Errorf("read the settings of %s.%s: %w", database, table, err)
	}
	if !found {
		return "", "", fmt.Errorf("table %s.%s is not in system.tables", database, table)
	}
	return engine, create, nil
}

func escapeString(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// Close implements storage.Sink.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}
