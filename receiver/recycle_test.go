package receiver

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// A DoPut message's buffer is the memory of its record until the record is
// flushed: with every recycled buffer overwritten, the flushed files still
// hold what was sent, batches stored on two streams, a batch sent again
// (deduplicated, recycled at once) and the next messages decoded into
// recycled buffers.
func TestDoPutBuffersRecycledAfterFlush(t *testing.T) {
	defer arcflight.PoisonRecycled(arcflight.PoisonRecycled(true))
	f := newFixture(t)
	rec := tracesBatch(t, 1000)
	defer rec.Release()
	desc := arcflight.Descriptor("default", schema.Traces.Name)
	var want []string
	for round := range 3 {
		var sent []string
		for _, rows := range []int64{1000, 900, 800} {
			part := rec.NewSlice(0, rows-int64(round*10))
			defer part.Release()
			acks, err := f.put(t, desc, part, part) // the second is deduplicated
			require.NoError(t, err)
			require.Len(t, acks, 2)
			ids := part.Column(part.Schema().FieldIndices("span_id")[0]).(*array.String)
			for i := range ids.Len() {
				sent = append(sent, ids.Value(i))
			}
		}
		want = append(want, sent...)
		require.NoError(t, f.store.Flush())
		assert.Positive(t, arcflight.RecycledBytes(), "the flushed batches' buffers are kept")
	}
	files, err := filepath.Glob(filepath.Join(f.dir, "default", schema.Traces.Name, "*", "*", "*.parquet"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var got []string
	for _, file := range files {
		rows, err := parquet.ReadFile[schema.Span](file)
		require.NoError(t, err)
		for _, r := range rows {
			got = append(got, r.SpanID)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got)
}
