package storage

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/arcflight"
	"github.com/arc-otel/arc-otel/internal/parquetfile"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// FuzzDecodeWALRecord feeds arbitrary bytes to the WAL record decoder that
// replay runs: it must return an error or a record, never panic or allocate
// without bound.
func FuzzDecodeWALRecord(f *testing.F) {
	rec, ipc := storagetest.LogBatch(f, "seed", time.Unix(1700000000, 0))
	rec.Release()
	head := appendBatchHeader([]byte{payloadVersion, 1, 0, 0, 0}, "default", "logs", BatchID{}, len(ipc))
	frame := wal.Frame(head, ipc)
	f.Add(frame)
	f.Add(frame[:len(frame)/2])
	f.Add(wal.Frame(append([]byte{2}, head[5:len(head)-4]...), ipc)) // version 2
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		payload, n, err := wal.ReadRecord(b)
		if err != nil {
			return
		}
		if n > len(b) || n < wal.HeaderSize {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		entries, err := decodePayload(payload)
		if err != nil {
			return
		}
		for _, e := range entries {
			if _, err := LookupTable(e.table); err != nil {
				continue
			}
			if r, err := arcflight.DecodeRecord(e.ipc, memory.DefaultAllocator); err == nil {
				r.Release()
			}
		}
	})
}

// FuzzDecodeAndCheckBatch feeds arbitrary record batch messages (header
// and body, as Flight carries them) through what the receiver runs before
// storing anything: the body length check, framing after the table's own
// schema, decoding and the table check; and what the check passes through
// the flush's Parquet encoder.
func FuzzDecodeAndCheckBatch(f *testing.F) {
	tbl, _ := LookupTable("logs")
	rec, ipc := storagetest.LogBatch(f, "seed", time.Unix(1700000000, 0), time.Unix(1700003600, 0))
	rec.Release()
	frame := ipc[len(tbl.SchemaFrame) : len(ipc)-8]
	n := int(binary.LittleEndian.Uint32(frame[4:8]))
	header, body := frame[8:8+n], frame[8+n:]
	f.Add(header, body)
	f.Add(header, body[:len(body)/2])
	// Each column declaring a row fewer: a map's keys shorter than its
	// entries passed the checks and panicked in the flush's encoder.
	nodes, _ := storagetest.BatchLayout(f, header)
	for _, at := range nodes {
		h := bytes.Clone(header)
		binary.LittleEndian.PutUint64(h[at:], binary.LittleEndian.Uint64(h[at:])-1)
		f.Add(h, body)
	}
	f.Fuzz(func(t *testing.T, header, body []byte) {
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("slow input: %s", d)
			}
		}()
		if arcflight.CheckMessage(header, body) != nil {
			return
		}
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		payload := arcflight.AppendEOS(arcflight.AppendFrame(append([]byte(nil), tbl.SchemaFrame...), header, body))
		r, err := arcflight.DecodeRecord(payload, mem)
		if err != nil {
			return
		}
		if tbl.Check(r) == nil {
			split(r, tbl.timeCol)
			// What the checks pass, the flush encodes.
			w, err := parquetfile.NewWriter(io.Discard, tbl.Parquet, tbl.Arrow, parquetfile.Options{BloomColumns: tbl.BloomColumns, LiteralPages: true})
			require.NoError(t, err)
			require.NoError(t, w.Write(r, nil))
			require.NoError(t, w.Close())
		}
		r.Release()
		mem.AssertSize(t, 0)
	})
}
