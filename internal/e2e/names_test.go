package e2e

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// orderedColumns is an Arc columnar object whose columns come in the given
// order (name, values, name, values, ...): which of two names equal but
// for case keeps its name depends on it, and msgpack.Marshal orders a
// map's keys as it likes.
func orderedColumns(t *testing.T, m string, cols ...any) []byte {
	t.Helper()
	var buf strings.Builder
	e := msgpack.NewEncoder(&buf)
	require.NoError(t, e.EncodeMapLen(2))
	require.NoError(t, e.EncodeString("m"))
	require.NoError(t, e.EncodeString(m))
	require.NoError(t, e.EncodeString("columns"))
	require.NoError(t, e.EncodeMapLen(len(cols)/2))
	for i := 0; i < len(cols); i += 2 {
		require.NoError(t, e.EncodeString(cols[i].(string)))
		require.NoError(t, e.Encode(cols[i+1]))
	}
	return []byte(buf.String())
}

// TestTakenColumnNamesReadBack is issue 31 item 6 with the real sidecar
// and DuckDB: columns named TIME, Date or HOUR (any case) were stored as
// sent, and DuckDB with hive_partitioning then answered `SELECT time` with
// the client's TIME and replaced Date and HOUR with the partition's
// values. Now every write API keeps them as <name>_value, so time, date
// and hour read back as the timestamp and its partition, and the client's
// values under their own names.
func TestTakenColumnNamesReadBack(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	sc := startSidecar(t, dataDir, addr(freePort(t)), addr(freePort(t)))
	at := time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC)
	columnar := orderedColumns(t, "cols", "time", []int64{at.UnixMilli()}, "TIME", []string{"client"},
		"Date", []string{"1999-01-01"}, "HOUR", []int64{23}, "usage", []float64{1.5}, "Usage", []float64{2.5})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", columnar, nil))
	rows := pack(t, map[string]any{"m": "rows", "t": at.UnixMilli(), "fields": map[string]any{"TIME": "client", "HOUR": 23}, "tags": map[string]any{"Date": "1999-01-01"}})
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/api/v1/write/msgpack", rows, nil))
	line := fmt.Sprintf("lines,Date=1999-01-01 TIME=\"client\",HOUR=23i,usage=1.5,Usage=2.5 %d\n", at.UnixNano())
	require.Equal(t, http.StatusNoContent, post(t, "http://"+sc.http+"/write?db=default", []byte(line), nil))
	sc.stop(t, 30*time.Second)

	for _, m := range []string{"cols", "rows", "lines"} {
		got := duckdb(t, "SELECT epoch_ms(time) AS time, date::VARCHAR AS date, hour, TIME_value, Date_value, HOUR_value FROM "+
			parquetOf(dataDir, "default", m))
		require.Len(t, got, 1, m)
		assert.Equal(t, map[string]any{"time": float64(at.UnixMilli()), "date": "2026-11-22", "hour": float64(9),
			"TIME_value": "client", "Date_value": "1999-01-01", "HOUR_value": float64(23)}, got[0], m)
	}
	for _, m := range []string{"cols", "lines"} {
		got := duckdb(t, "SELECT usage, Usage_value FROM "+parquetOf(dataDir, "default", m))
		assert.Equal(t, []map[string]any{{"usage": 1.5, "Usage_value": 2.5}}, got, "%s: a name equal to another but for case keeps its value under its own name", m)
	}
}
