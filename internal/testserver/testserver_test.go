package testserver

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoopbackPortsAreDistinctAndOutsideTheEphemeralRange: a port handed
// to one child process is never handed to another, and no outgoing
// connection can hold it, since the kernel picks those from its ephemeral
// range.
func TestLoopbackPortsAreDistinctAndOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	require.Greater(t, hi-lo, 1000)
	seen := map[int]bool{}
	for range 300 {
		p := LoopbackPort(t)
		assert.False(t, seen[p], "port %d handed out twice", p)
		seen[p] = true
		assert.True(t, p >= lo && p < hi, "port %d outside [%d, %d)", p, lo, hi)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	ephemeral := l.Addr().(*net.TCPAddr).Port
	assert.False(t, ephemeral >= lo && ephemeral < hi, "the kernel's own pick %d is in our range [%d, %d)", ephemeral, lo, hi)
}

func TestLoopbackAddrListens(t *testing.T) {
	a := LoopbackAddr(t)
	l, err := net.Listen("tcp", a)
	require.NoError(t, err, "the address is free")
	l.Close()
	_, port, err := net.SplitHostPort(a)
	require.NoError(t, err)
	_, err = strconv.Atoi(port)
	assert.NoError(t, err)
}
