package stack

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseUsage(t *testing.T) {
	// A command name with a space and a parenthesis, as /proc allows.
	stat := []byte("1234 (my (proc) x) S 1 1234 1234 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 8 0 100 1000000 2000 18446744073709551615")
	status := []byte("Name:\tmy\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t8\n")
	u, err := parseUsage(stat, status, 100)
	require.NoError(t, err)
	assert.Equal(t, 3.0, u.CPUSeconds, "utime 250 + stime 50 ticks at 100 Hz")
	assert.Equal(t, int64(100<<20), u.RSSBytes)
	assert.Equal(t, int64(200<<20), u.PeakRSSBytes)

	_, err = parseUsage([]byte("garbage"), status, 100)
	assert.Error(t, err)
}

func TestReadUsageOfThisProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, u.RSSBytes)
	assert.GreaterOrEqual(t, u.PeakRSSBytes, u.RSSBytes)
}

func TestCollectorConfigExports(t *testing.T) {
	arc := collectorConfig(Options{Export: ExportArc, QueueSize: 5000}, "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", 5)
	assert.Contains(t, arc, `endpoint: "127.0.0.1:3"`)
	assert.Contains(t, arc, "queue_size: 5000, block_on_overflow: true")
	assert.Contains(t, arc, "exporters: [arc]")
	nop := collectorConfig(Options{Export: ExportNop}, "127.0.0.1:1", "127.0.0.1:2", "", "127.0.0.1:4", 5)
	assert.Contains(t, nop, "nop: {}")
	assert.Contains(t, nop, "exporters: [nop]")
	assert.Contains(t, nop, "processors: [memory_limiter]", "the ceiling runs the same processors")
}

func TestGRPCTarget(t *testing.T) {
	work := t.TempDir()
	cwd, err := os.Getwd()
	require.NoError(t, err)
	for _, tt := range []struct {
		name, work, transport, want string
	}{
		{"default", work, "", "127.0.0.1:8815"},
		{"tcp", work, TransportTCP, "127.0.0.1:8815"},
		{"unix", work, TransportUnix, "unix://" + filepath.Join(work, SocketFile)},
		{"unix, a relative folder", "results/arc", TransportUnix, "unix://" + filepath.Join(cwd, "results/arc", SocketFile)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := grpcTarget(Options{WorkDir: tt.work, Transport: tt.transport}, 8815)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err = Start(Options{WorkDir: work, Export: ExportArc, Transport: "vsock"})
	assert.ErrorContains(t, err, `transport "vsock"`)
}

func TestProcState(t *testing.T) {
	for stat, want := range map[string]string{
		"1234 (my (proc) x) S 1 1234": "S",
		"99 (arc) Z 1 99":             "Z",
	} {
		got, err := procState([]byte(stat))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := procState([]byte("garbage"))
	assert.Error(t, err)
}

// TestTerminateCountsTheLastFlush: a server that works after SIGTERM
// until it exits (its shutdown flush) is charged all of that CPU when it
// is left a zombie, whose final CPU times /proc still gives, not only what
// the last reading before its exit saw.
func TestTerminateCountsTheLastFlush(t *testing.T) {
	cmd := exec.Command("sh", "-c", `trap 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 0' TERM; echo ready; while :; do sleep 0.05; done`)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)

	u, err := Terminate(cmd.Process.Pid, 30*time.Second)
	require.NoError(t, err)
	final, err := ReadUsage(cmd.Process.Pid) // the zombie's
	require.NoError(t, err)
	assert.Greater(t, final.CPUSeconds, 0.05, "it worked after SIGTERM")
	assert.Equal(t, final.CPUSeconds, u.CPUSeconds, "every tick up to its exit")
	assert.Positive(t, u.PeakRSSBytes, "read while it ran")
}

// TestTerminate stops processes this one started only to observe them, as
// a -target server is: one that exits on SIGTERM (reaped or left a
// zombie), one that ignores it.
func TestTerminate(t *testing.T) {
	tests := []struct {
		name   string
		script string
		reap   bool
		err    string
	}{
		{name: "exits and is reaped", script: "exec sleep 60", reap: true},
		{name: "exits and stays a zombie", script: "exec sleep 60"},
		{name: "ignores SIGTERM", script: `trap "" TERM; echo ready; while :; do sleep 0.05; done`, reap: true, err: "did not exit within"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tt.script)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			if strings.Contains(tt.script, "echo ready") {
				// SIGTERM only once the trap is set.
				line, err := bufio.NewReader(out).ReadString('\n')
				require.NoError(t, err)
				require.Equal(t, "ready\n", line)
			}
			pid := cmd.Process.Pid
			waited := make(chan struct{})
			if tt.reap {
				go func() { _ = cmd.Wait(); close(waited) }()
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				if tt.reap {
					<-waited
				} else {
					_ = cmd.Wait()
				}
			})
			timeout := 30 * time.Second
			if tt.err != "" {
				timeout = 300 * time.Millisecond
			}
			u, err := Terminate(pid, timeout)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Positive(t, u.PeakRSSBytes, "read while it ran")
			gone, err := exited(pid)
			require.NoError(t, err)
			assert.True(t, gone)
		})
	}
	_, err := Terminate(1<<30, time.Second)
	assert.Error(t, err, "no such process")
}

// The collector runs with the GC target make run and the image give it,
// unless the run's environment sets one; the started process sees it next
// to the rest of the environment.
func TestCollectorEnv(t *testing.T) {
	t.Setenv("ARCLOAD_TEST_KEEP", "kept")
	t.Setenv("GOGC", "") // restored after the test
	require.NoError(t, os.Unsetenv("GOGC"))
	env := collectorEnv()
	assert.Equal(t, []string{"GOGC=400"}, env)

	dir := t.TempDir()
	p, err := StartProcEnv(dir, "env", "/bin/sh", env, "-c", `echo "gogc=$GOGC keep=$ARCLOAD_TEST_KEEP"`)
	require.NoError(t, err)
	<-p.done
	out, err := os.ReadFile(p.Log)
	require.NoError(t, err)
	assert.Equal(t, "gogc=400 keep=kept\n", string(out))

	t.Setenv("GOGC", "150")
	assert.Empty(t, collectorEnv(), "an explicit $GOGC is inherited as it is")
}
