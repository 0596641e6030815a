package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// unixPrefix starts a -grpc-addr that names a Unix socket, in the target
// syntax of gRPC clients (the exporter's endpoint): unix:///abs/path or
// unix:path.
const unixPrefix = "unix:"

// socketMode lets the owner and the group connect (connecting needs write
// permission): a collector in the sidecar's group, nobody else.
const socketMode fs.FileMode = 0o660

// maxSocketPath is the longest socket path Linux binds: sun_path holds 108
// bytes with the terminating NUL.
const maxSocketPath = 107

// staleDialTimeout bounds the probe of an existing socket file: a process
// that listens answers at once, a stale file refuses at once.
const staleDialTimeout = time.Second

// listenAddr is a parsed listen flag: network "tcp" or "unix".
type listenAddr struct {
	network, address string
}

// parseGRPCAddr reads -grpc-addr: host:port, or a Unix socket path after
// unixPrefix.
func parseGRPCAddr(s string) (listenAddr, error) {
	rest, ok := strings.CutPrefix(s, unixPrefix)
	if !ok {
		_, port, err := net.SplitHostPort(s)
		if err == nil {
			_, err = strconv.ParseUint(port, 10, 16)
		}
		if err != nil {
			return listenAddr{}, fmt.Errorf("-grpc-addr %q: want host:port or unix:///path/to.sock: %w", s, err)
		}
		return listenAddr{"tcp", s}, nil
	}
	path := rest
	if auth, ok := strings.CutPrefix(rest, "//"); ok {
		// unix://authority/path: gRPC clients refuse an authority, and
		// unix://relative would silently drop its first element.
		if !strings.HasPrefix(auth, "/") {
			return listenAddr{}, fmt.Errorf("-grpc-addr %q: a unix:// path must be absolute (unix:///path/to.sock)", s)
		}
		path = auth
	}
	switch {
	case path == "":
		return listenAddr{}, fmt.Errorf("-grpc-addr %q: no socket path (unix:///path/to.sock)", s)
	case len(path) > maxSocketPath:
		return listenAddr{}, fmt.Errorf("-grpc-addr %q: socket path longer than %d bytes, the most a Unix socket address holds", s, maxSocketPath)
	}
	return listenAddr{"unix", path}, nil
}

// listen opens a listener. A Unix socket file left by a process that
// ended without closing it (a crash, SIGKILL) is removed first, but only
// when nothing answers on it; closing the listener removes the file.
func listen(a listenAddr) (net.Listener, error) {
	if a.network != "unix" {
		return net.Listen(a.network, a.address)
	}
	if err := removeStaleSocket(a.address); err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", a.address)
	if err != nil {
		return nil, err
	}
	// Until this chmod the socket has the umask's mode; the default umask
	// (022) grants nobody but the owner write, so nobody else connects.
	if err := os.Chmod(a.address, socketMode); err != nil {
		l.Close()
		return nil, fmt.Errorf("set the socket's mode: %w", err)
	}
	return l, nil
}

// removeStaleSocket removes a socket file nothing listens on. It refuses
// a path that is not a socket, and one that another process answers on.
func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check socket path: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("%s exists and is not a socket but %s; remove it or choose another path", path, fileKind(fi.Mode()))
	}
	conn, err := net.DialTimeout("unix", path, staleDialTimeout)
	if err == nil {
		conn.Close()
		return fmt.Errorf("another process is listening on %s (a second arcstore?)", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("check whether %s is in use: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove stale socket: %w", err)
	}
	return nil
}

// fileKind names what a path holds, for an error.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m.Type()&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file of mode " + m.Type().String()
}
