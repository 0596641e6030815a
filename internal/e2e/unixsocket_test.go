package e2e

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnixSocket sends spans through the collector to a sidecar that
// listens on a Unix socket, with the exporter's endpoint the same unix://
// target and no tls section (plaintext, as for any loopback endpoint).
// The sidecar is killed with SIGKILL in the middle, which leaves its
// socket file behind: the next start must remove it and listen again,
// while a second sidecar must refuse the socket the first is listening
// on. Every acknowledged span is in Parquet exactly once, and a clean
// stop removes the socket file.
func TestUnixSocket(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "arcstore.sock")
	target := "unix://" + sock
	httpAddr := addr(freePort(t))
	args := []string{"-flush-interval", "300ms"}
	sc := startSidecar(t, dataDir, target, httpAddr, args...)
	fi, err := os.Lstat(sock)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSocket, fi.Mode().Type())
	assert.Equal(t, fs.FileMode(0o660), fi.Mode().Perm())

	t.Run("a second sidecar refuses the socket", func(t *testing.T) {
		other := start(t, "arcstore-2", tool(t, "ARCSTORE_BIN", "arcstore"),
			"-data-dir", filepath.Join(dir, "data2"), "-grpc-addr", target, "-http-addr", addr(freePort(t)))
		select {
		case <-other.done:
		case <-time.After(30 * time.Second):
			t.Fatal("a second sidecar on the same socket did not exit")
		}
		assert.Error(t, other.err)
		out, err := os.ReadFile(other.log)
		require.NoError(t, err)
		assert.Contains(t, string(out), "another process is listening on "+sock)
		assert.Contains(t, string(out), "-grpc-addr")
	})

	withoutTLS := strings.Replace(collectorConfig, "    tls: {insecure: true}\n", "", 1)
	require.NotEqual(t, collectorConfig, withoutTLS)
	col := startCollectorFrom(t, withoutTLS, target, addr(freePort(t)), "\n"+memoryQueue)
	sender, stop := startLoad(t, col.otlpGRPC, 2, 100, 10*time.Millisecond)
	time.Sleep(time.Second)
	sc.kill()
	_, err = os.Lstat(sock)
	require.NoError(t, err, "SIGKILL leaves the socket file")
	sc = startSidecar(t, dataDir, target, httpAddr, args...)
	time.Sleep(time.Second)
	stop()
	col.waitDrained(t, 120*time.Second)
	sc.stop(t, 30*time.Second)
	_, err = os.Lstat(sock)
	assert.ErrorIs(t, err, fs.ErrNotExist, "a clean stop removes the socket file")

	lost, dup := checkSpans(t, dataDir, sender)
	t.Logf("unix socket: spans acknowledged %d, lost %d, duplicated %d", len(sender.acked), lost, dup)
	require.Positive(t, len(sender.acked))
	assert.Zero(t, lost, "acknowledged spans missing from Parquet")
	assert.Zero(t, dup, "spans stored more than once")
}
