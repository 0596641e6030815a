package storage

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/wal"
)

// TestDamagedRecordInTheLastSegment: a flipped byte in the only WAL
// segment, with acknowledged requests after it, stops start-up; a repair
// loses that request alone, says so (segment, offset, bytes, rows), and
// counts its rows as dropped when the damage left its payload readable.
func TestDamagedRecordInTheLastSegment(t *testing.T) {
	const requests, damaged = 50, 20
	for _, tt := range []struct {
		name string
		// at returns the byte to flip, given the damaged record's frame
		// offset and payload.
		at       func(off int, payload []byte) int
		wantRows []DroppedRows // nil: the payload no longer reads
	}{
		{"its checksum", func(off int, _ []byte) int { return off + 5 }, []DroppedRows{{"default", "logs", 3}}},
		{"its length", func(off int, _ []byte) int { return off + 1 }, []DroppedRows{{"default", "logs", 3}}},
		{"a value of its batch", func(off int, p []byte) int {
			i := bytes.LastIndex(p, []byte("b20-2"))
			require.Positive(t, i)
			return off + wal.HeaderSize + i
		}, []DroppedRows{{"default", "logs", 3}}},
		{"its batch's framing", func(off int, _ []byte) int { return off + wal.HeaderSize + 1 }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, nil)
			for i := range requests {
				appendBatch(t, s, fmt.Sprint("b", i), t0, t0, t0)
			}
			path := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
			seq := s.wal.Seq()
			crash(s)

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var offsets []int
			var payloads [][]byte
			require.NoError(t, wal.ReadSegmentData(seq, data, func(off int64, p []byte) error {
				offsets, payloads = append(offsets, int(off)), append(payloads, p)
				return nil
			}))
			require.Len(t, offsets, requests, "one record per request")
			flip := tt.at(offsets[damaged], payloads[damaged])
			data[flip] ^= 0xff
			require.NoError(t, os.WriteFile(path, data, 0o644))

			_, err = Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour})
			var ce *wal.CorruptionError
			require.ErrorAs(t, err, &ce, "start-up stops")
			assert.Equal(t, path, ce.Segment)
			assert.EqualValues(t, offsets[damaged], ce.Offset)

			var logged bytes.Buffer
			s, err = Open(Options{DataDir: dir, Logger: slog.New(slog.NewTextHandler(&logged, nil)), FlushInterval: time.Hour, WALRepair: true})
			require.NoError(t, err)
			records, rows := s.WALRepaired()
			assert.Equal(t, 1, records)
			assert.Equal(t, tt.wantRows, rows)
			require.NoError(t, s.Close())

			var want []string
			for i := range requests {
				if i != damaged {
					want = append(want, fmt.Sprint("b", i, "-0"), fmt.Sprint("b", i, "-1"), fmt.Sprint("b", i, "-2"))
				}
			}
			got := messages(t, dir)["date=2026-11-22/hour=9"]
			slices.Sort(got)
			slices.Sort(want)
			assert.Equal(t, want, got, "every request but the damaged one")

			line := fmt.Sprintf("segment=%s offset=%d bytes=%d rows=", path, offsets[damaged], offsets[damaged+1]-offsets[damaged])
			assert.Contains(t, logged.String(), "dropping a damaged record")
			if tt.wantRows != nil {
				assert.Contains(t, logged.String(), line+"3 ")
			} else {
				assert.Contains(t, logged.String(), line+"unknown ")
			}
		})
	}
}

// TestRepairOfRowsAlreadyStored: a damaged record of a segment whose rows
// are in Parquet already (kept for a sink that has it too, or not yet
// trimmed) loses nothing, and is not counted.
func TestRepairOfRowsAlreadyStored(t *testing.T) {
	dir := t.TempDir()
	sink := newFakeSink()
	sink.setErr(fmt.Errorf("down")) // holds the segment
	opts := Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, Sinks: []Sink{sink}, SinkDrainTimeout: time.Millisecond}
	s, err := Open(opts)
	require.NoError(t, err)
	first := filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	appendBatch(t, s, "a", t0)
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Flush())
	crash(s)
	flipByte(t, first, wal.SegmentHeaderSize+5)

	sink = newFakeSink()
	opts.Sinks, opts.WALRepair = []Sink{sink}, true
	s, err = Open(opts)
	require.NoError(t, err)
	records, _ := s.WALRepaired()
	assert.Equal(t, 1, records, "the sink did not have it")
	waitCaughtUp(t, s)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"b-0"}, sink.messages())

	// A segment every consumer had, left by a crash before its removal.
	dir = t.TempDir()
	s = openStore(t, dir, nil)
	first = filepath.Join(s.wal.Dir(), wal.SegmentName(s.wal.Seq()))
	appendBatch(t, s, "a", t0)
	appendBatch(t, s, "b", t0)
	data, err := os.ReadFile(first)
	require.NoError(t, err)
	require.NoError(t, s.Flush())
	crash(s)
	require.NoFileExists(t, first, "removed once in Parquet")
	data[wal.SegmentHeaderSize+5] ^= 0xff
	require.NoError(t, os.WriteFile(first, data, 0o644))
	s, err = Open(Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, WALRepair: true})
	require.NoError(t, err)
	records, rows := s.WALRepaired()
	assert.Zero(t, records)
	assert.Empty(t, rows)
	require.NoError(t, s.Close())
	assert.Equal(t, []string{"a-0", "b-0"}, messages(t, dir)["date=2026-11-22/hour=9"])
}

func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[off] ^= 0xff
	require.NoError(t, os.WriteFile(path, data, 0o644))
}
