package clickhouse

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/tableschema"
)

// TableOptions shape the DDL.
type TableOptions struct {
	// TTL, if set, is a ClickHouse interval expression such as
	// "INTERVAL 30 DAY" after which rows expire.
	TTL string
	// DedupWindow is how many recent inserts MergeTree remembers to drop a
	// repeated insert_deduplication_token (a replayed WAL segment).
	DedupWindow int
	// Cluster, if set, creates the tables ON CLUSTER: a ReplicatedMergeTree
	// table <name>_local on every node and a Distributed table <name> over
	// them, which is the one written and queried.
	Cluster string
}

// DefaultDedupWindow covers hours of segments from many sidecars: each
// sidecar inserts one block per table per WAL segment (about one every ten
// seconds).
const DefaultDedupWindow = 10000

// localSuffix names the per-node tables under a Distributed table.
const localSuffix = "_local"

// CreateTable returns the statements that create one table in database:
// one for a single server, two (local and Distributed) for a cluster.
// Column types follow the Arrow schema; strings the Parquet schema
// dictionary-encodes become LowCardinality in the OTLP tables, attribute
// maps Map(LowCardinality(String), String), timestamps DateTime64(9, 'UTC').
func CreateTable(database string, t *storage.Table, o TableOptions) ([]string, error) {
	cols, err := columnDefs(t)
	if err != nil {
		return nil, err
	}
	if slices.Contains(t.BloomColumns, schema.ColTraceID) {
		cols = append(cols, "  INDEX idx_trace_id trace_id TYPE bloom_filter(0.01) GRANULARITY 1")
	}
	order := sortKey(t)
	window := o.DedupWindow
	if window <= 0 {
		window = DefaultDedupWindow
	}
	name, engine, setting := quote(t.Name), "MergeTree", "non_replicated_deduplication_window"
	onCluster := ""
	if o.Cluster != "" {
		onCluster = " ON CLUSTER " + quote(o.Cluster)
		name = quote(t.Name + localSuffix)
		engine = fmt.Sprintf("ReplicatedMergeTree('/clickhouse/tables/{shard}/%s/%s', '{replica}')", database, t.Name+localSuffix)
		setting = "replicated_deduplication_window"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE IF NOT EXISTS %s.%s%s\n(\n%s\n)\nENGINE = %s\nPARTITION BY toDate(time)\nORDER BY (%s)\n",
		quote(database), name, onCluster, strings.Join(cols, ",\n"), engine, strings.Join(order, ", "))
	if o.TTL != "" {
		fmt.Fprintf(&b, "TTL toDateTime(time) + %s\n", o.TTL)
	}
	fmt.Fprintf(&b, "SETTINGS %s = %d", setting, window)
	stmts := []string{b.String()}
	if o.Cluster != "" {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s%s AS %s.%s ENGINE = Distributed(%s, %s, %s, %s)",
			quote(database), quote(t.Name), onCluster, quote(database), name,
			quote(o.Cluster), quote(database), name, shardKey(t)))
	}
	return stmts, nil
}

// CreateDatabase returns the statement that creates database.
func CreateDatabase(database, cluster string) string {
	stmt := "CREATE DATABASE IF NOT EXISTS " + quote(database)
	if cluster != "" {
		stmt += " ON CLUSTER " + quote(cluster)
	}
	return stmt
}

// AddColumns returns the statements that give an existing measurement
// table the columns of a newer schema.
func AddColumns(database string, t *storage.Table, cluster string) ([]string, error) {
	cols, err := columnDefs(t)
	if err != nil {
		return nil, err
	}
	targets := []string{quote(t.Name)}
	onCluster := ""
	if cluster != "" {
		onCluster = " ON CLUSTER " + quote(cluster)
		targets = []string{quote(t.Name + localSuffix), quote(t.Name)}
	}
	var stmts []string
	for _, target := range targets {
		for _, c := range cols {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s.%s%s ADD COLUMN IF NOT EXISTS %s", quote(database), target, onCluster, strings.TrimSpace(c)))
		}
	}
	return stmts, nil
}

func columnDefs(t *storage.Table) ([]string, error) {
	var cols []string
	for i, f := range t.Arrow.Fields() {
		c, err := tableColumn(t, i)
		if err != nil {
			return nil, err
		}
		cols = append(cols, fmt.Sprintf("  %s %s", quote(f.Name), c.Type()))
	}
	return cols, nil
}

// tableColumn is the column of a table's i-th field, in the DDL and in the
// blocks alike. A measurement's fields are Nullable whatever the batch
// declares, as its Parquet columns are optional: one measurement comes
// with nullable fields from line protocol and MessagePack and may come
// with required ones from an Arrow Flight client, and the table must take
// both (a block's types must be the table's exactly).
func tableColumn(t *storage.Table, i int) (column, error) {
	f := t.Arrow.Field(i)
	otlp := storage.IsOTLPTable(t.Name)
	nullable := f.Nullable || !otlp && f.Name != tableschema.TimeColumn
	c, err := newColumn(f.Type, nullable, otlp && lowCardinality(t.Parquet, f.Name))
	if err != nil {
		return nil, fmt.Errorf("table %s column %s: %w", t.Name, f.Name, err)
	}
	return c, nil
}

// sortKey is the table's sort columns; a measurement table sorts by time.
func sortKey(t *storage.Table) []string {
	sort := t.SortColumns
	if len(sort) == 0 {
		sort = []string{"time"}
	}
	out := make([]string, len(sort))
	for i, c := range sort {
		out[i] = quote(c)
	}
	return out
}

// shardKey keeps the rows of one trace on one shard where the table has
// trace ids, so trace lookups and per-trace aggregates stay local. Other
// tables hash their sort key. The key must be a function of the row, never
// rand(): a segment sent again after a crash has to split across the
// shards exactly as before, or the shards cannot recognise its blocks by
// their token and keep a second copy.
func shardKey(t *storage.Table) string {
	if t.Arrow.HasField(schema.ColTraceID) {
		return "cityHash64(trace_id)"
	}
	return "cityHash64(" + strings.Join(sortKey(t), ", ") + ")"
}

// dedupSetting is the MergeTree setting that holds the insert
// deduplication window of an engine.
func dedupSetting(engine string) string {
	if strings.HasPrefix(engine, "Replicated") || strings.HasPrefix(engine, "Shared") {
		return "replicated_deduplication_window"
	}
	return "non_replicated_deduplication_window"
}

var windowPattern = regexp.MustCompile(`\b((?:non_)?replicated_deduplication_window)\s*=\s*(\d+)`)

// dedupWindow reads a table's deduplication window from its CREATE
// statement; ok is false when the statement does not set it (the server
// default then applies: 0, no deduplication, for a plain MergeTree).
func dedupWindow(createQuery, engine string) (window int, ok bool) {
	want := dedupSetting(engine)
	for _, m := range windowPattern.FindAllStringSubmatch(createQuery, -1) {
		if m[1] == want {
			n, err := strconv.Atoi(m[2])
			return n, err == nil
		}
	}
	return 0, false
}

// RaiseDedupWindow returns the statement that sets a table's
// deduplication window.
func RaiseDedupWindow(database, table, engine, cluster string, window int) string {
	onCluster := ""
	if cluster != "" {
		onCluster = " ON CLUSTER " + quote(cluster)
	}
	return fmt.Sprintf("ALTER TABLE %s.%s%s MODIFY SETTING %s = %d", quote(database), quote(table), onCluster, dedupSetting(engine), window)
}

func quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// lowCardinality reports whether the Parquet schema dictionary-encodes a
// top-level column: the contract's marker of a low-cardinality string.
func lowCardinality(s *parquet.Schema, name string) bool {
	f, ok := s.Lookup(name)
	if !ok {
		return false
	}
	enc := f.Node.Encoding()
	return enc != nil && enc.Encoding() == parquet.RLEDictionary.Encoding()
}
