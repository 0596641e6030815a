package clickhouse

import (
	"context"
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
