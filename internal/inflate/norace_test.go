//go:build !race

package inflate_test

const raceEnabled = false
