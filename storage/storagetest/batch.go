// Package storagetest builds record batches and reads folders for tests of
// the sidecar.
package storagetest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// LogBatch builds a logs record with one row per time, whose messages are
// "<prefix>-<i>", through Arrow's JSON reader (independent of the exporter's
// converter), and its Arrow IPC stream.
func LogBatch(t testing.TB, prefix string, times ...time.Time) (arrow.RecordBatch, []byte) {
	t.Helper()
	rows := make([]string, 0, len(times))
	for i, ts := range times {
		rows = append(rows, fmt.Sprintf(`{"time":%d,"observed_time":%d,"trace_id":"","span_id":"","flags":0,
			"severity_number":9,"severity_text":"INFO","level":"INFO","event_type":"","message":"%s-%d","body_type":"string",
			"service_name":"svc","resource_attributes":[{"key":"service.name","value":"svc"}],"resource_attribute_types":[],
			"resource_dropped_attributes_count":0,"resource_schema_url":"","scope_name":"","scope_version":"",
			"scope_attributes":[],"scope_attribute_types":[],"scope_dropped_attributes_count":0,"scope_schema_url":"",
			"attributes":[],"attribute_types":[],"dropped_attributes_count":0}`, ts.UnixMicro(), ts.UnixMicro(), prefix, i))
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema.Logs.Arrow, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	require.NoError(t, err)
	return rec, IPC(t, rec)
}

// IPC encodes a record as an Arrow IPC stream.
func IPC(t testing.TB, rec arrow.RecordBatch) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return buf.Bytes()
}
