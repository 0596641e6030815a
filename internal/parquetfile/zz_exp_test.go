package parquetfile_test

import (
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func BenchmarkZZOptions(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	msg := plainStrings(13000, func() string { return pick(r, newLogLines)(r) })[:1<<20]
	ids := plainStrings(30000, func() string {
		return hex(r, 8) + "-" + hex(r, 4) + "-4" + hex(r, 3) + "-a" + hex(r, 3) + "-" + hex(r, 12)
	})[:1<<20]
	base := []zstd.EOption{zstd.WithZeroFrames(true), zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithAllLitEntropyCompression(true), zstd.WithWindowSize(2 << 20)}
	opts := map[string][]zstd.EOption{
		"today":   base,
		"nocrc":   append(append([]zstd.EOption{}, base...), zstd.WithEncoderCRC(false)),
		"lowmem":  append(append([]zstd.EOption{}, base...), zstd.WithLowerEncoderMem(true)),
		"win256k": append(append([]zstd.EOption{}, base...), zstd.WithWindowSize(256<<10)),
		"nolitall": append(append([]zstd.EOption{}, base...), zstd.WithAllLitEntropyCompression(false)),
		"nocrc-nolitall": append(append([]zstd.EOption{}, base...), zstd.WithEncoderCRC(false), zstd.WithAllLitEntropyCompression(false)),
		"dfast":   append(append([]zstd.EOption{}, base...), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(false)),
	}
	for _, p := range []struct {
		name string
		page []byte
	}{{"message", msg}, {"uuid", ids}} {
		for _, name := range []string{"today", "nocrc", "lowmem", "win256k", "nolitall", "nocrc-nolitall", "dfast"} {
			for _, size := range []int{64 << 10, 256 << 10, 1 << 20} {
				b.Run(p.name+"/"+name+"/"+itoa(size>>10)+"k", func(b *testing.B) {
					enc, _ := zstd.NewWriter(nil, opts[name]...)
					dst := make([]byte, 0, 2<<20)
					b.SetBytes(1 << 20)
					var n int
					for b.Loop() {
						n = 0
						for at := 0; at < len(p.page); at += size {
							dst = enc.EncodeAll(p.page[at:at+size], dst[:0])
							n += len(dst)
						}
					}
					b.ReportMetric(float64(n), "bytes")
				})
			}
		}
	}
}

func itoa(n int) string {
	s := ""
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}
