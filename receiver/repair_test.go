package receiver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/internal/schema"
	"github.com/arc-otel/arc-otel/storage"
	"github.com/arc-otel/arc-otel/storage/storagetest"
	"github.com/arc-otel/arc-otel/storage/wal"
)

// downSink refuses every write, so the WAL keeps its segments.
type downSink struct{}

func (downSink) Name() string                                   { return "down" }
func (downSink) Write(context.Context, storage.SinkWrite) error { return errors.New("down") }
func (downSink) Close() error                                   { return nil }

// TestRepairedWALCountsDroppedRows: the rows of a damaged WAL record that a
// -wal-repair start drops are in arcstore_rows_dropped_total, the record
// in arcstore_wal_records_dropped_total.
func TestRepairedWALCountsDroppedRows(t *testing.T) {
	dir := t.TempDir()
	opts := storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour, Sinks: []storage.Sink{downSink{}}, SinkDrainTimeout: time.Millisecond}
	store, err := storage.Open(opts)
	require.NoError(t, err)
	tbl, err := storage.LookupTable(schema.TableLogs)
	require.NoError(t, err)
	for i, rows := range []int{2, 3, 4} {
		times := make([]time.Time, rows)
		for j := range times {
			times[j] = t0
		}
		rec, payload := storagetest.LogBatch(t, fmt.Sprint("r", i), times...)
		require.NoError(t, store.Append(context.Background(), storage.NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec))
		rec.Release()
	}
	require.NoError(t, store.Close())

	segments, err := filepath.Glob(filepath.Join(dir, "*", "wal", "*"+wal.SegmentExt))
	require.NoError(t, err)
	require.NotEmpty(t, segments, "held for the sink")
	data, err := os.ReadFile(segments[0])
	require.NoError(t, err)
	seq, _ := wal.SegmentSeq(filepath.Base(segments[0]))
	var offsets []int64
	require.NoError(t, wal.ReadSegmentData(seq, data, func(off int64, _ []byte) error {
		offsets = append(offsets, off)
		return nil
	}))
	require.Len(t, offsets, 3)
	data[offsets[1]+5] ^= 0xff // the checksum of the 3-row request
	require.NoError(t, os.WriteFile(segments[0], data, 0o644))

	opts.WALRepair = true
	store, err = storage.Open(opts)
	require.NoError(t, err)
	defer store.Close()
	m := NewMetrics()
	m.WatchStore(store)
	fams := scrapeMetrics(t, m)
	assert.Equal(t, 3.0, value(fams, "arcstore_rows_dropped_total", map[string]string{"database": "default", "table": "logs"}))
	assert.Equal(t, 1.0, value(fams, "arcstore_wal_records_dropped_total", nil))
}
