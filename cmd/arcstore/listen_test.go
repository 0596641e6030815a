package main

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestGRPCAddrFlag(t *testing.T) {
	long := "/" + strings.Repeat("d", maxSocketPath) // one byte over
	for _, tt := range []struct {
		name, value   string
		network, addr string // want, when no error
		err           string
	}{
		{"loopback", "127.0.0.1:8815", "tcp", "127.0.0.1:8815", ""},
		{"every interface", ":8815", "tcp", ":8815", ""},
		{"ipv6", "[::1]:8815", "tcp", "[::1]:8815", ""},
		{"a host name", "arcstore:8815", "tcp", "arcstore:8815", ""},
		{"unix, absolute", "unix:///run/arcstore/arcstore.sock", "unix", "/run/arcstore/arcstore.sock", ""},
		{"unix, one slash", "unix:/run/arcstore.sock", "unix", "/run/arcstore.sock", ""},
		{"unix, relative", "unix:arcstore.sock", "unix", "arcstore.sock", ""},
		{"no port", "127.0.0.1", "", "", "missing port"},
		{"a port that is not a number", "127.0.0.1:flight", "", "", "want host:port or unix:///path/to.sock"},
		{"abstract socket", "unix-abstract:arcstore", "", "", "want host:port or unix:///path/to.sock"},
		{"unix without a path", "unix:", "", "", "no socket path"},
		{"unix:// without a path", "unix://", "", "", "must be absolute"},
		{"unix with an authority", "unix://host/arcstore.sock", "", "", "must be absolute"},
		{"socket path too long", "unix://" + long, "", "", "longer than 107 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := parseFlags([]string{"-grpc-addr", tt.value})
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, "-grpc-addr")
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, listenAddr{tt.network, tt.addr}, c.grpc)
			assert.Equal(t, tt.value, c.grpcAddr, "logged and checked as given")
		})
	}
}

// TestListenUnixSocket covers what may already be at the socket path when
// the sidecar starts: a crash leaves its socket file behind, which must
// not keep it from starting, while a live sidecar's socket or a file that
// is not a socket must not be removed.
func TestListenUnixSocket(t *testing.T) {
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, path string) // what is at path before
		err     string
	}{
		{"nothing there", func(*testing.T, string) {}, ""},
		{"stale socket of a crashed process", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false) // as SIGKILL leaves it
			require.NoError(t, l.Close())
		}, ""},
		{"another process listening", func(t *testing.T, path string) {
			l, err := net.Listen("unix", path)
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
		}, "another process is listening on"},
		{"a regular file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(path, []byte("keep me"), 0o600))
		}, "exists and is not a socket but a regular file"},
		{"a directory", func(t *testing.T, path string) {
			require.NoError(t, os.Mkdir(path, 0o700))
		}, "exists and is not a socket but a directory"},
		{"a symbolic link to a socket", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "real.sock")
			l, err := net.Listen("unix", target)
			require.NoError(t, err)
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			require.NoError(t, l.Close())
			require.NoError(t, os.Symlink(target, path))
		}, "exists and is not a socket but a symbolic link"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "arcstore.sock")
			tt.prepare(t, path)
			before, _ := os.Lstat(path)
			c, err := parseFlags([]string{"-grpc-addr", "unix://" + path})
			require.NoError(t, err)
			l, err := listen(c.grpc)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				after, err := os.Lstat(path)
				require.NoError(t, err, "what was there is still there")
				assert.True(t, os.SameFile(before, after), "and is the same file")
				return
			}
			require.NoError(t, err)
			fi, err := os.Lstat(path)
			require.NoError(t, err)
			assert.Equal(t, fs.ModeSocket, fi.Mode().Type())
			assert.Equal(t, socketMode, fi.Mode().Perm(), "owner and group may connect, nobody else")
			assertServesGRPC(t, l, "unix://"+path)
			_, err = os.Lstat(path)
			assert.ErrorIs(t, err, fs.ErrNotExist, "a clean stop removes the socket file")
		})
	}
}

// assertServesGRPC serves a gRPC server on l, calls it through target as
// the exporter's client would, and stops the server.
func assertServesGRPC(t *testing.T, l net.Listener, target string) {
	t.Helper()
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status)
	require.NoError(t, conn.Close())
	gs.GracefulStop()
	require.NoError(t, <-served)
}
