package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flusherRig is a flusher on its own: a test plays the committer (it hands
// out generations) and the Store (it is told what was published).
type flusherRig struct {
	dir       string
	fl        *flusher
	rotates   chan chan *generation
	published []uint64
	// intentAtPublish is whether the intent was still on disk when the
	// flusher said its segments were in Parquet.
	intentAtPublish []bool
	released        int64
}

func newFlusherRig(t *testing.T, dir string, fsys FS) *flusherRig {
	t.Helper()
	g := &flusherRig{dir: dir, rotates: make(chan chan *generation)}
	sys := filepath.Join(g.dir, systemDirName)
	for _, d := range []string{tmpDirName, sinksDirName} {
		require.NoError(t, os.MkdirAll(filepath.Join(sys, d), 0o755))
	}
	opts := withDefaults(Options{DataDir: g.dir, Logger: quiet, FS: fsys})
	g.fl = newFlusher(flusherConfigOf(opts), sys, g.rotates, make(chan struct{}))
	g.fl.published = func(seq uint64) error {
		_, err := os.Stat(filepath.Join(sys, intentName))
		g.published = append(g.published, seq)
		g.intentAtPublish = append(g.intentAtPublish, err == nil)
		return nil
	}
	g.fl.released = func(n int64) { g.released += n }
	require.NoError(t, g.fl.loadParquetCursor())
	return g
}

// flush flushes a generation of the given log rows, closed at lastSeq.
func (g *flusherRig) flush(t *testing.T, lastSeq uint64, prefix string) error {
	t.Helper()
	gen := newGeneration()
	rec, ipc := logBatch(t, prefix, t0, t0.Add(3600e9))
	gen.add("default", logsTable(t), rec, len(ipc))
	rec.Release()
	gen.lastSeq = lastSeq
	go func() { reply := <-g.rotates; reply <- gen }()
	var files []FlushedFile
	return g.fl.flush(&files)
}

func TestFlusherPublishesThenTellsTheStoreBeforeTheIntentGoes(t *testing.T) {
	g := newFlusherRig(t, t.TempDir(), nil)
	require.NoError(t, g.flush(t, 7, "a"))
	assert.Equal(t, []uint64{7}, g.published)
	assert.Equal(t, []bool{true}, g.intentAtPublish, "told inside publish, while the intent still names the files")
	assert.NoFileExists(t, filepath.Join(g.dir, systemDirName, intentName))
	assert.Equal(t, uint64(7), g.fl.done())
	cursor, err := os.ReadFile(filepath.Join(g.dir, systemDirName, sinksDirName, parquetCursor+cursorExt))
	require.NoError(t, err)
	assert.Equal(t, "7\n", string(cursor))
	assert.Positive(t, g.released, "the generation's buffer is given back")
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"a-0"},
		"date=2026-11-22/hour=10": {"a-1"},
	}, messages(t, g.dir))
	entries, err := os.ReadDir(filepath.Join(g.dir, systemDirName, tmpDirName))
	require.NoError(t, err)
	assert.Empty(t, entries, "no temp file left")
}

func TestFlusherRetryOnlyPublishes(t *testing.T) {
	fsys := &faultFS{}
	g := newFlusherRig(t, t.TempDir(), fsys)
	renames := 0
	fsys.failRename = func(newpath string) bool {
		if !strings.HasSuffix(newpath, ".parquet") {
			return false
		}
		renames++
		return renames == 2
	}
	require.ErrorIs(t, g.flush(t, 3, "x"), errInjected)
	assert.ErrorIs(t, g.fl.unfinished(), errPublishUnfinished, "compaction and retention wait")
	assert.Empty(t, g.published, "nothing is trimmed before every file is in place")
	assert.FileExists(t, filepath.Join(g.dir, systemDirName, intentName))
	temps := g.fl.pending.intent.Files

	require.NoError(t, g.flush(t, 4, "y"), "the retry publishes, then flushes the next generation")
	assert.Equal(t, []uint64{3, 4}, g.published)
	for _, st := range temps {
		assert.FileExists(t, st.Final, "published under the names of its intent")
	}
	assert.NoError(t, g.fl.unfinished())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"x-0", "y-0"},
		"date=2026-11-22/hour=10": {"x-1", "y-1"},
	}, messages(t, g.dir), "no row twice")
}

func TestFlusherRecoverFinishesAnIntentAndClearsStrayTemps(t *testing.T) {
	fsys := &faultFS{}
	g := newFlusherRig(t, t.TempDir(), fsys)
	fsys.failRename = func(newpath string) bool { return strings.HasSuffix(newpath, ".parquet") }
	require.ErrorIs(t, g.flush(t, 5, "x"), errInjected)
	g.fl.abandon()
	stray := filepath.Join(g.dir, systemDirName, tmpDirName, "stray.tmp")
	require.NoError(t, os.WriteFile(stray, []byte("half"), 0o644))

	fsys.failRename = nil
	g2 := newFlusherRig(t, g.dir, nil)
	require.NoError(t, g2.fl.recover())
	assert.FileExists(t, stray, "recover leaves temps it does not name")
	require.NoError(t, g2.fl.clearTmp())
	assert.NoFileExists(t, stray)
	assert.Equal(t, []uint64{5}, g2.published)
	assert.Equal(t, uint64(5), g2.fl.done())
	assert.Equal(t, map[string][]string{
		"date=2026-11-22/hour=9":  {"x-0"},
		"date=2026-11-22/hour=10": {"x-1"},
	}, messages(t, g.dir))
}

// TestFlushWorkersOnlyWhenWritersWait: a flush encodes on several
// goroutines only when writers waited for buffer room since the previous
// flush began; one that keeps up stays on one.
func TestFlushWorkersOnlyWhenWritersWait(t *testing.T) {
	var waits int64
	steps := []struct {
		name    string
		workers int
		newWait bool
		want    int
	}{
		{"nobody waited", 2, false, 1},
		{"a writer waited", 2, true, 2},
		{"nobody waited since", 2, false, 1},
		{"waiting again", 3, true, 3},
		{"still waiting", 3, true, 3},
		{"one worker asked for", 1, true, 1},
	}
	fl := &flusher{waits: func() int64 { return waits }}
	for _, st := range steps {
		fl.workers = st.workers
		if st.newWait {
			waits++
		}
		assert.Equal(t, st.want, fl.workersNow(), st.name)
	}
	assert.Equal(t, 1, (&flusher{workers: 2}).workersNow(), "no committer to ask")
}

// TestFlushWorkersWhileWritersStillWait: writers blocked for room since
// before the previous flush began begin no new wait, yet the flush is what
// they wait for: a retried failed flush, or the generation flushed right
// after a retried one, is encoded on the workers too.
func TestFlushWorkersWhileWritersStillWait(t *testing.T) {
	var waits int64
	var waiting int32
	steps := []struct {
		name     string
		newWaits int64
		waiting  int32
		want     int
	}{
		{"writers began waiting", 2, 2, 2},
		{"the flush failed, its retry: the same writers still wait", 0, 2, 2},
		{"the next generation, in the same flush: still waiting", 0, 2, 2},
		{"they got room and nobody waits", 0, 0, 1},
		{"a writer waited and got room before the flush", 1, 0, 2},
	}
	fl := &flusher{workers: 2, waits: func() int64 { return waits }, waiting: func() int32 { return waiting }}
	for _, st := range steps {
		waits += st.newWaits
		waiting = st.waiting
		assert.Equal(t, st.want, fl.workersNow(), st.name)
	}
}

// An intent names its files relative to the data directory: read in
// another directory it names the files there; a relative path that leaves
// the directory is refused, and an earlier build's paths are read as they
// are.
func TestFlushIntentPathsAreTheDataDirs(t *testing.T) {
	in := &flushIntent{LastSeq: 7, Files: []publishStep{{
		Temp:  filepath.Join("/a", systemDirName, tmpDirName, "f.parquet.tmp"),
		Final: filepath.Join("/a", "default", "logs", "date=2026-11-22", "hour=9", "f.parquet"),
	}}}
	data, err := in.encode("/a")
	require.NoError(t, err)
	got, err := decodeFlushIntent(data, "/b")
	require.NoError(t, err)
	assert.Equal(t, &flushIntent{LastSeq: 7, Files: []publishStep{{
		Temp:  filepath.Join("/b", systemDirName, tmpDirName, "f.parquet.tmp"),
		Final: filepath.Join("/b", "default", "logs", "date=2026-11-22", "hour=9", "f.parquet"),
	}}}, got)

	_, err = decodeFlushIntent([]byte(`{"last_seq":7,"relative":true,"files":[{"temp":"../x.tmp","final":"default/x.parquet"}]}`), "/b")
	assert.ErrorContains(t, err, "leaves the data directory")

	old := []byte(`{"last_seq":7,"files":[{"temp":"/a/t.tmp","final":"/a/f.parquet"}]}`)
	got, err = decodeFlushIntent(old, "/b")
	require.NoError(t, err)
	assert.Equal(t, []publishStep{{Temp: "/a/t.tmp", Final: "/a/f.parquet"}}, got.Files)
}
