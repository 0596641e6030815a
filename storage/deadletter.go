package storage

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow/ipc"
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

func (k *sinkSet) deadLetterPath(sink string, seq uint64, g *sinkGroup, variant uint64, chunk int) string {
	name := fmt.Sprintf("%020d-%s-%s-%x-%d%s", seq, g.database, g.table, variant, chunk, deadLetterExt)
	return filepath.Join(k.sysDir, deadLetterDirName, sink, name)
}

// deadLetter keeps the rows of a refused write durably (temp file, fsync,
// rename, fsync of the directory) before their WAL segment may go. An
// error leaves the segment in the WAL and the write is retried.
func (k *sinkSet) deadLetter(path string, w SinkWrite) error {
	var buf bytes.Buffer
	iw := ipc.NewWriter(&buf, ipc.WithSchema(w.Records[0].Schema()), ipc.WithAllocator(k.mem))
	for _, rec := range w.Records {
		if err := iw.Write(rec); err != nil {
			return fmt.Errorf("encode dead-letter rows: %w", err)
		}
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("encode dead-letter rows: %w", err)
	}
	if err := k.fs.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create dead-letter dir: %w", err)
	}
	if err := writeFileAtomic(k.fs, path, buf.Bytes()); err != nil {
		return fmt.Errorf("write dead-letter file: %w", err)
	}
	return nil
}
