package storage

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// BenchmarkBatchID compares the batch identity (XXH3-128, NewBatchID) with
// SHA-256 (LegacyBatchID, earlier versions' identity) and the other
// alternatives considered in docs/PERFORMANCE.md, on bodies the size of
// record batches (1000-row batches run from tens of KiB to about 1 MiB).
func BenchmarkBatchID(b *testing.B) {
	for _, size := range []int{16 << 10, 256 << 10, 1 << 20} {
		body := make([]byte, size)
		rng := rand.NewChaCha8([32]byte{1})
		_, _ = rng.Read(body)
		header := body[:512]
		for _, h := range []struct {
			name string
			fn   func() [32]byte
		}{
			{"NewBatchID-xxh3-128", func() [32]byte { return NewBatchID("default", "traces", header, body) }},
			{"LegacyBatchID-sha256", func() [32]byte { return LegacyBatchID("default", "traces", header, body) }},
			{"sha256-oneshot", func() [32]byte { return sha256.Sum256(body) }},
			{"blake2b-256", func() [32]byte {
				d, _ := blake2b.New256(nil)
				d.Write([]byte("default\x00traces\x00"))
				d.Write(header)
				d.Write(body)
				var id [32]byte
				d.Sum(id[:0])
				return id
			}},
		} {
			b.Run(fmt.Sprintf("%s/%dKiB", h.name, size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(size))
				for b.Loop() {
					_ = h.fn()
				}
			})
		}
	}
}
