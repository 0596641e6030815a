package inflate_test

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/arc-otel/arc-otel/internal/inflate"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const noLimit = 1 << 30

// reference decodes src with Go's compress/gzip, which reads every member
// of a multi-member stream as Gunzip does.
func reference(src []byte) ([]byte, error) {
	zr, err := stdgzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

func gzipped(t testing.TB, data []byte, level int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, level)
	require.NoError(t, err)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// inputs are data of the shapes a decoder's paths care about: literals
// only, runs (matches overlapping their own output), matches at every
// distance up to the window's, incompressible bytes.
func inputs(t testing.TB) map[string][]byte {
	r := rand.New(rand.NewPCG(7, 8))
	random := make([]byte, 200_000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	hex := make([]byte, 300_000)
	for i := range hex {
		hex[i] = "0123456789abcdef"[r.IntN(16)]
	}
	var text strings.Builder
	words := []string{"GET", "/api/v1/users", "200", "service", "span", "trace", "error", "timeout", "checkout", "\n"}
	for text.Len() < 500_000 {
		text.WriteString(words[r.IntN(len(words))])
		text.WriteByte(' ')
	}
	far := make([]byte, 0, 200_000)
	block := random[:40_000]
	for len(far) < 160_000 {
		far = append(far, block[:32_768]...) // repeats at the window's full distance
	}
	var short []byte
	for d := 1; d < 40; d++ {
		for range 20 {
			short = append(short, random[d:2*d]...) // a run of period d
		}
	}
	out := map[string][]byte{
		"empty":         {},
		"one byte":      {'x'},
		"run of zeros":  make([]byte, 100_000),
		"random":        random,
		"hex digits":    hex,
		"text":          []byte(text.String()),
		"window apart":  far,
		"short periods": short,
	}
	for _, name := range []string{"arc_traces", "arc_logs", "arc_metrics"} {
		src, err := os.ReadFile(filepath.Join("testdata", name+".gz"))
		require.NoError(t, err)
		data, err := reference(src)
		require.NoError(t, err)
		out[name] = data
	}
	return out
}

func TestGunzipDecodesWhatEveryLevelWrites(t *testing.T) {
	levels := []int{gzip.NoCompression, gzip.HuffmanOnly, gzip.BestSpeed, 2, 5, gzip.BestCompression, gzip.ConstantCompression}
	for name, data := range inputs(t) {
		for _, level := range levels {
			src := gzipped(t, data, level)
			got, err := inflate.Gunzip(nil, src, noLimit)
			require.NoError(t, err, "%s at level %d", name, level)
			assert.True(t, bytes.Equal(data, got), "%s at level %d: output differs", name, level)
		}
		// Go's own writer makes other choices of blocks and codes.
		var buf bytes.Buffer
		zw, _ := stdgzip.NewWriterLevel(&buf, stdgzip.BestSpeed)
		_, _ = zw.Write(data)
		require.NoError(t, zw.Close())
		got, err := inflate.Gunzip(nil, buf.Bytes(), noLimit)
		require.NoError(t, err, name)
		assert.True(t, bytes.Equal(data, got), "%s from compress/gzip: output differs", name)
	}
}

func TestGunzipFixedCodeBlocks(t *testing.T) {
	// A short input is written with the fixed code.
	for _, data := range [][]byte{[]byte("hello, hello, hello"), []byte("a"), bytes.Repeat([]byte("ab"), 40)} {
		var raw bytes.Buffer
		fw, err := flate.NewWriter(&raw, flate.BestCompression)
		require.NoError(t, err)
		_, _ = fw.Write(data)
		require.NoError(t, fw.Close())
		require.Equal(t, byte(1), raw.Bytes()[0]>>1&3, "the test wants a fixed-code block")
		got, err := inflate.Gunzip(nil, member(raw.Bytes(), data), noLimit)
		require.NoError(t, err)
		assert.Equal(t, data, got)
	}
}

// member frames a raw DEFLATE stream as a gzip member of data.
func member(deflated, data []byte) []byte {
	out := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}
	out = append(out, deflated...)
	out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(data))
	return binary.LittleEndian.AppendUint32(out, uint32(len(data)))
}

func TestGunzipMembersAndHeaders(t *testing.T) {
	a, b := []byte(strings.Repeat("first member ", 100)), []byte("second")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Name, zw.Comment, zw.Extra = "payload.msgpack", "written by a test", []byte{1, 2, 3}
	_, _ = zw.Write(a)
	require.NoError(t, zw.Close())
	buf.Write(gzipped(t, b, gzip.BestSpeed))
	got, err := inflate.Gunzip(nil, buf.Bytes(), noLimit)
	require.NoError(t, err)
	assert.Equal(t, append(append([]byte{}, a...), b...), got)

	// A header checksum, which Go's writers never write.
	withCRC := member(deflate(t, a), a)
	withCRC[3] = 1 << 1
	sum := crc32.ChecksumIEEE(withCRC[:10])
	withCRC = append(withCRC[:10], append(binary.LittleEndian.AppendUint16(nil, uint16(sum)), withCRC[10:]...)...)
	got, err = inflate.Gunzip(nil, withCRC, noLimit)
	require.NoError(t, err)
	assert.Equal(t, a, got)
	withCRC[10]++
	_, err = inflate.Gunzip(nil, withCRC, noLimit)
	assert.ErrorIs(t, err, inflate.ErrCorrupt)
}

func deflate(t testing.TB, data []byte) []byte {
	var raw bytes.Buffer
	fw, err := flate.NewWriter(&raw, flate.BestSpeed)
	require.NoError(t, err)
	_, _ = fw.Write(data)
	require.NoError(t, fw.Close())
	return raw.Bytes()
}

func TestGunzipRefuses(t *testing.T) {
	data := inputs(t)["arc_traces"]
	good := gzipped(t, data, gzip.BestSpeed)
	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0xff
		return b
	}
	cases := []struct {
		name  string
		src   []byte
		limit int
		want  error
	}{
		{"empty body", nil, noLimit, inflate.ErrTruncated},
		{"short header", good[:6], noLimit, inflate.ErrTruncated},
		{"not gzip", []byte("plain text, not a gzip stream at all"), noLimit, inflate.ErrCorrupt},
		{"cut inside the data", good[:len(good)/2], noLimit, inflate.ErrTruncated},
		{"cut inside the trailer", good[:len(good)-3], noLimit, inflate.ErrTruncated},
		{"wrong checksum", flip(len(good) - 6), noLimit, inflate.ErrChecksum},
		{"wrong size", flip(len(good) - 2), noLimit, inflate.ErrChecksum},
		{"trailing bytes that are no member", append(bytes.Clone(good), "junk after the member"...), noLimit, inflate.ErrCorrupt},
		{"a few trailing bytes", append(bytes.Clone(good), 0x1f, 0x8b), noLimit, inflate.ErrTruncated},
		{"over the limit", good, len(data) - 1, inflate.ErrTooLarge},
		{"reserved block type", member([]byte{0x07, 0, 0}, nil), noLimit, inflate.ErrCorrupt},
		{"stored length and complement differ", member([]byte{0x01, 5, 0, 5, 0, 'a', 'b', 'c', 'd', 'e'}, []byte("abcde")), noLimit, inflate.ErrCorrupt},
		{"stored block cut", member([]byte{0x01, 5, 0, 0xfa, 0xff, 'a', 'b'}, nil)[:17], noLimit, inflate.ErrTruncated},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := inflate.Gunzip(nil, c.src, c.limit)
			assert.ErrorIs(t, err, c.want)
			assert.True(t, got == nil, "no output with an error")
			_, refErr := reference(c.src)
			if c.want != inflate.ErrTooLarge {
				assert.Error(t, refErr, "compress/gzip accepts what Gunzip refuses")
			}
		})
	}
}

func TestGunzipLimitBoundsMemory(t *testing.T) {
	zeros := gzipped(t, make([]byte, 64<<20), gzip.BestCompression) // 64 MiB in ~64 KB
	got, err := inflate.Gunzip(nil, zeros, 1<<20)
	assert.ErrorIs(t, err, inflate.ErrTooLarge)
	assert.True(t, got == nil, "no output with an error")

	// A trailer may claim any size: a tiny stream claiming 4 GiB must not
	// make Gunzip allocate it.
	liar := gzipped(t, []byte("tiny"), gzip.BestSpeed)
	binary.LittleEndian.PutUint32(liar[len(liar)-4:], 1<<32-1)
	allocs := testing.AllocsPerRun(1, func() {
		_, err = inflate.Gunzip(nil, liar, noLimit)
	})
	assert.ErrorIs(t, err, inflate.ErrChecksum)
	assert.LessOrEqual(t, allocs, 4.0)

	// Exactly at the limit is fine.
	data := inputs(t)["text"]
	got, err = inflate.Gunzip(nil, gzipped(t, data, gzip.BestSpeed), len(data))
	require.NoError(t, err)
	assert.Equal(t, len(data), len(got))
}

// TestGunzipGrowsOnceToTheClaim: a stream that decodes past what its
// trailer's claim is trusted for at first grows its output to the claim
// at once. Doubling from there left buffers behind that added up to the
// output again (a 60 MiB body took 150 MiB).
func TestGunzipGrowsOnceToTheClaim(t *testing.T) {
	const size = 16 << 20
	src := gzipped(t, make([]byte, size), gzip.BestCompression) // about 16 KB
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, err := inflate.Gunzip(nil, src, 64<<20)
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	require.Len(t, got, size)
	first := inflate.OutputSize(src, 64<<20)
	assert.Less(t, first, size/16, "the claim is not trusted at first")
	assert.LessOrEqual(t, after.TotalAlloc-before.TotalAlloc, uint64(first+size+inflate.Margin+64<<10),
		"allocated the first buffer and the claim, nothing between")
}

func TestGunzipUsesTheBufferGiven(t *testing.T) {
	data := inputs(t)["arc_logs"]
	src := gzipped(t, data, gzip.BestSpeed)
	buf := make([]byte, 0, len(data)+4096)
	got, err := inflate.Gunzip(buf, src, noLimit)
	require.NoError(t, err)
	assert.Equal(t, data, got)
	assert.Same(t, &buf[:1][0], &got[:1][0], "decoded into the buffer given")
	if raceEnabled {
		return
	}
	allocs := testing.AllocsPerRun(20, func() {
		_, _ = inflate.Gunzip(buf, src, noLimit)
	})
	assert.Zero(t, allocs, "the decoder's tables are kept between streams")
}

// FuzzGunzip compares Gunzip with compress/gzip on streams compressed
// from the fuzzer's bytes (by klauspost's writer at every level, stored,
// Huffman only and constant among them, or Go's own), whole and then
// damaged at up to three places: both must decode the same bytes or both
// refuse. Each stream is also decoded under a limit below its size, which
// Gunzip must refuse without holding more.
func FuzzGunzip(f *testing.F) {
	for _, data := range [][]byte{[]byte("hello hello hello"), bytes.Repeat([]byte{0}, 1000), []byte("0123456789abcdef0123")} {
		f.Add(data, uint8(1), uint16(0), uint8(0), uint16(0), uint8(0))
		f.Add(data, uint8(11), uint16(3), uint8(0x40), uint16(7), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, level uint8, at uint16, xor uint8, at2 uint16, xor2 uint8) {
		var src []byte
		if lv := int(level % 13); lv < 12 {
			src = gzipped(t, data, lv-2) // -2 (Huffman only) to 9
		} else {
			var buf bytes.Buffer
			zw, err := stdgzip.NewWriterLevel(&buf, int(level>>4)%10)
			require.NoError(t, err)
			_, _ = zw.Write(data)
			require.NoError(t, zw.Close())
			src = buf.Bytes()
		}
		compare(t, src)
		if len(data) > 0 {
			got, err := inflate.Gunzip(nil, src, len(data)-1)
			require.ErrorIs(t, err, inflate.ErrTooLarge)
			require.Nil(t, got)
		}
		if xor == 0 && xor2 == 0 {
			return
		}
		src[int(at)%len(src)] ^= xor
		src[int(at2)%len(src)] ^= xor2
		if xor2 != 0 && xor2 == xor {
			// A third byte: the last one of the body, often the last
			// block's end.
			src[len(src)-9] ^= 0x5a
		}
		compare(t, src)
	})
}

// FuzzGunzipRaw feeds arbitrary bytes after a valid gzip header.
func FuzzGunzipRaw(f *testing.F) {
	f.Add([]byte{0x03, 0x00}) // an empty fixed-code block
	f.Add(deflate(f, []byte("seed seed seed seed")))
	// Blocks with their own codes, long codes and second-level tables
	// among them, for the fuzzer to damage.
	for _, name := range []string{"arc_traces", "arc_logs", "arc_metrics"} {
		src, err := os.ReadFile(filepath.Join("testdata", name+".gz"))
		require.NoError(f, err)
		data, err := reference(src)
		require.NoError(f, err)
		f.Add(deflate(f, data[:4096]))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		compare(t, member(raw, nil))
		compare(t, append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}, raw...))
	})
}

// compareLimit is the limit compare decodes under: far above what the
// fuzzers' streams decode to, and low enough that a damaged trailer's
// claim (which Gunzip grows its output to once a stream has decoded past
// the ratio it trusts) does not allocate a gigabyte per input.
const compareLimit = 16 << 20

// compare decodes src with compress/gzip and with Gunzip, under
// compareLimit and under limits at and below the reference's size.
func compare(t *testing.T, src []byte) {
	want, refErr := reference(src)
	got, err := inflate.Gunzip(nil, src, compareLimit)
	if refErr != nil {
		require.Error(t, err, "compress/gzip refuses (%v), Gunzip decodes %d bytes", refErr, len(got))
		return
	}
	if len(want) > compareLimit {
		require.ErrorIs(t, err, inflate.ErrTooLarge)
		return
	}
	require.NoError(t, err, "compress/gzip decodes %d bytes", len(want))
	require.True(t, bytes.Equal(want, got), "outputs differ")
	got, err = inflate.Gunzip(nil, src, len(want))
	require.NoError(t, err, "at a limit of its size")
	require.True(t, bytes.Equal(want, got), "outputs differ at a limit of its size")
	if len(want) > 0 {
		got, err = inflate.Gunzip(nil, src, len(want)/2)
		require.ErrorIs(t, err, inflate.ErrTooLarge)
		require.Nil(t, got)
	}
}
