// Package chtest starts a real ClickHouse server for tests: the engine of
// chdb-core (installed into .tools/chdb by make tools), served over the
// native and HTTP protocols by tools/chserver.py.
package chtest

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arc-otel/arc-otel/internal/testserver"
)

// Server is a running ClickHouse.
type Server struct {
	// Native and HTTP are host:port addresses on loopback.
	Native, HTTP string

	t    testing.TB
	dir  string
	proc *testserver.Process
}

// RequireEnv, set to 1 (make test sets it), makes a server that cannot
// start fail the test; otherwise the test is skipped and says why, so that
// `go test ./...` on a machine without the tools still runs the rest.
const RequireEnv = "ARC_REQUIRE_CLICKHOUSE"

// Start runs a server for the test and stops it at cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir(), Native: testserver.LoopbackAddr(t), HTTP: testserver.LoopbackAddr(t)}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() {
	s.t.Helper()
	root := testserver.RepoRoot()
	chdb := filepath.Join(root, ".tools", "chdb")
	if _, err := os.Stat(filepath.Join(chdb, "chdb")); err != nil {
		s.cannotStart("chdb-core (ClickHouse 26.9) not found under %s: run `make tools`", chdb)
	}
	cmd := exec.Command("python3", filepath.Join(root, "tools", "chserver.py"), s.dir, port(s.Native), port(s.HTTP))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+chdb)
	proc, err := testserver.Start(cmd, filepath.Join(s.dir, "chserver.log"), s.Native)
	if err != nil {
		s.cannotStart("%v", err)
	}
	s.proc = proc
	// chserver.py starts the HTTP listener after the native one: a test
	// that queried over HTTP as soon as the native port answered was
	// refused now and then.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", s.HTTP)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			proc.Stop()
			s.cannotStart("no HTTP listener on %s: %v", s.HTTP, err)
		}
	}
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func (s *Server) cannotStart(format string, args ...any) {
	s.t.Helper()
	testserver.CannotStart(s.t, RequireEnv, "ClickHouse server", format, args...)
}

// Stop kills the server (an outage, or the end of the test). Its data stay.
func (s *Server) Stop() { s.proc.Stop() }

// Restart starts a stopped server again on the same ports and data.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

// Query runs sql over HTTP and returns the answer (TabSeparated unless the
// query says otherwise).
func (s *Server) Query(sql string) (string, error) {
	resp, err := http.Post("http://"+s.HTTP+"/", "text/plain", strings.NewReader(sql))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("clickhouse: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}

// MustQuery is Query that fails the test on an error and trims the answer.
func (s *Server) MustQuery(sql string) string {
	s.t.Helper()
	out, err := s.Query(sql)
	if err != nil {
		s.t.Fatalf("%s: %v", sql, err)
	}
	return strings.TrimSpace(out)
}

// CPUTime is the CPU time the server has used so far (user + system, from
// /proc), for benchmarks that report the server's cost next to ours.
func (s *Server) CPUTime() (time.Duration, error) {
	pid, ok := s.proc.Pid()
	if !ok {
		return 0, fmt.Errorf("server is stopped")
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", rest)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc stat: %q", rest)
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks, nil
}
