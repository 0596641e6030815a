package e2e

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFlagsOfTheBuiltSidecar runs the arcstore binary make builds with the
// flags a user types: sizes with units, -pprof-addr serving the profiler on
// its own listener (and not on the data listener), and -version printing
// the version the Makefile stamped in.
func TestFlagsOfTheBuiltSidecar(t *testing.T) {
	bin := tool(t, "ARCSTORE_BIN", "arcstore")
	out, err := exec.Command(bin, "-version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Regexp(t, `^arcstore \S+ \(go[0-9.]+, \w+/\w+\)\n$`, string(out))
	if strings.HasPrefix(bin, filepath.Join(repoRoot, "bin")) && exec.Command("git", "-C", repoRoot, "describe", "--always").Run() == nil {
		assert.NotContains(t, string(out), "devel", "make build stamps the git version in")
	}

	pprof := addr(freePort(t))
	sc := startSidecar(t, filepath.Join(t.TempDir(), "data"), addr(freePort(t)), addr(freePort(t)),
		"-flush-bytes", "8MiB", "-max-buffer-bytes", "64MiB", "-max-wal-bytes", "1GiB", "-pprof-addr", pprof)
	get := func(url string) int {
		resp, err := http.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("http://"+pprof+"/debug/pprof/cmdline"))
	assert.Equal(t, http.StatusNotFound, get("http://"+sc.http+"/debug/pprof/cmdline"), "the data listener does not serve the profiler")
	sc.stop(t, 30*time.Second)

	out, err = exec.Command(bin, "-data-dir", t.TempDir(), "-max-wal-bytes", "4 gigs").CombinedOutput()
	assert.Error(t, err)
	assert.Contains(t, string(out), `invalid value "4 gigs" for flag -max-wal-bytes`)
}
