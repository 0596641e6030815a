package receiver

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/otlparrow"
	"github.com/arc-otel/arc-otel/internal/otlparrow/otlparrowtest"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
)

// BenchmarkDoPutStream measures what issue 14's lever 3 (long-lived DoPut
// streams) can buy: one traces batch per push on a new stream (schema and
// descriptor sent, stream opened and closed: today's exporter) against the
// same batch on one stream kept open (only the batch and its ack). The
// batch is the same every time, so the sidecar recognises it as a retry
// and skips the WAL: the difference is an upper bound on the saving per
// push, the client and the server of one process together.
func BenchmarkDoPutStream(b *testing.B) {
	for _, rows := range []int{100, 1000} {
		rec := tracesBatch(b, rows)
		desc := arcflight.Descriptor("default", schema.Traces.Name)
		b.Run(fmt.Sprintf("stream-per-push/rows=%d", rows), func(b *testing.B) {
			f := newFixture(b)
			b.ReportAllocs()
			for b.Loop() {
				stream, err := f.client.DoPut(context.Background())
				require.NoError(b, err)
				w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
				w.SetFlightDescriptor(desc)
				require.NoError(b, w.Write(rec))
				require.NoError(b, w.Close())
				require.NoError(b, stream.CloseSend())
				acks, err := readAcks(stream)
				require.NoError(b, err)
				require.Len(b, acks, 1)
			}
		})
		b.Run(fmt.Sprintf("long-lived/rows=%d", rows), func(b *testing.B) {
			f := newFixture(b)
			stream, err := f.client.DoPut(context.Background())
			require.NoError(b, err)
			w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
			w.SetFlightDescriptor(desc)
			b.ReportAllocs()
			for b.Loop() {
				require.NoError(b, w.Write(rec))
				res, err := stream.Recv()
				require.NoError(b, err)
				_, err = arcflight.ParseAck(res.AppMetadata)
				require.NoError(b, err)
			}
			require.NoError(b, w.Close())
			require.NoError(b, stream.CloseSend())
			_, err = readAcks(stream)
			require.NoError(b, err)
		})
		rec.Release()
	}
}

func tracesBatch(b testing.TB, rows int) arrow.RecordBatch {
	b.Helper()
	var rec arrow.RecordBatch
	c := otlparrow.NewTracesConverter(memory.DefaultAllocator, rows)
	defer c.Release()
	require.NoError(b, c.Convert(otlparrowtest.RealisticTraces(rows), func(t *schema.Table, r arrow.RecordBatch) error {
		if rec == nil {
			rec = r
		} else {
			r.Release()
		}
		return nil
	}))
	require.NotNil(b, rec)
	return rec
}

// BenchmarkDecodeBatch compares the two ways the receiver has had to
// decode a DoPut batch of a traces stream: the whole IPC stream (schema
// message decoded again for every batch) against one decoder per stream
// fed only the batch message.
func BenchmarkDecodeBatch(b *testing.B) {
	for _, rows := range []int{100, 1000} {
		rec := tracesBatch(b, rows)
		schemaFrame := arcflight.SchemaFrame(rec.Schema())
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		require.NoError(b, w.Write(rec))
		require.NoError(b, w.Close())
		rec.Release()
		stream := buf.Bytes()
		require.Equal(b, schemaFrame, stream[:len(schemaFrame)])
		b.Run(fmt.Sprintf("whole-stream/rows=%d", rows), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rec, err := arcflight.DecodeRecordShared(stream, memory.DefaultAllocator)
				require.NoError(b, err)
				rec.Release()
			}
		})
		b.Run(fmt.Sprintf("stream-decoder/rows=%d", rows), func(b *testing.B) {
			dec, err := arcflight.NewStreamDecoder(schemaFrame, memory.DefaultAllocator)
			require.NoError(b, err)
			defer dec.Release()
			b.ReportAllocs()
			for b.Loop() {
				rec, err := dec.Decode(stream[len(schemaFrame):], nil)
				require.NoError(b, err)
				rec.Release()
			}
		})
	}
}

// BenchmarkCheckBatch compares Table.Check with CheckRows, what the
// receiver runs per batch once the stream's schema is checked.
func BenchmarkCheckBatch(b *testing.B) {
	tbl, err := storage.LookupTable(schema.Traces.Name)
	require.NoError(b, err)
	for _, rows := range []int{100, 1000} {
		rec := tracesBatch(b, rows)
		// As decoded: a schema equal to the table's, not the same pointer.
		decoded := arcflight.SchemaFrame(rec.Schema())
		dec, err := arcflight.NewStreamDecoder(decoded, memory.DefaultAllocator)
		require.NoError(b, err)
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		require.NoError(b, w.Write(rec))
		require.NoError(b, w.Close())
		rec.Release()
		rec, err = dec.Decode(buf.Bytes()[len(decoded):], nil)
		require.NoError(b, err)
		for _, check := range []struct {
			name string
			fn   func(arrow.RecordBatch) error
		}{{"check", tbl.Check}, {"check-rows", tbl.CheckRows}} {
			b.Run(fmt.Sprintf("%s/rows=%d", check.name, rows), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					require.NoError(b, check.fn(rec))
				}
			})
		}
		rec.Release()
		dec.Release()
	}
}
