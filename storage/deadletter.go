package storage

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/arc-otel/arc-otel/storage/layout"
)

// deadLetterDirName holds, per sink, the rows a sink refused for good
// (ErrRejected) while no other storage has them (-parquet=false): one
// Arrow IPC stream file per refused write, named like its sink token
// (<segment>-<database>-<table>-<schema variant>-<chunk>.arrow), so a
// rewrite after a crash replaces the file with the same rows. Nothing here
// is ever trimmed; the operator reads the files (pyarrow, DuckDB's
// arrow extension, arrow-cat), fixes the cause and loads or deletes them.
const (
	deadLetterDirName = "dead-letter"
	deadLetterExt     = ".arrow"
)

func deadLetterPath(sysDir, sink string, seq uint64, database, table string, variant uint64, chunk int) string {
	name := fmt.Sprintf("%020d-%s-%s-%x-%d%s", seq, database, table, variant, chunk, deadLetterExt)
	return filepath.Join(sysDir, deadLetterDirName, sink, name)
}

// deadLetter keeps the rows of a refused write durably (temp file, fsync,
// rename, fsync of the directory) before their WAL segment may go. An
// error leaves the segment in the WAL and the write is retried.
func deadLetter(fsys FS, mem memory.Allocator, path string, records []arrow.RecordBatch) error {
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(records[0].Schema()), ipc.WithAllocator(mem))
	for _, rec := range records {
		if err := iw.Write(rec); err != nil {
			return fmt.Errorf("encode dead-letter rows: %w", err)
		}
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("encode dead-letter rows: %w", err)
	}
	if err := layout.MkdirDurable(fsys, filepath.Dir(path)); err != nil {
		return fmt.Errorf("create dead-letter dir: %w", err)
	}
	if err := writeFileAtomic(fsys, path, buf.Bytes()); err != nil {
		return fmt.Errorf("write dead-letter file: %w", err)
	}
	return nil
}
