package arcexporter

import (
	"bytes"
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

// recordPayloads keeps each IPC message written to it as header and body
// bytes.
type recordPayloads struct{ msgs [][2][]byte }

func (w *recordPayloads) Start() error { return nil }
func (w *recordPayloads) Close() error { return nil }
func (w *recordPayloads) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	defer meta.Release()
	var body bytes.Buffer
	if err := p.SerializeBody(&body); err != nil {
		return err
	}
	w.msgs = append(w.msgs, [2][]byte{bytes.Clone(meta.Bytes()), body.Bytes()})
	return nil
}

// batchWriter skips ipc.Writer's dictionary collection: for every table the
// exporter sends, its messages must be exactly ipc.Writer's (the schema
// once, then each batch), for batches of every table with nested lists
// and maps, a second batch on the same stream, and an empty one.
func TestBatchWriterWritesLikeIPCWriter(t *testing.T) {
	byTable := map[*schema.Table][]arrow.RecordBatch{}
	emit := func(tb *schema.Table, rec arrow.RecordBatch) error {
		byTable[tb] = append(byTable[tb], rec)
		return nil
	}
	mem := memory.DefaultAllocator
	tc := otlparrow.NewTracesConverter(mem, 7)
	defer tc.Release()
	require.NoError(t, tc.Convert(otlparrowtest.Traces(otlparrowtest.Sent, 5), emit))
	require.NoError(t, tc.Convert(otlparrowtest.RealisticTraces(1000), emit))
	lc := otlparrow.NewLogsConverter(mem, 7)
	defer lc.Release()
	require.NoError(t, lc.Convert(otlparrowtest.Logs(otlparrowtest.Sent, 5), emit))
	mc := otlparrow.NewMetricsConverter(mem, 7)
	defer mc.Release()
	require.NoError(t, mc.Convert(otlparrowtest.Metrics(otlparrowtest.Sent, 3), emit))
	defer func() {
		for _, recs := range byTable {
			for _, r := range recs {
				r.Release()
			}
		}
	}()
	for _, name := range schema.Names() {
		tb, _ := schema.Lookup(name)
		recs := byTable[tb]
		if len(recs) == 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			empty := recs[0].NewSlice(0, 0)
			defer empty.Release()
			recs := append(recs[:len(recs):len(recs)], empty)

			var want, got recordPayloads
			iw := ipc.NewWriterWithPayloadWriter(&want, ipc.WithSchema(tb.Arrow), ipc.WithAllocator(mem))
			bw, err := newBatchWriter(&got, tb.Arrow, mem)
			require.NoError(t, err)
			for _, rec := range recs {
				require.NoError(t, iw.Write(rec))
				require.NoError(t, bw.Write(rec))
			}
			require.Len(t, want.msgs, len(recs)+1) // the schema, then each batch
			assert.Equal(t, want.msgs, got.msgs)
		})
	}
}

// A schema with a dictionary anywhere would need dictionary messages that
// batchWriter does not write: it is refused, and no table has one.
func TestNewBatchWriterRefusesDictionaries(t *testing.T) {
	dict := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	for _, tt := range []struct {
		name string
		typ  arrow.DataType
	}{
		{"top level", dict},
		{"in a list", arrow.ListOf(dict)},
		{"in a struct", arrow.StructOf(arrow.Field{Name: "d", Type: dict})},
		{"map values", arrow.MapOf(arrow.BinaryTypes.String, dict)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sc := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String}, {Name: "x", Type: tt.typ}}, nil)
			_, err := newBatchWriter(&recordPayloads{}, sc, memory.DefaultAllocator)
			require.ErrorIs(t, err, errDictionarySchema)
			assert.ErrorContains(t, err, "field x")
		})
	}
	for _, name := range schema.Names() {
		tb, _ := schema.Lookup(name)
		_, err := newBatchWriter(&recordPayloads{}, tb.Arrow, memory.DefaultAllocator)
		assert.NoError(t, err, name)
	}
}

// BenchmarkBatchWrite measures what writing one 1000-span batch on a
// stream costs up to the gRPC send (IPC encode and marshal of the
// message), with ipc.Writer and with batchWriter.
func BenchmarkBatchWrite(b *testing.B) {
	var rec arrow.RecordBatch
	conv := otlparrow.NewTracesConverter(memory.DefaultAllocator, 1000)
	defer conv.Release()
	require.NoError(b, conv.Convert(otlparrowtest.RealisticTraces(1000), func(_ *schema.Table, r arrow.RecordBatch) error {
		rec = r
		return nil
	}))
	defer rec.Release()
	c := putCodec{pool: &sendPool{}}
	sink := &benchPayloads{send: func(p *ipc.Payload, meta []byte, rec arrow.RecordBatch) {
		out, _ := c.Marshal(&payloadMsg{header: meta, body: p, rec: rec})
		out.Free()
	}}
	for _, tt := range []struct {
		name string
		new  func() interface{ Write(arrow.RecordBatch) error }
	}{
		{"ipc.Writer", func() interface{ Write(arrow.RecordBatch) error } {
			return ipc.NewWriterWithPayloadWriter(sink, ipc.WithSchema(rec.Schema()))
		}},
		{"batchWriter", func() interface{ Write(arrow.RecordBatch) error } {
			w, err := newBatchWriter(sink, rec.Schema(), memory.DefaultAllocator)
			require.NoError(b, err)
			return w
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			w := tt.new()
			b.ReportAllocs()
			for b.Loop() {
				if err := w.Write(rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
