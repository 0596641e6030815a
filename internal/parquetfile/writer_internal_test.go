package parquetfile

import (
	"io"
	"testing"

	pq "github.com/apache/arrow-go/v18/parquet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
)

// TestPlainStringsTakeTheFlatLevel checks the zstd level each column of the
// OTLP tables is written at: the top-level strings no dictionary encodes
// (ids, messages) at zstdLevelFlat, everything else at the table's level.
func TestPlainStringsTakeTheFlatLevel(t *testing.T) {
	tests := []struct {
		name        string
		table       *schema.Table
		flat, other []string
	}{
		{"traces", schema.Traces, []string{"trace_id", "span_id", "parent_span_id"},
			[]string{"operation_name", "trace_state", "time", "attributes.key_value.value", "events.list.element.name", "links.list.element.trace_id"}},
		{"logs", schema.Logs, []string{"trace_id", "span_id", "message", "body_json"},
			[]string{"severity_text", "time", "attributes.key_value.value"}},
		{"metrics", schema.Metrics, nil,
			[]string{"metric_name", "value", "exemplars.list.element.trace_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewWriter(io.Discard, tt.table.Parquet, tt.table.Arrow, Options{})
			require.NoError(t, err)
			require.Equal(t, zstdLevelNested, w.level, "the OTLP tables are nested")
			props := pq.NewWriterProperties(w.props...)
			for _, col := range tt.flat {
				assert.Equal(t, zstdLevelFlat, props.CompressionLevelFor(col), col)
			}
			for _, col := range tt.other {
				assert.Equal(t, zstdLevelNested, props.CompressionLevelFor(col), col)
			}
		})
	}
}
