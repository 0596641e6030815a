package receiver

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/arc-otel/arc-otel/storage"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(t *testing.T, path string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, path, nil)
	require.NoError(t, err)
	return r
}

// readyRace answers a second GET /ready from inside the first one's probe
// file creation: two concurrent probes, interleaved the worst way.
type readyRace struct {
	storage.OSFS
	url   string
	armed atomic.Bool
	inner atomic.Int32 // status of the nested probe
}

func (f *readyRace) OpenFile(name string, flag int, perm os.FileMode) (storage.File, error) {
	file, err := os.OpenFile(name, flag, perm)
	if err == nil && strings.Contains(filepath.Base(name), "probe") && f.armed.CompareAndSwap(true, false) {
		if resp, gerr := http.Get(f.url + PathReady); gerr == nil {
			resp.Body.Close()
			f.inner.Store(int32(resp.StatusCode))
		}
	}
	return file, err
}

// TestConcurrentReadyProbes: concurrent /ready probes shared one probe file
// and removed each other's, answering 503 for a writable disk.
func TestConcurrentReadyProbes(t *testing.T) {
	fsys := &readyRace{}
	store, err := storage.Open(storage.Options{DataDir: t.TempDir(), Logger: quiet, FS: fsys, FlushInterval: time.Hour})
	require.NoError(t, err)
	defer store.Close()
	srv := httptest.NewServer(NewHTTPHandler(store))
	defer srv.Close()
	fsys.url = srv.URL
	fsys.armed.Store(true)
	resp, err := http.Get(srv.URL + PathReady)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the outer probe")
	assert.EqualValues(t, http.StatusOK, fsys.inner.Load(), "the probe that ran inside it")
}
