package e2e

import (
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallDisk mounts a tmpfs of the given size for the test, or skips it
// where mounting is not allowed (CI on our machine class runs as root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file until the disk has no room left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
			return
		}
	}
}

// ready is /ready's status and answer.
func ready(t *testing.T, httpAddr string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + httpAddr + "/ready")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestDiskFull fills the sidecar's disk under load: writes are refused with
// a retryable error below -min-free-disk (/ready says why) and nothing is
// acknowledged that is not durable; once space returns the sidecar
// recovers on its own and every span the collector acknowledged is stored
// exactly once.
func TestDiskFull(t *testing.T) {
	disk := smallDisk(t, "24m")
	dataDir := filepath.Join(disk, "data")
	grpcAddr, httpAddr := addr(freePort(t)), addr(freePort(t))
	// The default floor (512 MiB) is more than this disk.
	sc := startSidecar(t, dataDir, grpcAddr, httpAddr, "-flush-interval", "300ms", "-min-free-disk", "4MiB")
	col := startCollector(t, grpcAddr)
	sender, stop := startLoad(t, col.otlpGRPC, 1, 100, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	code, body := ready(t, httpAddr)
	require.Equal(t, http.StatusOK, code, body)
	filler := filepath.Join(disk, "filler")
	fill(t, filler)
	code, body = ready(t, httpAddr)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "writes refused: the disk is nearly full", "/ready says why")
	time.Sleep(2 * time.Second)
	require.NoError(t, os.Remove(filler))
	require.Eventually(t, func() bool { code, _ := ready(t, httpAddr); return code == http.StatusOK }, 10*time.Second, 50*time.Millisecond, "ready again once space returns")
	time.Sleep(time.Second)
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second)

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("disk full: spans acknowledged %d, lost %d, duplicated %d", sender.ackedCount(), lost, dup)
	require.Positive(t, sender.ackedCount())
	assert.Zero(t, lost)
	assert.Zero(t, dup)
}
