package storagetest

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// DirNames returns the names of dir's entries, by name.
func DirNames(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
