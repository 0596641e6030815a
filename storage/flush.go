package storage

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/arc-otel/arc-otel/internal/parquetfile"
)

// prepare writes every partition of gen to a durable temp file and records
// the intent to publish them.
func (s *Store) prepare(gen *generation) (*flushIntent, []FlushedFile, error) {
	in := &flushIntent{LastSeq: gen.lastSeq}
	var files []FlushedFile
	keys := make([]partKey, 0, len(gen.parts))
	for k := range gen.parts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].dir("") < keys[j].dir("") })
	for _, k := range keys {
		p := gen.parts[k]
		step, size, err := s.writePartition(p, gen.lastSeq)
		if err != nil {
			s.removeTemps(in)
			return nil, nil, fmt.Errorf("flush partition %s: %w", k.dir(""), err)
		}
		in.Files = append(in.Files, step)
		files = append(files, FlushedFile{Database: k.database, Table: k.table, Rows: int64(p.rows), Bytes: size})
	}
	if len(in.Files) > 0 {
		if err := s.writeIntent(in); err != nil {
			// The intent may be on disk without its directory entry being
			// durable: it must not outlive the temp files it names.
			s.removeIntent()
			s.removeTemps(in)
			return nil, nil, err
		}
	}
	return in, files, nil
}

// finish publishes the files of a prepared flush, drops the WAL segments it
// covers and releases the generation's memory.
func (s *Store) finish(gen *generation, in *flushIntent) error {
	if err := s.publish(in); err != nil {
		return err
	}
	s.buffered.Add(-gen.bytes)
	if gen.bytes > 0 {
		s.room.broadcast()
	}
	if gen.rows > 0 {
		s.log.Info("flushed", "rows", gen.rows, "files", len(in.Files), "wal_segment", in.LastSeq)
	}
	gen.release()
	return nil
}

func (s *Store) removeTemps(in *flushIntent) {
	for _, st := range in.Files {
		_ = s.fs.Remove(st.Temp)
	}
}

// writePartition writes one partition's rows to a durable temp file and
// returns the step that publishes it and the file's size.
func (s *Store) writePartition(p *partition, lastSeq uint64) (publishStep, int64, error) {
	name := fileName(lastSeq)
	step := publishStep{
		Temp:  filepath.Join(s.tmpDir, name+".tmp"),
		Final: filepath.Join(p.key.dir(s.dir), name),
	}
	if err := s.mkdirDurable(filepath.Dir(step.Final)); err != nil {
		return step, 0, err
	}
	f, err := s.fs.OpenFile(step.Temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return step, 0, fmt.Errorf("create temp file: %w", err)
	}
	cw := &countingWriter{w: f}
	err = s.encode(cw, p)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.fs.Remove(step.Temp)
		return step, 0, err
	}
	return step, cw.n, nil
}

func (s *Store) encode(f io.Writer, p *partition) error {
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := parquetfile.NewWriter(bw, p.table.Parquet, p.table.Arrow, parquetfile.Options{
		Compression:  s.opts.Compression,
		RowGroupRows: s.opts.RowGroupRows,
		BloomColumns: p.table.BloomColumns,
		ExpectedRows: int64(p.rows),
		LiteralPages: true,
	})
	if err != nil {
		return err
	}
	for _, c := range p.chunks {
		if err := w.Write(c.rec, c.rows); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write parquet file: %w", err)
	}
	return nil
}

// fileName is unique without coordination: the WAL position orders files of
// one sidecar, the random part keeps sidecars sharing a directory apart.
func fileName(lastSeq uint64) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%s-%08d-%s%s", time.Now().UTC().Format("20060102T150405Z"), lastSeq, hex.EncodeToString(r[:]), parquetExt)
}

// mkdirDurable creates dir and makes its entry durable in each parent it
// created, so a published file is not lost with its directory.
func (s *Store) mkdirDurable(dir string) error {
	if s.madeDirs[dir] {
		return nil
	}
	var created []string
	for d := dir; d != s.dir && d != "." && d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = append(created, d)
	}
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create partition dir: %w", err)
	}
	for _, d := range created {
		if err := s.fs.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("sync dir: %w", err)
		}
	}
	s.madeDirs[dir] = true
	return nil
}

// loadParquetCursor reads Parquet's cursor. Written on first use, so that
// a restart knows which segments Parquet has. In a directory that had only
// sinks, Parquet starts after the segments there: they are the sinks' rows,
// already stored where the operator chose.
func (s *Store) loadParquetCursor() error {
	seq, ok, err := s.cursors.read(parquetCursor)
	if err != nil || ok {
		s.parquetDone.Store(seq)
		return err
	}
	hadSinks, err := s.cursors.hasSinks()
	if err != nil {
		return err
	}
	if hadSinks {
		s.parquetFresh = true // placed by recover once it knows the last segment
		return nil
	}
	return s.cursors.write(parquetCursor, 0)
}

// dropParquetCursor forgets Parquet under -parquet=false: the sinks are
// then the storage, every acknowledged row reaches them, and keeping WAL
// segments for a Parquet that is off would only fill the disk.
func (s *Store) dropParquetCursor() error {
	seq, ok, err := s.cursors.read(parquetCursor)
	if err != nil || !ok {
		return err
	}
	s.log.Warn("parquet is off: wal segments after its cursor are no longer kept for it; they go to the sinks only", "parquet_cursor", seq)
	if err := s.fs.Remove(s.cursors.path(parquetCursor)); err != nil {
		return fmt.Errorf("remove parquet cursor: %w", err)
	}
	return s.fs.SyncDir(filepath.Dir(s.cursors.path(parquetCursor)))
}
