//go:build race

package inflate_test

// raceEnabled: the race detector makes sync.Pool drop some of what it is
// given, so allocation counts are not checked under it.
const raceEnabled = true
