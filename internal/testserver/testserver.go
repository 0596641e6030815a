// Package testserver runs the real servers tests talk to (ClickHouse,
// an S3-compatible bucket) as child processes on loopback: started with
// their output in a log file, waited for until they listen, killed at the
// end or to make an outage. Which binary and flags is each caller's own.
package testserver

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// listenWait bounds how long a server may take to accept connections.
const listenWait = 30 * time.Second

// RepoRoot is the repository's top directory, where .tools lives.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// LoopbackAddr returns 127.0.0.1:PORT with a port free at the time of the
// call. The port comes from below the kernel's ephemeral range, at random,
// and is never handed out twice by this process: a port the kernel gave to
// a closed listener (127.0.0.1:0) is the next one it gives again, and any
// outgoing connection of a concurrent test may take it as its own end,
// which made a child process fail to bind one test run in many.
func LoopbackAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(LoopbackPort(t))
}

// LoopbackPort is LoopbackAddr's port.
func LoopbackPort(t testing.TB) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	lo, hi := portRange()
	for range 1000 {
		p := lo + rand.IntN(hi-lo)
		if ports.given[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue // in use by another process
		}
		l.Close()
		ports.given[p] = true
		return p
	}
	t.Fatalf("no free loopback port in [%d, %d)", lo, hi)
	return 0
}

var ports = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// portRange is the ports below the ephemeral range (Linux's
// ip_local_port_range, 32768 by default) and above the well-known ones.
func portRange() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return lo, hi
	}
	switch {
	case first-lo >= 5000:
		return lo, first
	case 65536-(last+1) >= 5000:
		return last + 1, 65536
	}
	return lo, hi // the ephemeral range is most ports: the bind check is all there is
}

// Process is a started server.
type Process struct {
	cmd *exec.Cmd
	log *os.File
}

// Start runs cmd with its output appended to logPath and waits until addr
// accepts connections. The error carries the log when it never does.
func Start(cmd *exec.Cmd, logPath, addr string) (*Process, error) {
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open server log: %w", err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	p := &Process{cmd: cmd, log: log}
	for deadline := time.Now().Add(listenWait); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return p, nil
		}
	}
	p.Stop()
	out, _ := os.ReadFile(logPath)
	return nil, fmt.Errorf("%s did not listen on %s within %s: %s", filepath.Base(cmd.Path), addr, listenWait, out)
}

// Pid is the server's process id while it runs.
func (p *Process) Pid() (int, bool) {
	if p == nil || p.cmd == nil {
		return 0, false
	}
	return p.cmd.Process.Pid, true
}

// Stop kills the server; its data stay. Stopping twice is a no-op.
func (p *Process) Stop() {
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.log.Close()
	p.cmd = nil
}

// CannotStart fails the test when requireEnv is 1 (make test sets it, so
// CI runs every such test) and otherwise skips it saying why, so that
// `go test ./...` on a machine without the tools still runs the rest.
func CannotStart(t testing.TB, requireEnv, server, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(requireEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skipf("no %s for this test (set %s=1 to fail instead): %s", server, requireEnv, msg)
}
