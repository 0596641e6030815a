package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
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

// TestCompactWALRepair: `arcstore compact` replays the WAL as the sidecar
// does, so a damaged record stops it too, naming the way out, and
// -wal-repair lets it drop that record and go on.
func TestCompactWALRepair(t *testing.T) {
	dir := t.TempDir()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := storage.Open(storage.Options{DataDir: dir, Logger: quiet, FlushInterval: time.Hour,
		Sinks: []storage.Sink{downSink{}}, SinkDrainTimeout: time.Millisecond})
	require.NoError(t, err)
	tbl, err := storage.LookupTable(schema.TableLogs)
	require.NoError(t, err)
	t0 := time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)
	for _, prefix := range []string{"a", "b", "c"} {
		rec, payload := storagetest.LogBatch(t, prefix, t0)
		require.NoError(t, store.Append(context.Background(), storage.NewBatchID("default", tbl.Name, payload), "default", tbl, payload, rec))
		rec.Release()
	}
	require.NoError(t, store.Close())
	segments, err := filepath.Glob(filepath.Join(dir, "_arcstore", "wal", "*"+wal.SegmentExt))
	require.NoError(t, err)
	require.NotEmpty(t, segments, "held for the sink")
	data, err := os.ReadFile(segments[0])
	require.NoError(t, err)
	data[wal.SegmentHeaderSize+5] ^= 0xff // a's checksum
	require.NoError(t, os.WriteFile(segments[0], data, 0o644))

	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, compactCommand([]string{"-data-dir", dir}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "is corrupt at offset 16")
	assert.Contains(t, stderr.String(), "run once with -wal-repair")

	stderr.Reset()
	require.Equal(t, 0, compactCommand([]string{"-data-dir", dir, "-wal-repair"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "dropping a damaged record")
	assert.Contains(t, stdout.String(), "compacted ")
	stderr.Reset()
	assert.Equal(t, 0, compactCommand([]string{"-data-dir", dir}, &stdout, &stderr), "repaired for good: %s", stderr.String())
}

// TestCompactMinAgeFloor: a negative -min-age would count the hour still
// being written as ended; it is refused before the data directory is
// opened, naming the flag, and 0 (every ended hour) still works.
func TestCompactMinAgeFloor(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, compactCommand([]string{"-data-dir", dir, "-min-age", "-1h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-min-age -1h0m0s: want 0 or more (0 compacts every partition whose hour has ended)")
	assert.NoDirExists(t, filepath.Join(dir, "_arcstore"), "nothing was opened")

	stdout.Reset()
	stderr.Reset()
	require.Equal(t, 0, compactCommand([]string{"-data-dir", dir, "-min-age", "0"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "compacted 0 partitions")
}
