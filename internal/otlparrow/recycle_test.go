package otlparrow_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
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

// The sidecar recognises a retried batch by the hash of its IPC bytes, and
// a retry converts the same data again, on buffers that held other rows
// before. The bytes must not depend on what those buffers held: also the
// values under nulls (the absent columns of a metric type, appended per
// run) must be written, not left over.
func TestReconvertedDataHasTheSameBytes(t *testing.T) {
	type convertFunc func(n int, emit otlparrow.Emit) error
	tests := map[string]func() (convertFunc, func()){
		"traces": func() (convertFunc, func()) {
			c := otlparrow.NewTracesConverter(memory.DefaultAllocator, 7)
			return func(n int, emit otlparrow.Emit) error {
				return c.Convert(otlparrowtest.Traces(otlparrowtest.Sent, n), emit)
			}, c.Release
		},
		"logs": func() (convertFunc, func()) {
			c := otlparrow.NewLogsConverter(memory.DefaultAllocator, 7)
			return func(n int, emit otlparrow.Emit) error {
				return c.Convert(otlparrowtest.Logs(otlparrowtest.Sent, n), emit)
			}, c.Release
		},
		"metrics": func() (convertFunc, func()) {
			c := otlparrow.NewMetricsConverter(memory.DefaultAllocator, 7)
			return func(n int, emit otlparrow.Emit) error {
				// n points per metric: another n moves every metric type's
				// points, and so its nulls, to other rows of the buffers.
				return c.Convert(otlparrowtest.Metrics(otlparrowtest.Sent, n), emit)
			}, c.Release
		},
	}
	for name, newConverter := range tests {
		t.Run(name, func(t *testing.T) {
			convert, release := newConverter()
			defer release()
			ipcBytes := func(n int) [][]byte {
				var out [][]byte
				require.NoError(t, convert(n, func(tbl *schema.Table, rec arrow.RecordBatch) error {
					defer rec.Release()
					var buf bytes.Buffer
					w := ipc.NewWriter(&buf, ipc.WithSchema(tbl.Arrow))
					if err := w.Write(rec); err != nil {
						return err
					}
					if err := w.Close(); err != nil {
						return err
					}
					out = append(out, buf.Bytes())
					return nil
				}))
				return out
			}
			want := ipcBytes(4)
			for _, other := range []int{3, 5} {
				ipcBytes(other) // fills the recycled buffers with other rows
				assert.Equal(t, want, ipcBytes(4), "after converting %d", other)
			}
		})
	}
}

// Batches without span events or links share one empty array of their
// structs. Batches with and without them, interleaved and held while
// others are released on other goroutines, must read back as the same
// spans converted in one batch, and releasing the converter and the
// records must free all of it.
func TestBatchesWithAndWithoutStructs(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rowsOf := func(batchSize int) []schema.Span {
		c := otlparrow.NewTracesConverter(mem, batchSize)
		defer c.Release()
		var held []arrow.RecordBatch
		var wg sync.WaitGroup
		// RealisticTraces gives every 50th span an event and none a link:
		// batches of 10 alternate one with events and four without.
		require.NoError(t, c.Convert(otlparrowtest.RealisticTraces(300), func(_ *schema.Table, rec arrow.RecordBatch) error {
			held = append(held, rec)
			return nil
		}))
		for range 3 { // later batches reuse what released ones held
			require.NoError(t, c.Convert(otlparrowtest.RealisticTraces(100), func(_ *schema.Table, rec arrow.RecordBatch) error {
				wg.Go(rec.Release)
				return nil
			}))
		}
		wg.Wait()
		var rows []schema.Span
		for _, r := range held {
			got, err := otlparrowtest.Rows[schema.Span](r)
			require.NoError(t, err)
			rows = append(rows, got...)
			r.Release()
		}
		return rows
	}
	want := rowsOf(300)
	require.Len(t, want, 300)
	assert.Equal(t, want, rowsOf(10))
}
