// Package pgtest starts a real PostgreSQL server for tests (Debian's
// postgresql package, which make tools installs): a fresh cluster in a
// temporary directory, on loopback, trusting local connections, with one
// database for the Iceberg catalog.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/arc-otel/arc-otel/internal/testserver"
)

// RequireEnv, set to 1 (make test sets it), makes a server that cannot
// start fail the test; otherwise the test is skipped and says why.
const RequireEnv = "ARC_REQUIRE_POSTGRES"

// BinEnv overrides the folder of PostgreSQL's binaries (initdb, postgres).
const BinEnv = "POSTGRES_BIN"

// Database is the database the tests' catalogs live in; User the superuser.
const (
	Database = "lake"
	User     = "arc"
)

// Server is a running PostgreSQL.
type Server struct {
	// URI is the catalog's postgres:// URI.
	URI  string
	proc *testserver.Process
}

// Bin finds PostgreSQL's binaries: $POSTGRES_BIN, then Debian's newest
// /usr/lib/postgresql/<version>/bin.
func Bin() (string, bool) {
	if p := os.Getenv(BinEnv); p != "" {
		return p, true
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) < version(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i], true
		}
	}
	return "", false
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// Start runs a fresh server until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, ok := Bin()
	if !ok {
		unavailable(t, "PostgreSQL not found: run `make tools` (apt-get install postgresql) or set "+BinEnv)
	}
	// PostgreSQL refuses to run as root: then it runs as the postgres user,
	// in a folder of its own.
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	cred, err := credential(dir)
	if err != nil {
		unavailable(t, err.Error())
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", User, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		unavailable(t, fmt.Sprintf("initdb: %v: %s", err, out))
	}
	addr := testserver.LoopbackAddr(t)
	port := addr[strings.LastIndex(addr, ":")+1:]
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", port, "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	proc, err := testserver.Start(cmd, filepath.Join(dir, "postgres.log"), addr)
	if err != nil {
		unavailable(t, err.Error())
	}
	t.Cleanup(proc.Stop)
	s := &Server{URI: fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", User, addr, Database), proc: proc}
	admin := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(fmt.Sprintf("postgres://%s@%s/postgres?sslmode=disable", User, addr))))
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The server listens before it takes queries ("the database system is
	// starting up").
	for {
		_, err := admin.ExecContext(ctx, "CREATE DATABASE "+Database)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("create database: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

// credential is who the server runs as: the postgres user when the test
// runs as root (the folder given to it), else the test's own user.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to run PostgreSQL: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatal(why)
	}
	t.Skip(why)
}
