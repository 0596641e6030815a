package otlparrow_test

import (
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// Columns reuse the buffers of released records. A record still held (the
// exporter holds its batches until the sidecar acknowledges them) must keep
// its rows while the converter goes on with other data whose records are
// released, here on other goroutines, as the exporter's pushes do.
func TestHeldRecordsKeepTheirRows(t *testing.T) {
	c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 50)
	defer c.Release()
	var held []arrow.RecordBatch
	defer func() {
		for _, r := range held {
			r.Release()
		}
	}()
	require.NoError(t, c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 30), func(_ *schema.Table, rec arrow.RecordBatch) error {
		held = append(held, rec)
		return nil
	}))
	var want [][]schema.Span
	for _, r := range held {
		rows, err := otlparrowtest.Rows[schema.Span](r)
		require.NoError(t, err)
		want = append(want, rows)
	}

	var wg sync.WaitGroup
	for range 20 {
		require.NoError(t, c.Convert(otlparrowtest.RealisticTraces(120), func(_ *schema.Table, rec arrow.RecordBatch) error {
			wg.Go(rec.Release)
			return nil
		}))
	}
	wg.Wait()

	for i, r := range held {
		rows, err := otlparrowtest.Rows[schema.Span](r)
		require.NoError(t, err)
		assert.Equal(t, want[i], rows, "batch %d changed after later conversions", i)
	}
}
