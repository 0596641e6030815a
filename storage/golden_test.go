package storage

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The golden fixture is a data directory that the store of 2026-11-27
// (before Store was split into rooms) left at a crash, with every crash
// record recovery settles: a flush intent partway through publishing, a
// compact intent after the exchange, a sink cursor, a held cursor (a sink
// this start does not run) and a partition in the trash. want.json is
// what that build recovered it to. Any later build must recover it the
// same: the split moves code, never what a crash leaves or how it heals.
//
// Intents record absolute paths; the fixture stores them as goldenDirVar.
// `go test ./storage -run TestGoldenFixture -golden.write` writes both
// again, which only the build the fixture describes may do.
const (
	goldenDir    = "testdata/recovery"
	goldenDirVar = "@DATADIR@"
)

var writeGolden = flag.Bool("golden.write", false, "write testdata/recovery and its want.json with this build")

// recovered is what a recovery left: the tree (files that were in the
// fixture by name, new Parquet files as new.parquet), the logs' rows by
// partition, the cursors and what the sink received.
type recovered struct {
	Tree     []string            `json:"tree"`
	Rows     map[string][]string `json:"rows"`
	Cursors  map[string]string   `json:"cursors"`
	SinkRows []string            `json:"sink_rows"`
}

// goldenFaults fails the chosen renames and deletes once each.
type goldenFaults struct {
	OSFS
	failRename    atomic.Pointer[func(oldpath, newpath string) bool]
	failRemoveAll atomic.Pointer[func(path string) bool]
}

func (f *goldenFaults) Rename(oldpath, newpath string) error {
	if p := f.failRename.Load(); p != nil && (*p)(oldpath, newpath) && f.failRename.CompareAndSwap(p, nil) {
		return errInjected
	}
	return f.OSFS.Rename(oldpath, newpath)
}

func (f *goldenFaults) RemoveAll(path string) error {
	if p := f.failRemoveAll.Load(); p != nil && (*p)(path) && f.failRemoveAll.CompareAndSwap(p, nil) {
		return errInjected
	}
	return f.OSFS.RemoveAll(path)
}

// namedSink is a fakeSink under another name.
type namedSink struct {
	*fakeSink
	name string
}

func (n namedSink) Name() string { return n.name }

// makeGolden leaves the fixture's crash in dir.
func makeGolden(t *testing.T, dir string) {
	// A sink that a later start drops: its cursor stays, held.
	s := openWithSink(t, dir, nil, namedSink{newFakeSink(), "gone"}, Options{})
	appendBatch(t, s, "held", t0)
	require.NoError(t, s.Close())

	fsys := &goldenFaults{}
	s = openWithSink(t, dir, fsys, newFakeSink(), Options{})
	// An old partition retention moves to the trash and fails to delete.
	appendBatch(t, s, "old", t0.Add(-30*24*time.Hour))
	appendBatch(t, s, "a", t0)
	require.NoError(t, s.Flush())
	appendBatch(t, s, "b", t0)
	require.NoError(t, s.Flush())
	waitCaughtUp(t, s)
	inTrash := func(path string) bool {
		return strings.Contains(path, string(filepath.Separator)+trashDirName+string(filepath.Separator))
	}
	fsys.failRemoveAll.Store(&inTrash)
	_, err := s.ApplyRetention(t0, Retention{"*/*": 7 * 24 * time.Hour})
	require.ErrorIs(t, err, errInjected)

	// A compaction that stops after its exchange.
	setCompactHook(s, func(step string) error {
		if step == "exchanged" {
			return errCrash
		}
		return nil
	})
	_, err = s.Compact(t.Context(), 0)
	require.ErrorIs(t, err, errCrash)
	setCompactHook(s, nil)

	// A flush of two partitions that publishes the first (hour=10: the
	// flush goes by folder name) and fails on the second.
	appendBatch(t, s, "c", t0, t0.Add(time.Hour))
	secondHour := func(_, newpath string) bool {
		return strings.Contains(newpath, "hour=9"+string(filepath.Separator)) && strings.HasSuffix(newpath, parquetExt)
	}
	fsys.failRename.Store(&secondHour)
	require.ErrorIs(t, s.Flush(), errInjected)

	// Rows only in the WAL.
	appendBatch(t, s, "d", t0)
	crash(s)
}

// recoverGolden opens dir with the sink "fake", closes it and says what
// is left.
func recoverGolden(t *testing.T, dir string, before map[string]bool) recovered {
	t.Helper()
	sink := newFakeSink()
	s := openWithSink(t, dir, nil, sink, Options{})
	waitCaughtUp(t, s)
	require.NoError(t, s.Close())
	out := recovered{Rows: messages(t, dir), Cursors: map[string]string{}, SinkRows: sink.messages()}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, systemDirName+"/"+sinksDirName+"/") {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			out.Cursors[rel] = string(data)
		}
		if !before[rel] && strings.HasSuffix(rel, parquetExt) {
			rel = filepath.ToSlash(filepath.Join(filepath.Dir(rel), "new"+parquetExt))
		}
		out.Tree = append(out.Tree, rel)
		return nil
	}))
	slices.Sort(out.Tree)
	return out
}

// copyGolden copies src to dst, the intents' data directory spelled
// from (a path or goldenDirVar) rewritten to, and lists the files.
func copyGolden(t *testing.T, src, dst, from, to string) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == "want.json" {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(rel, ".json") {
			data = bytes.ReplaceAll(data, []byte(from), []byte(to))
		}
		files[filepath.ToSlash(rel)] = true
		return os.WriteFile(target, data, 0o644)
	}))
	return files
}

// TestGoldenFixtureRecoversTheSame recovers the fixture and compares the
// files, rows, cursors and sink rows with what the build that wrote it
// recovered.
func TestGoldenFixtureRecoversTheSame(t *testing.T) {
	if *writeGolden {
		made := t.TempDir()
		makeGolden(t, made)
		require.NoError(t, os.RemoveAll(goldenDir))
		copyGolden(t, made, goldenDir, made, goldenDirVar)
	}
	dir := t.TempDir()
	before := copyGolden(t, goldenDir, dir, goldenDirVar, dir)
	for _, want := range []string{intentName, compactIntentName, sinksDirName + "/fake.done", sinksDirName + "/gone.done"} {
		require.True(t, before[systemDirName+"/"+want], "the fixture holds %s", want)
	}
	got := recoverGolden(t, dir, before)
	wantPath := filepath.Join(goldenDir, "want.json")
	if *writeGolden {
		data, err := json.MarshalIndent(got, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(wantPath, append(data, '\n'), 0o644))
	}
	data, err := os.ReadFile(wantPath)
	require.NoError(t, err)
	var want recovered
	require.NoError(t, json.Unmarshal(data, &want))
	assert.Equal(t, want, got)
}

// TestGoldenFixtureIsACrash checks that the fixture holds the crash
// records it claims to: a flush intent with one step published and one
// not, a compact intent whose staging folder holds the replaced files,
// and a trashed partition.
func TestGoldenFixtureIsACrash(t *testing.T) {
	dir := t.TempDir()
	copyGolden(t, goldenDir, dir, goldenDirVar, dir)
	sys := filepath.Join(dir, systemDirName)

	var in flushIntent
	data, err := os.ReadFile(filepath.Join(sys, intentName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &in))
	var published, pending int
	for _, st := range in.Files {
		if _, err := os.Stat(st.Final); err == nil {
			published++
		}
		if _, err := os.Stat(st.Temp); err == nil {
			pending++
		}
	}
	assert.Equal(t, []int{1, 1}, []int{published, pending}, "one step published, one not")

	var ci struct {
		Partition string   `json:"partition"`
		Staging   string   `json:"staging"`
		Outputs   []string `json:"outputs"`
	}
	data, err = os.ReadFile(filepath.Join(sys, compactIntentName))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &ci))
	for _, o := range ci.Outputs {
		_, err := os.Stat(filepath.Join(ci.Partition, o))
		assert.NoError(t, err, "the merged file is in the partition: the exchange happened")
	}
	staged, err := os.ReadDir(ci.Staging)
	require.NoError(t, err)
	assert.Len(t, staged, 3, "the staging folder holds the three replaced files")

	trash, err := os.ReadDir(filepath.Join(sys, trashDirName))
	require.NoError(t, err)
	assert.Len(t, trash, 1, "one partition in the trash")
	_, err = os.Stat(filepath.Join(dir, "default", "logs", "date=2026-10-23", "hour=9"))
	assert.True(t, errors.Is(err, os.ErrNotExist), "the trashed partition left the tree")
}
