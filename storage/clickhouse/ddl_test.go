package clickhouse

import (
	"context"
	"strings"
	"testing"

	"github.com/ClickHouse/ch-go"
	"github.com/ClickHouse/ch-go/proto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/clickhouse/chtest"
)

// TestCreateTablesInClickHouse creates every contract table in a real
// ClickHouse over the native protocol and checks it has the Parquet files'
// columns, in order, and the trace_id skip index.
func TestCreateTablesInClickHouse(t *testing.T) {
	srv := chtest.Start(t)
	ctx := context.Background()
	c, err := ch.Dial(ctx, ch.Options{Address: srv.Native})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.Do(ctx, ch.Query{Body: "CREATE DATABASE IF NOT EXISTS arc"}))
	for _, name := range schema.Names() {
		tbl, err := storage.LookupTable(name)
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			stmts, err := CreateTable("arc", tbl, TableOptions{TTL: "INTERVAL 30 DAY"})
			require.NoError(t, err)
			require.Len(t, stmts, 1, "one table on a single server")
			ddl := stmts[0]
			require.NoError(t, c.Do(ctx, ch.Query{Body: ddl}), ddl)
			require.NoError(t, c.Do(ctx, ch.Query{Body: ddl}), "IF NOT EXISTS: creating twice is fine")

			var col proto.ColStr
			var got []string
			require.NoError(t, c.Do(ctx, ch.Query{
				Body:   "SELECT name FROM system.columns WHERE database = 'arc' AND table = '" + name + "' ORDER BY position",
				Result: proto.Results{{Name: "name", Data: &col}},
				OnResult: func(context.Context, proto.Block) error {
					for i := range col.Rows() {
						got = append(got, col.Row(i))
					}
					col.Reset()
					return nil
				},
			}))
			var want []string
			for _, f := range tbl.Arrow.Fields() {
				want = append(want, f.Name)
			}
			assert.Equal(t, want, got, "same columns as the Parquet files")

			var idx proto.ColUInt64
			require.NoError(t, c.Do(ctx, ch.Query{
				Body:   "SELECT count() FROM system.data_skipping_indices WHERE database = 'arc' AND table = '" + name + "' AND expr = 'trace_id'",
				Result: proto.Results{{Name: "count()", Data: &idx}},
			}))
			wantIdx := uint64(0)
			for _, b := range tbl.BloomColumns {
				if b == schema.ColTraceID {
					wantIdx = 1
				}
			}
			assert.Equal(t, wantIdx, idx.Row(0), "bloom-filter skip index on trace_id")
		})
	}
}

// TestClusterDDL checks the statements of cluster mode. No cluster runs in
// tests (ReplicatedMergeTree needs ClickHouse Keeper); the single-server
// statements above are the ones executed.
func TestClusterDDL(t *testing.T) {
	traces, err := storage.LookupTable(schema.TableTraces)
	require.NoError(t, err)
	stmts, err := CreateTable("otel", traces, TableOptions{Cluster: "prod", TTL: "INTERVAL 7 DAY"})
	require.NoError(t, err)
	require.Len(t, stmts, 2, "a local table on every node, a Distributed one over them")
	local, dist := stmts[0], stmts[1]
	assert.Contains(t, local, "CREATE TABLE IF NOT EXISTS `otel`.`traces_local` ON CLUSTER `prod`")
	assert.Contains(t, local, "ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/otel/traces_local', '{replica}')")
	assert.Contains(t, local, "SETTINGS replicated_deduplication_window = 10000")
	assert.Contains(t, local, "TTL toDateTime(time) + INTERVAL 7 DAY")
	assert.Equal(t, "CREATE TABLE IF NOT EXISTS `otel`.`traces` ON CLUSTER `prod` AS `otel`.`traces_local` ENGINE = Distributed(`prod`, `otel`, `traces_local`, cityHash64(trace_id))", dist,
		"spans of one trace on one shard")
	assert.Equal(t, "CREATE DATABASE IF NOT EXISTS `otel` ON CLUSTER `prod`", CreateDatabase("otel", "prod"))

	metrics, err := storage.LookupTable(schema.TableMetrics)
	require.NoError(t, err)
	stmts, err = CreateTable("otel", metrics, TableOptions{Cluster: "prod"})
	require.NoError(t, err)
	assert.Contains(t, stmts[1], "cityHash64(`metric_name`, `service_name`, `time`))",
		"no trace id: the sort key, so a segment sent again splits across shards as before")
	assert.NotContains(t, strings.Join(stmts, "\n"), "rand()")
	assert.Equal(t, "ALTER TABLE `otel`.`metrics_local` ON CLUSTER `prod` MODIFY SETTING replicated_deduplication_window = 500",
		RaiseDedupWindow("otel", "metrics_local", "ReplicatedMergeTree", "prod", 500))
}

func TestDedupWindowOfACreateStatement(t *testing.T) {
	for _, tt := range []struct {
		name, create, engine string
		window               int
		set                  bool
	}{
		{"ours", "CREATE TABLE a.b (x Int8) ENGINE = MergeTree ORDER BY x SETTINGS non_replicated_deduplication_window = 10000, index_granularity = 8192", "MergeTree", 10000, true},
		{"plain MergeTree", "CREATE TABLE a.b (x Int8) ENGINE = MergeTree ORDER BY x SETTINGS index_granularity = 8192", "MergeTree", 0, false},
		{"replicated", "CREATE TABLE a.b (x Int8) ENGINE = ReplicatedMergeTree('/p', '{replica}') ORDER BY x SETTINGS replicated_deduplication_window = 300", "ReplicatedMergeTree", 300, true},
		{"ClickHouse Cloud", "CREATE TABLE a.b (x Int8) ENGINE = SharedMergeTree('/p', '{replica}') ORDER BY x SETTINGS replicated_deduplication_window = 300", "SharedMergeTree", 300, true},
		{"other engine's setting", "CREATE TABLE a.b (x Int8) ENGINE = ReplicatedMergeTree('/p', '{replica}') ORDER BY x SETTINGS non_replicated_deduplication_window = 300", "ReplicatedMergeTree", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, ok := dedupWindow(tt.create, tt.engine)
			assert.Equal(t, tt.set, ok)
			assert.Equal(t, tt.window, w)
		})
	}
}
