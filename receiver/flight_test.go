package receiver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fixture struct {
	store   *storage.Store
	client  flight.Client
	dir     string
	metrics *Metrics
	server  *FlightServer
}

// newFixture serves a store on a loopback Flight server; with sets options
// of the store a test needs beyond the defaults.
func newFixture(t testing.TB, with ...func(*storage.Options)) *fixture {
	t.Helper()
	dir := t.TempDir()
	metrics := NewMetrics()
	opts := storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, Observer: metrics}
	for _, w := range with {
		w(&opts)
	}
	store, err := storage.Open(opts)
	require.NoError(t, err)
	metrics.WatchStore(store)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer(ServerOptions()...)
	server := &FlightServer{Store: store, Log: quiet, Mem: memory.DefaultAllocator, Metrics: metrics}
	flight.RegisterFlightServiceServer(gs, server)
	go gs.Serve(lis)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		require.NoError(t, store.Close())
	})
	return &fixture{store: store, client: flight.NewClientFromConn(conn, nil), dir: dir, metrics: metrics, server: server}
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// put sends the records on one DoPut stream and returns the acks received
// and the stream's final error.
func (f *fixture) put(t *testing.T, desc *flight.FlightDescriptor, recs ...arrow.RecordBatch) ([]uint64, error) {
	t.Helper()
	stream, err := f.client.DoPut(context.Background())
	require.NoError(t, err)
	w := flight.NewRecordWriter(stream, ipc.WithSchema(recs[0].Schema()))
	w.SetFlightDescriptor(desc)
	// A server that rejects the stream early closes it while we write: the
	// status that explains why comes from Recv, so write errors are not
	// checked here.
	for _, r := range recs {
		if w.Write(r) != nil {
			break
		}
	}
	_ = w.Close()
	_ = stream.CloseSend()
	return readAcks(stream)
}

func readAcks(stream flight.FlightService_DoPutClient) ([]uint64, error) {
	var acks []uint64
	for {
		res, err := stream.Recv()
		if err == io.EOF {
			return acks, nil
		}
		if err != nil {
			return acks, err
		}
		seq, err := arcflight.ParseAck(res.AppMetadata)
		if err != nil {
			return acks, err
		}
		acks = append(acks, seq)
	}
}

func TestDoPutAcknowledgesEachBatch(t *testing.T) {
	f := newFixture(t)
	a, _ := storagetest.LogBatch(t, "a", t0, t0)
	b, _ := storagetest.LogBatch(t, "b", t0)
	defer a.Release()
	defer b.Release()
	acks, err := f.put(t, arcflight.Descriptor("default", "logs"), a, b)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0, 1}, acks)
	assert.Positive(t, f.store.Buffered(), "acknowledged rows are buffered")
}

// TestLongLivedStream: one stream carries the batches of several pushes,
// each acknowledged once durable, numbered on across pushes; Drain ends an
// idle stream with Unavailable, and streams opened after it too, so a
// graceful stop does not wait for exporters' open streams.
func TestLongLivedStream(t *testing.T) {
	f := newFixture(t)
	stream, err := f.client.DoPut(context.Background())
	require.NoError(t, err)
	var w *flight.Writer
	for push, ts := range []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)} {
		rec, _ := storagetest.LogBatch(t, fmt.Sprint("push", push), ts)
		if w == nil {
			w = flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
			w.SetFlightDescriptor(arcflight.Descriptor("default", "logs"))
		}
		require.NoError(t, w.Write(rec))
		rec.Release()
		res, err := stream.Recv()
		require.NoError(t, err)
		seq, err := arcflight.ParseAck(res.AppMetadata)
		require.NoError(t, err)
		assert.EqualValues(t, push, seq)
	}
	buffered := f.store.Buffered()
	assert.Positive(t, buffered, "acknowledged rows are buffered")

	f.server.Drain()
	_, err = stream.Recv()
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	_, err = f.put(t, arcflight.Descriptor("default", "logs"), func() arrow.RecordBatch {
		rec, _ := storagetest.LogBatch(t, "late", t0)
		return rec
	}())
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Equal(t, buffered, f.store.Buffered(), "nothing is stored after Drain")
}

func TestDoPutRejectsBadInput(t *testing.T) {
	good, _ := storagetest.LogBatch(t, "ok", t0)
	defer good.Release()
	wrong := wrongSchemaBatch(t)
	defer wrong.Release()
	tests := []struct {
		name string
		desc *flight.FlightDescriptor
		rec  arrow.RecordBatch
		want string
	}{
		{"descriptor is not a path", &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("x")}, good, "descriptor must be a path"},
		{"path traversal in database", arcflight.Descriptor("../etc", "logs"), good, `database "../etc"`},
		{"unknown table", arcflight.Descriptor("default", "nope"), good, `unknown table "nope"`},
		{"schema of another table", arcflight.Descriptor("default", "traces"), good, "schema of the stream is not the traces table's schema"},
		{"wrong column type", arcflight.Descriptor("default", "logs"), wrong, "schema of the stream is not the logs table's schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			acks, err := f.put(t, tt.desc, tt.rec)
			assert.Empty(t, acks)
			assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
			assert.ErrorContains(t, err, tt.want)
			assert.Zero(t, f.store.Buffered(), "nothing of a rejected batch is kept")
		})
	}
}

// TestRefusedTimeNamesTheColumn: a batch refused for a row's time says
// so in a BadRequest detail naming the time column, which the exporter
// acts on (it drops those rows and sends the rest of its push again).
func TestRefusedTimeNamesTheColumn(t *testing.T) {
	late, _ := storagetest.LogBatch(t, "late", t0, time.Now().Add(3*365*24*time.Hour))
	defer late.Release()
	f := newFixture(t)
	acks, err := f.put(t, arcflight.Descriptor("default", "logs"), late)
	assert.Empty(t, acks)
	st := status.Convert(err)
	assert.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
	assert.ErrorContains(t, err, "row 1 has time")
	var fields []string
	for _, d := range st.Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				fields = append(fields, v.GetField())
			}
		}
	}
	assert.Equal(t, []string{schema.ColTime}, fields)
}

func wrongSchemaBatch(t *testing.T) arrow.RecordBatch {
	s := arrow.NewSchema([]arrow.Field{{Name: "time", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, s)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("yesterday")
	return b.NewRecordBatch()
}

// TestTruncatedBatchEndsOnlyItsStream sends a record message whose body is
// cut short: its stream fails with a message naming the problem, the batch
// before it stays acknowledged, and other streams are unaffected.
func TestTruncatedBatchEndsOnlyItsStream(t *testing.T) {
	f := newFixture(t)
	good, payload := storagetest.LogBatch(t, "good", t0)
	defer good.Release()
	msgs := flightMessages(t, good)
	stream, err := f.client.DoPut(context.Background())
	require.NoError(t, err)
	msgs[0].FlightDescriptor = arcflight.Descriptor("default", "logs")
	require.NoError(t, stream.Send(msgs[0]))
	require.NoError(t, stream.Send(msgs[1]))
	cut := &flight.FlightData{DataHeader: msgs[1].DataHeader, DataBody: msgs[1].DataBody[:len(msgs[1].DataBody)/2]}
	require.NoError(t, stream.Send(cut))
	require.NoError(t, stream.CloseSend())
	acks, err := readAcks(stream)
	assert.Equal(t, []uint64{0}, acks)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.ErrorContains(t, err, "batch 1 of logs: malformed Arrow IPC")
	buffered := f.store.Buffered()
	assert.EqualValues(t, len(payload), buffered, "exactly the acknowledged batch is kept")

	acks, err = f.put(t, arcflight.Descriptor("default", "logs"), good)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0}, acks)
}

// flightMessages returns the FlightData messages (schema, then record) that
// a Flight writer produces for rec.
func flightMessages(t *testing.T, rec arrow.RecordBatch) []*flight.FlightData {
	var msgs []*flight.FlightData
	w := flight.NewRecordWriter(captureStream{&msgs}, ipc.WithSchema(rec.Schema()))
	require.NoError(t, w.Write(rec))
	require.NoError(t, w.Close())
	return msgs
}

type captureStream struct{ msgs *[]*flight.FlightData }

// Send copies: the Flight writer reuses its message between calls.
func (c captureStream) Send(fd *flight.FlightData) error {
	cp := &flight.FlightData{
		DataHeader: append([]byte(nil), fd.DataHeader...),
		DataBody:   append([]byte(nil), fd.DataBody...),
	}
	*c.msgs = append(*c.msgs, cp)
	return nil
}

func TestHealthAndReady(t *testing.T) {
	f := newFixture(t)
	h := NewHTTPHandler(f.store)
	for _, path := range []string{PathHealth, PathReady} {
		rec := newRecorder()
		h.ServeHTTP(rec, mustRequest(t, path))
		assert.Equal(t, 200, rec.Code, path)
	}
	require.NoError(t, os.Chmod(filepath.Join(f.dir, "_arcstore", "tmp"), 0o500))
	defer os.Chmod(filepath.Join(f.dir, "_arcstore", "tmp"), 0o755)
	if os.Geteuid() != 0 { // root writes anywhere
		rec := newRecorder()
		h.ServeHTTP(rec, mustRequest(t, PathReady))
		assert.Equal(t, 503, rec.Code)
	}
}

// TestReadyChecks: a failing check (the uploader's credentials) fails
// /ready with its message; /health stays up.
func TestReadyChecks(t *testing.T) {
	f := newFixture(t)
	var failing error
	h := NewHTTPHandler(f.store, func() error { return failing })
	rec := newRecorder()
	h.ServeHTTP(rec, mustRequest(t, PathReady))
	assert.Equal(t, 200, rec.Code)
	failing = errors.New("object storage refused the credentials")
	for path, code := range map[string]int{PathReady: 503, PathHealth: 200} {
		rec = newRecorder()
		h.ServeHTTP(rec, mustRequest(t, path))
		assert.Equal(t, code, rec.Code, path)
	}
	rec = newRecorder()
	h.ServeHTTP(rec, mustRequest(t, PathReady))
	assert.Contains(t, rec.Body.String(), "refused the credentials")
}

// TestDoPutStoresNanosecondStreamsOfEarlierExporters: an exporter of a
// build before microsecond timestamps sends its tables with nanosecond
// times; upgrading the sidecars first must not lose its batches. They are
// acknowledged and stored in microseconds (the WAL keeps them as sent; its
// replay converts them too: storage's
// TestNanosecondRecordsOfEarlierBuildsReplay).
func TestDoPutStoresNanosecondStreamsOfEarlierExporters(t *testing.T) {
	f := newFixture(t)
	rec, _ := storagetest.LogBatch(t, "old", t0, t0.Add(time.Second))
	defer rec.Release()
	ns := schema.TimesIn(rec, arrow.Nanosecond)
	defer ns.Release()
	acks, err := f.put(t, arcflight.Descriptor("default", "logs"), ns)
	require.NoError(t, err)
	assert.Equal(t, []uint64{0}, acks)
	require.NoError(t, f.store.Flush())
	files, err := filepath.Glob(filepath.Join(f.dir, "default", "logs", "date=2026-11-22", "hour=10", "*.parquet"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	rows, err := parquet.ReadFile[schema.LogRecord](files[0])
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, []int64{t0.UnixMicro(), t0.Add(time.Second).UnixMicro()}, []int64{rows[0].Time, rows[1].Time})

	// Anything else than the table's schema in either unit is refused.
	ms := schema.TimesIn(rec, arrow.Millisecond)
	defer ms.Release()
	_, err = f.put(t, arcflight.Descriptor("default", "logs"), ms)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}

// damagedBatches are record batch messages made from a good one (header
// and body as Flight carries them) by the damage a hostile or broken
// client can send: each column's row and null count and each buffer's
// offset and length moved, and a byte flipped every few bytes of the
// header and of the body (FuzzDecodeAndCheckBatch tries the rest).
func damagedBatches(t *testing.T, header, body []byte) map[string][2][]byte {
	t.Helper()
	out := map[string][2][]byte{}
	add := func(name string, h, b []byte) { out[name] = [2][]byte{h, b} }
	for i := 0; i < len(header); i += 5 {
		h := bytes.Clone(header)
		h[i] ^= 0xff
		add(fmt.Sprintf("header byte %d ^ 0xff", i), h, body)
	}
	nodes, buffers := storagetest.BatchLayout(t, header)
	for _, v := range []struct {
		name   string
		at     []int
		fields []string
		deltas []int64
	}{
		{"field node", nodes, []string{"length", "null count"}, []int64{-8, -1, 1}},
		{"buffer", buffers, []string{"offset", "length"}, []int64{-8, 8}},
	} {
		for e, at := range v.at {
			for f, field := range v.fields {
				for _, d := range v.deltas {
					h := bytes.Clone(header)
					n := at + 8*f
					binary.LittleEndian.PutUint64(h[n:], binary.LittleEndian.Uint64(h[n:])+uint64(d))
					add(fmt.Sprintf("%s %d %s %+d", v.name, e, field, d), h, body)
				}
			}
		}
	}
	for i := 0; i < len(body); i += 16 {
		b := bytes.Clone(body)
		b[i] ^= 0xff
		add(fmt.Sprintf("body byte %d ^ 0xff", i), header, b)
	}
	return out
}

// TestDamagedBatchesNeverCrashTheSidecar: a DoPut batch of damaged Arrow
// IPC (flipped bytes in its flatbuffer metadata, wrong buffer lengths and
// offsets, wrong row counts, flipped body bytes) is refused with
// INVALID_ARGUMENT naming the batch, or stored if it still is a valid
// batch of the table; never does the sidecar panic, while decoding,
// checking or flushing it, and the batch acknowledged before it on the
// stream, and every batch stored, are in the flushed files.
func TestDamagedBatchesNeverCrashTheSidecar(t *testing.T) {
	f := newFixture(t)
	rec := tracesBatch(t, 3)
	defer rec.Release()
	msgs := flightMessages(t, rec)
	require.Len(t, msgs, 2)
	schemaMsg, good := msgs[0], msgs[1]
	schemaMsg.FlightDescriptor = arcflight.Descriptor("default", schema.Traces.Name)
	tbl, err := storage.LookupTable(schema.Traces.Name)
	require.NoError(t, err)

	stored := map[string]int64{string(good.DataHeader) + string(good.DataBody): rec.NumRows()}
	refused := 0
	for name, d := range damagedBatches(t, good.DataHeader, good.DataBody) {
		stream, err := f.client.DoPut(context.Background())
		require.NoError(t, err)
		for _, m := range []*flight.FlightData{schemaMsg, good, {DataHeader: d[0], DataBody: d[1]}} {
			require.NoError(t, stream.Send(m), name)
		}
		require.NoError(t, stream.CloseSend())
		acks, err := readAcks(stream)
		if err != nil {
			refused++
			require.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
			require.ErrorContains(t, err, "batch 1 of traces", name)
			require.Equal(t, []uint64{0}, acks, "%s: the good batch before it stays acknowledged", name)
			continue
		}
		require.Equal(t, []uint64{0, 1}, acks, name)
		// Stored: it decodes and passes the table's checks.
		payload := arcflight.AppendEOS(arcflight.AppendFrame(bytes.Clone(tbl.SchemaFrame), d[0], d[1]))
		r, err := arcflight.DecodeRecord(payload, memory.DefaultAllocator)
		require.NoError(t, err, name)
		require.NoError(t, tbl.Check(r), name)
		stored[string(d[0])+string(d[1])] = r.NumRows()
		r.Release()
	}
	t.Logf("%d damaged batches refused, %d stored", refused, len(stored)-1)
	assert.Positive(t, refused)

	require.NoError(t, f.store.Flush())
	var want int64
	for _, n := range stored {
		want += n
	}
	files, err := filepath.Glob(filepath.Join(f.dir, "default", schema.Traces.Name, "*", "*", "*.parquet"))
	require.NoError(t, err)
	var got int64
	for _, file := range files {
		rows, err := parquet.ReadFile[schema.Span](file)
		require.NoError(t, err)
		got += int64(len(rows))
	}
	assert.Equal(t, want, got, "every stored batch's rows are in the flushed files")
}
