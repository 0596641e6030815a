package layout_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage/layout"
	"github.com/arc-otel/arc-otel/storage/storagetest"
)

// partition makes a partition folder with one file and its trash folder.
func partition(t *testing.T) (dir, trash string) {
	t.Helper()
	data := t.TempDir()
	rel := "db/cpu/date=2026-11-27/hour=5"
	trashRel := layout.SystemDirName + "/" + layout.TrashDirName
	mkdirs(t, data, []string{trashRel}, []string{rel + "/a.parquet"})
	return filepath.Join(data, rel), filepath.Join(data, trashRel)
}

// Discard takes a partition out of sight in one rename, syncs its parent,
// then deletes it. Where it fails says where the partition is: before the
// rename it is still in sight, whole; after it, it waits in the trash,
// out of sight, for EmptyTrash (which a restart runs). retired runs only
// once the rename is durable.
func TestDiscard(t *testing.T) {
	tests := []struct {
		name       string
		fs         func(dir string) *faultFS
		err        string // "" when Discard succeeds
		inSight    bool   // the partition is still where readers look
		inTrash    bool   // the partition waits in the trash
		retiredRun bool
	}{
		{"deleted", func(string) *faultFS { return &faultFS{} }, "", false, false, true},
		{"rename fails", func(string) *faultFS { return &faultFS{rename: func(string, string) error { return errInjected }} },
			"retire partition", true, false, false},
		{"sync of the parent fails", func(dir string) *faultFS {
			return &faultFS{syncDir: func(name string) error {
				if name == filepath.Dir(dir) {
					return errInjected
				}
				return nil
			}}
		}, "sync after retiring a partition", false, true, false},
		{"delete fails (a crash after the rename)", func(string) *faultFS {
			return &faultFS{removeAll: func(string) error { return errInjected }}
		}, "delete retired partition", false, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, trash := partition(t)
			retired := 0
			err := layout.Discard(tt.fs(dir), dir, trash, func() {
				retired++
				assert.NoDirExists(t, dir, "out of sight before retired runs")
			})
			if tt.err == "" {
				require.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, errInjected)
				assert.ErrorContains(t, err, tt.err)
			}
			assert.Equal(t, tt.retiredRun, retired == 1, "retired ran %d times", retired)
			if tt.inSight {
				assert.FileExists(t, filepath.Join(dir, "a.parquet"), "the partition stays whole")
			} else {
				assert.NoDirExists(t, dir)
			}
			inTrash := storagetest.DirNames(t, trash)
			if !tt.inTrash {
				assert.Empty(t, inTrash)
				return
			}
			require.Len(t, inTrash, 1)
			assert.FileExists(t, filepath.Join(trash, inTrash[0], "a.parquet"))
			require.NoError(t, layout.EmptyTrash(layout.OSFS{}, trash))
			assert.Empty(t, storagetest.DirNames(t, trash), "EmptyTrash deletes what was left")
			assert.DirExists(t, trash, "the trash folder itself stays")
		})
	}
}

func TestDiscardNamesEachRetiredFolderAnew(t *testing.T) {
	data := t.TempDir()
	trash := filepath.Join(data, "trash")
	a, b := filepath.Join(data, "a"), filepath.Join(data, "b")
	mkdirs(t, data, []string{"trash", "a", "b"}, nil)
	keep := &faultFS{removeAll: func(string) error { return errInjected }}
	assert.Error(t, layout.Discard(keep, a, trash, func() {}))
	assert.Error(t, layout.Discard(keep, b, trash, func() {}))
	assert.Len(t, storagetest.DirNames(t, trash), 2, "two partitions retired at once do not collide in the trash")
}

func TestEmptyTrash(t *testing.T) {
	tests := []struct {
		name  string
		trash func(t *testing.T) string
		fs    *faultFS
		err   string
	}{
		{"no trash folder", func(t *testing.T) string { return filepath.Join(t.TempDir(), "trash") }, &faultFS{}, ""},
		{"empty", func(t *testing.T) string { return t.TempDir() }, &faultFS{}, ""},
		{"partitions and files", filledTrash, &faultFS{}, ""},
		{"the trash cannot be listed", filledTrash, &faultFS{readDir: func(string) ([]os.DirEntry, error) { return nil, errInjected }}, "list trash dir"},
		{"a delete fails", filledTrash, &faultFS{removeAll: func(string) error { return errInjected }}, "delete retired partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trash := tt.trash(t)
			err := layout.EmptyTrash(tt.fs, trash)
			if tt.err != "" {
				assert.ErrorIs(t, err, errInjected)
				assert.ErrorContains(t, err, tt.err)
				assert.NotEmpty(t, storagetest.DirNames(t, trash))
				return
			}
			require.NoError(t, err)
			if _, err := os.Stat(trash); err == nil {
				assert.Empty(t, storagetest.DirNames(t, trash))
			}
		})
	}
}

func filledTrash(t *testing.T) string {
	trash := t.TempDir()
	mkdirs(t, trash, []string{"0a1b2c3d4e5f/empty"}, []string{"0a1b2c3d4e5f/a.parquet", "ffeeddccbbaa/b.parquet", "stray"})
	return trash
}

func TestWriteFileAtomic(t *testing.T) {
	old, data := []byte("old contents"), []byte("new contents, longer than the old")
	tests := []struct {
		name string
		fs   func(path string) *faultFS
		want []byte // what the file holds afterwards
		err  bool
	}{
		{"written", func(string) *faultFS { return &faultFS{} }, data, false},
		{"the temp file cannot be made", func(string) *faultFS {
			return &faultFS{openFile: func(string) (layout.File, error) { return nil, errInjected }}
		}, old, true},
		{"a short write", func(string) *faultFS {
			return &faultFS{openFile: faultyFile(faultFile{write: errInjected})}
		}, old, true},
		{"fsync fails", func(string) *faultFS {
			return &faultFS{openFile: faultyFile(faultFile{sync: errInjected})}
		}, old, true},
		{"rename fails", func(string) *faultFS {
			return &faultFS{rename: func(string, string) error { return errInjected }}
		}, old, true},
		{"the directory's sync fails: the new contents, not yet durable", func(string) *faultFS {
			return &faultFS{syncDir: func(string) error { return errInjected }}
		}, data, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			require.NoError(t, os.WriteFile(path, old, 0o644))
			err := layout.WriteFileAtomic(tt.fs(path), path, data)
			if tt.err {
				assert.ErrorIs(t, err, errInjected)
			} else {
				require.NoError(t, err)
				assert.NoFileExists(t, path+".tmp", "the temp file became the file")
			}
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "old or new, never a mix")
		})
	}
}

// faultyFile opens the real file and wraps it so that it fails as f does.
func faultyFile(f faultFile) func(string) (layout.File, error) {
	return func(name string) (layout.File, error) {
		real, err := layout.OSFS{}.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, err
		}
		f.File = real
		return &f, nil
	}
}

// shortWriter takes at most n bytes a call and then fails.
type shortWriter struct {
	buf bytes.Buffer
	n   int
}

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		w.buf.Write(p[:w.n])
		return w.n, errInjected
	}
	return w.buf.Write(p)
}

func TestCountingWriter(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   int64
		err    bool
	}{
		{"nothing", 100, nil, 0, false},
		{"every write counted", 100, []string{"abc", "", "defgh"}, 8, false},
		{"a short write counts what reached the file", 4, []string{"abc", "defgh"}, 7, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &shortWriter{n: tt.limit}
			cw := &layout.CountingWriter{W: w}
			var err error
			for _, s := range tt.writes {
				if _, err = cw.Write([]byte(s)); err != nil {
					break
				}
			}
			assert.Equal(t, tt.err, err != nil)
			assert.Equal(t, tt.want, cw.N)
			assert.EqualValues(t, w.buf.Len(), cw.N, "what the file got")
		})
	}
}

// MkdirDurable fsyncs the parent of each folder it creates, and only
// those: a folder that exists is left as it is.
func TestMkdirDurable(t *testing.T) {
	root := t.TempDir()
	var synced []string
	fsys := &faultFS{syncDir: func(name string) error {
		synced = append(synced, name)
		return layout.OSFS{}.SyncDir(name)
	}}
	require.NoError(t, layout.MkdirDurable(fsys, filepath.Join(root, "a", "b", "c")))
	assert.DirExists(t, filepath.Join(root, "a", "b", "c"))
	assert.ElementsMatch(t, []string{root, filepath.Join(root, "a"), filepath.Join(root, "a", "b")}, synced)

	synced = nil
	require.NoError(t, layout.MkdirDurable(fsys, filepath.Join(root, "a", "b", "d")))
	assert.Equal(t, []string{filepath.Join(root, "a", "b")}, synced, "only the new folder's parent")

	synced = nil
	require.NoError(t, layout.MkdirDurable(fsys, filepath.Join(root, "a")))
	assert.Empty(t, synced)

	fsys.syncDir = func(string) error { return errInjected }
	assert.ErrorIs(t, layout.MkdirDurable(fsys, filepath.Join(root, "e")), errInjected)
}
