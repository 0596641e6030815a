package storage

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/schema"
)

// traceSpans makes n spans with ids as SDKs make them (random; four
// spans to a trace, the first its root, without a parent) of one
// service; the i-th starts at startOf(i), and decorate sets the rest.
func traceSpans(rng *rand.Rand, n int, startOf func(i int) time.Time, decorate func(i int, s ptrace.Span, at time.Time)) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	spans := rs.ScopeSpans().AppendEmpty().Spans()
	var trace pcommon.TraceID
	var root pcommon.SpanID
	for i := range n {
		s := spans.AppendEmpty()
		var id pcommon.SpanID
		binary.LittleEndian.PutUint64(id[:], rng.Uint64())
		if i%4 == 0 {
			binary.LittleEndian.PutUint64(trace[:8], rng.Uint64())
			binary.LittleEndian.PutUint64(trace[8:], rng.Uint64())
			root = id
		} else {
			s.SetParentSpanID(root)
		}
		s.SetTraceID(trace)
		s.SetSpanID(id)
		s.SetName(fmt.Sprintf("op-%d", i%8))
		at := startOf(i)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(at))
		decorate(i, s, at)
	}
	return td
}

// oneTracesBatch converts td, which must fit one batch, to it.
func oneTracesBatch(t *testing.T, td ptrace.Traces) arrow.RecordBatch {
	t.Helper()
	var out arrow.RecordBatch
	c := otlparrow.NewTracesConverter(memory.DefaultAllocator, td.SpanCount())
	defer c.Release()
	require.NoError(t, c.Convert(td, func(_ *schema.Table, rec arrow.RecordBatch) error {
		require.Nil(t, out, "one batch")
		out = rec
		return nil
	}))
	return out
}

// randomSpans converts n spans of traceSpans, a millisecond apart from
// start, to one record batch.
func randomSpans(t *testing.T, rng *rand.Rand, start time.Time, n int) arrow.RecordBatch {
	t.Helper()
	td := traceSpans(rng, n, func(i int) time.Time { return start.Add(time.Duration(i) * time.Millisecond) },
		func(_ int, s ptrace.Span, at time.Time) {
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(at.Add(time.Duration(rng.IntN(1000)) * time.Microsecond)))
			s.Attributes().PutStr("request.id", fmt.Sprintf("%016x", rng.Uint64()))
			s.Status().SetMessage(fmt.Sprintf("retried after %d ms", rng.IntN(100_000)))
		})
	return oneTracesBatch(t, td)
}

// dataEncodings are the encodings of each column's values (RLE, which
// also codes levels, left out), sorted.
func dataEncodings(t *testing.T, path string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for col, encs := range columnEncodings(t, path) {
		for _, e := range encs {
			if e != "RLE" && !slices.Contains(out[col], e) {
				out[col] = append(out[col], e)
			}
		}
		slices.Sort(out[col])
	}
	return out
}

// TestCompactedSpansKeepTheFlushedPages: compaction rewrites an hour of
// spans with random ids, in arrival order or sorted, with the encodings
// the flush chose (DELTA_LENGTH_BYTE_ARRAY for the ids, of one width;
// PLAIN or a dictionary for the rest), compresses the ids about as
// tightly as the flush (random span ids: 4 bits a hex digit, where
// parquet-go's own zstd codec stored them nearly raw), and every value
// reads back.
func TestCompactedSpansKeepTheFlushedPages(t *testing.T) {
	ids := spanIDColumns
	for _, tt := range []struct {
		name string
		sort bool
	}{
		{"arrival order", false},
		{"sorted", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, hour, flushed := flushRandomSpanFiles(t, tt.sort, 1, 2, 20_000)
			want := dataEncodings(t, flushed[0])
			flushedRatio := map[string]float64{}
			for _, col := range ids {
				flushedRatio[col] = compressionRatio(t, flushed[0], col)
			}
			before := sortedTexts(tableRows(t, hour, nil))

			_, err := s.Compact(context.Background(), 0)
			require.NoError(t, err)
			compacted := parquetFilesIn(t, hour)
			require.Len(t, compacted, 1)
			got := dataEncodings(t, compacted[0])
			for _, col := range ids {
				require.Equal(t, []string{"DELTA_LENGTH_BYTE_ARRAY"}, want[col], "flushed %s: ids of one width", col)
			}
			require.Equal(t, []string{"PLAIN"}, want["span_status_message"], "flushed: distinct text of varying width")
			require.Equal(t, []string{"PLAIN", "RLE_DICTIONARY"}, want["operation_name"], "flushed: names that repeat")
			for col, encs := range want {
				assert.Equal(t, encs, got[col], "compacted %s: the flush's encodings", col)
			}
			for _, col := range ids {
				assert.GreaterOrEqual(t, compressionRatio(t, compacted[0], col), 0.9*flushedRatio[col], "compacted %s compressed about as flushed", col)
			}
			assert.InDelta(t, 2.0, compressionRatio(t, compacted[0], "span_id"), 0.05, "random hex: 4 bits a digit")
			assert.Equal(t, before, sortedTexts(tableRows(t, hour, nil)), "every value read back")
		})
	}
}
