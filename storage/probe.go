package storage

import (
	"crypto/rand"
	"encoding/hex"
)

// probeName names one writability probe (Writable) in the temp folder.
// Each probe has its own: with a shared name, concurrent /ready checks
// removed each other's file and answered 503 for a writable disk. Start-up
// clears the temp folder, so a probe a crash left behind does not stay.
func probeName() string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return ".probe-" + hex.EncodeToString(r[:])
}
