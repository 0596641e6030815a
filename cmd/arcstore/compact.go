package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/arc-otel/arc-otel/storage"
)

// compactCommand is `arcstore compact`: it compacts every closed partition
// of a stopped sidecar's data directory (replaying and flushing its WAL
// first) and exits 0. It reports on stdout and logs to stderr.
func compactCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arcstore compact", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./data", "the data directory of a stopped sidecar")
	minAge := fs.Duration("min-age", 0, "compact partitions whose hour ended at least this long ago")
	compression := fs.String("compression", "zstd", "Parquet compression of the merged files: zstd, snappy or none")
	sorted := fs.Bool("sort", false, "sort OTLP rows by the table's sort columns (about 5x slower); measurements are always ordered by time")
	walRepair := fs.Bool("wal-repair", false, walRepairUsage)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := checkFloors(fs, compactFloors); err != nil {
		fmt.Fprintln(stderr, "arcstore compact:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	store, err := storage.Open(storage.Options{DataDir: *dataDir, Compression: *compression, Logger: log, FlushInterval: time.Hour,
		CompactSort: *sorted, WALRepair: *walRepair})
	if err != nil {
		log.Error("open data directory", "error", openError(err))
		return 1
	}
	// Replayed WAL rows go to Parquet first, so they are compacted too.
	ferr := store.Flush()
	st, cerr := store.Compact(context.Background(), *minAge)
	if err := errors.Join(ferr, cerr, store.Close()); err != nil {
		log.Error("compaction failed; partitions keep their files", "error", err)
		return 1
	}
	fmt.Fprintf(stdout, "compacted %d partitions: %d files (%d bytes) into %d (%d bytes), %d rows, %s\n",
		st.Partitions, st.FilesIn, st.BytesIn, st.FilesOut, st.BytesOut, st.Rows, st.Duration.Round(time.Millisecond))
	return 0
}
