// Package chtest starts a real ClickHouse server for tests: the engine of
// chdb-core (installed into .tools/chdb by make tools), served over the
// native and HTTP protocols by tools/chserver.py.
package chtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Server is a running ClickHouse.
type Server struct {
	// Native and HTTP are host:port addresses on loopback.
	Native, HTTP string
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start runs a server for the test and stops it at cleanup. Without chdb
// installed the test fails with the command that installs it: CI runs
// make test, which does.
func Start(t testing.TB) *Server {
	t.Helper()
	root := repoRoot()
	chdb := filepath.Join(root, ".tools", "chdb")
	if _, err := os.Stat(filepath.Join(chdb, "chdb")); err != nil {
		t.Fatalf("chdb-core not found under %s: run `make tools`", chdb)
	}
	tcp, http := freePort(t), freePort(t)
	dir := t.TempDir()
	cmd := exec.Command("python3", filepath.Join(root, "tools", "chserver.py"), dir, strconv.Itoa(tcp), strconv.Itoa(http))
	cmd.Env = append(os.Environ(), "PYTHONPATH="+chdb)
	log, err := os.Create(filepath.Join(dir, "chserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chserver: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		log.Close()
	})
	s := &Server{Native: "127.0.0.1:" + strconv.Itoa(tcp), HTTP: "127.0.0.1:" + strconv.Itoa(http)}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", s.Native); err == nil {
			c.Close()
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "chserver.log"))
	t.Fatalf("ClickHouse did not listen on %s: %s", s.Native, fmt.Sprint(string(out)))
	return nil
}
